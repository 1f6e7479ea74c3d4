// Type and shape inference over Ember's ONNX IR, Ember's own (libonnx's InferShapes is not on the
// load path: it is third-party code that this project does not fuzz). Symbolic dimensions stay
// symbolic: an input declared [batch, sequence] gives a MatMul output [batch, sequence, 384], and
// a Reshape whose shape is computed from Shape / Gather / Concat keeps the symbols, because small
// integer values (shapes, axes) are tracked element by element. What a rule cannot tell is
// unknown (rank, dims or element type), never guessed.
#pragma once

#include <map>
#include <string>

#include "ir.hpp"

namespace ember::onnx {

/// ValueInfo's element type number for an Ember dtype (FLOAT 1, INT64 7, ...).
int64_t onnx_type_of(DType dtype);

/// The type of every value `g` defines or reads (inputs, initialisers, node outputs, and the
/// names of `outer`: an enclosing graph's types), keyed by name; `opset` is the default
/// domain's version. ValueInfo::elem_type is 0 and has_shape false where unknown.
std::map<std::string, ValueInfo> infer_types(const Graph& g, int64_t opset,
                                             const std::map<std::string, ValueInfo>& outer = {});

/// "[batch, 3, ?, 224]", "FLOAT" style pieces for messages and listings: the shape part.
std::string shape_text(const ValueInfo& v);

}  // namespace ember::onnx
