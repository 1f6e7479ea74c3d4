// ONNX's operators: shapes, slicing, gather/scatter.
#include "registry.hpp"

namespace ember::onnx {

void register_shape_ops(Registry&) {}

}  // namespace ember::onnx
