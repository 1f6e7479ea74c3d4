// ONNX's text operators on integer token ids: TfIdfVectorizer.
#include "registry.hpp"

namespace ember::onnx {

void register_text_ops(Registry&) {}

}  // namespace ember::onnx
