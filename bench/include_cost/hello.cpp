// The floor: a file with <iostream> and nothing of either framework.
#include <iostream>

int main() { std::cout << "hello\n"; }
