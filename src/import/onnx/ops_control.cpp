// ONNX's operators: If, Loop, Scan, sequences.
#include "registry.hpp"

namespace ember::onnx {

void register_control_ops(Registry&) {}

}  // namespace ember::onnx
