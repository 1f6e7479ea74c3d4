// The real `ember` command line (tools/ember/main.cpp) with its main() renamed, so that the cli
// fuzz target calls the very entry point a user runs.
#define main ember_cli_main
#include "../../tools/ember/main.cpp"  // NOLINT(bugprone-suspicious-include)
