// Request bodies to tensors and tensors to response bodies, for the server's two encodings:
// JSON ({"inputs": {name: nested arrays}}) and raw bytes (one input, little-endian, row-major).
// Every problem with a body is a BadRequest with the HTTP status and a message naming the input.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ember/serve/serve.hpp"

namespace ember::serve::detail {

struct BadRequest {
  int status = 400;
  std::string message;
};

/// Inputs by name on the Cpu, each [n, example...]; n is the same for all (returned in `n`).
using Inputs = std::map<std::string, DynTensor>;

/// {"inputs": {"name": [[...], ...]}}: every input of `specs`, numbers only, rectangular,
/// [n, example...] with the example shape of its spec (-1 sizes free). Throws BadRequest.
Inputs parse_json(std::string_view body, const std::vector<TensorSpec>& specs, int64_t* n);

/// Raw bytes of the model's one input: `shape` is the X-Shape header ("2,1,28,28"; empty: n
/// from the body's length when the example shape is fixed), `dtype` the X-Dtype header (empty
/// or the input's dtype name). Throws BadRequest.
Inputs parse_raw(std::string_view body, const std::string& shape, const std::string& dtype,
                 const std::vector<TensorSpec>& specs, int64_t* n);

/// {"outputs": {"name": [[...]]}}.
std::string to_json(const std::map<std::string, DynTensor>& outputs);

/// "2,1,28,28".
std::string shape_header(const Shape& shape);

/// {"error": message}.
std::string error_json(const std::string& message);

}  // namespace ember::serve::detail
