// Fuzz target: any bytes as a request body of `ember serve` (src/serve/codec.hpp). The first
// byte picks the endpoint: JSON for a model of one float input [n, 2, 3], JSON for a model of a
// float and an integer input with a free size, or raw bytes whose first line is the X-Shape
// header. Accepted bodies are encoded back as an answer. Only a BadRequest (the 4xx the server
// sends) or an ember::Error may come out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "codec.hpp"

namespace {

using ember::DType;
using ember::serve::TensorSpec;

const std::vector<TensorSpec> kOneInput{{"x", DType::f32, {2, 3}}};
const std::vector<TensorSpec> kTwoInputs{{"x", DType::f32, {3}}, {"ids", DType::i64, {-1}}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace codec = ember::serve::detail;
  try {
    int64_t n = 0;
    codec::Inputs inputs;
    switch (data[0] % 3) {
      case 0:
        inputs = codec::parse_json(body, kOneInput, &n);
        break;
      case 1:
        inputs = codec::parse_json(body, kTwoInputs, &n);
        break;
      default: {
        const size_t line = body.find('\n');
        const std::string shape(body.substr(0, line == std::string_view::npos ? 0 : line));
        const std::string_view raw = line == std::string_view::npos ? body : body.substr(line + 1);
        inputs = codec::parse_raw(raw, shape, data[0] % 2 ? "float32" : "", kOneInput, &n);
      }
    }
    if (n < 1) __builtin_trap();  // an accepted body has a batch of one or more
    (void)codec::to_json(inputs);
  } catch (const codec::BadRequest&) {
    // Refused cleanly, as a 4xx: what the target checks for.
  } catch (const ember::Error&) {
  }
  return 0;
}
