// ONNX's operators: reductions, arg/top-k, scans.
#include "registry.hpp"

namespace ember::onnx {

void register_reduce_ops(Registry&) {}

}  // namespace ember::onnx
