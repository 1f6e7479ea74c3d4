#include "ember/nn/dropout.hpp"

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {

DynTensor dropout(const DynTensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[dropout] p must be in [0, 1], got ", p);
  EMBER_CHECK(is_floating(x.dtype()), "[dropout] needs a Float tensor, got ", x.dtype());
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);  // every element dropped (keeps the graph, as PyTorch)
  const DynTensor keep = bernoulli(x.shape(), 1.0 - p, x.dtype(), x.device(), gen);
  return mul(x, mul(keep, 1.0 / (1.0 - p)));
}

Dropout::Dropout(double p_in) : p(p_in) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[Dropout] p must be in [0, 1], got ", p);
}

std::string Dropout::to_json() const { return detail::JsonWriter().field("p", p).str(); }

Dropout Dropout::from_json(const std::string& json) {
  return Dropout(detail::JsonReader(json, "Dropout").number("p", 0.5));
}

}  // namespace ember::nn
