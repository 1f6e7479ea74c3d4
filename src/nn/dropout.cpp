#include "ember/nn/dropout.hpp"

#include <cmath>

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

DynTensor gaussian_noise(const DynTensor& x, double std, bool training, Generator* gen) {
  EMBER_CHECK(std::isfinite(std) && std >= 0.0,
              "[gaussian_noise] std must be finite and at least 0, got ", std);
  EMBER_CHECK(is_floating(x.dtype()), "[gaussian_noise] needs a Float tensor, got ", x.dtype());
  if (!training || std == 0.0) return x;
  return add(x, mul(randn(x.shape(), x.dtype(), x.device(), gen), std));
}

GaussianNoise::GaussianNoise(double std_in) : std(std_in) {
  EMBER_CHECK(std::isfinite(std) && std >= 0.0,
              "[GaussianNoise] std must be finite and at least 0, got ", std);
}

std::string GaussianNoise::to_json() const { return detail::JsonWriter().field("std", std).str(); }

GaussianNoise GaussianNoise::from_json(const std::string& json) {
  return GaussianNoise(detail::JsonReader(json, "GaussianNoise").number("std", 0.0));
}

}  // namespace ember::nn
