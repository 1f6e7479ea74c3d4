// ONNX's operators: conv, pools, norms, Gemm, RNNs.
#include "registry.hpp"

namespace ember::onnx {

void register_nn_ops(Registry&) {}

}  // namespace ember::onnx
