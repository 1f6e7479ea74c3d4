// Initialisers with torch.nn.init's semantics. Ember has no in-place mutation, so each returns a
// new tensor of the given shape, dtype and device, drawn from `gen` (the global generator when
// null): `auto w = nn::init::kaiming_uniform({256, 784}, DType::f32, dev, &gen, std::sqrt(5.0));`
#pragma once

#include <cstdint>
#include <optional>

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/generator.hpp"

namespace ember::nn::init {

/// Which fan Kaiming initialisation preserves: the forward pass's variance (FanIn) or the
/// backward pass's (FanOut).
enum class FanMode : uint8_t { FanIn, FanOut };

/// torch.nn.init.calculate_gain's nonlinearities.
enum class Nonlinearity : uint8_t {
  Linear,
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose1d,
  ConvTranspose2d,
  ConvTranspose3d,
  Sigmoid,
  Tanh,
  Relu,
  LeakyRelu,
  Selu
};

/// The recommended gain: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu),
/// sqrt(2 / (1 + slope^2)) (leaky_relu; `param` is the slope, 0.01 when absent), 3/4 (selu).
double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param = std::nullopt);

/// fan_in = shape[1] * receptive field, fan_out = shape[0] * receptive field (the product of
/// dims 2...), as torch.nn.init._calculate_fan_in_and_fan_out; shapes of rank < 2 are an error.
struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};
Fans calculate_fan_in_and_fan_out(const Shape& shape);

DynTensor constant(const Shape& shape, double value, DType dtype = DType::f32,
                   Device device = default_device());
DynTensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = default_device());
DynTensor ones(const Shape& shape, DType dtype = DType::f32, Device device = default_device());
/// Uniform on [a, b).
DynTensor uniform(const Shape& shape, DType dtype = DType::f32, Device device = default_device(),
                  Generator* gen = nullptr, double a = 0.0, double b = 1.0);
DynTensor normal(const Shape& shape, DType dtype = DType::f32, Device device = default_device(),
                 Generator* gen = nullptr, double mean = 0.0, double std = 1.0);
/// Uniform on [-bound, bound), bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
/// a) (He et al. 2015). nn.Linear and nn.Conv use a = sqrt(5).
DynTensor kaiming_uniform(const Shape& shape, DType dtype = DType::f32,
                          Device device = default_device(), Generator* gen = nullptr,
                          double a = 0.0, FanMode mode = FanMode::FanIn,
                          Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);
/// Normal with std = gain / sqrt(fan).
DynTensor kaiming_normal(const Shape& shape, DType dtype = DType::f32,
                         Device device = default_device(), Generator* gen = nullptr, double a = 0.0,
                         FanMode mode = FanMode::FanIn,
                         Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);
/// Uniform on [-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio).
DynTensor xavier_uniform(const Shape& shape, DType dtype = DType::f32,
                         Device device = default_device(), Generator* gen = nullptr,
                         double gain = 1.0);
/// Normal with std = gain * sqrt(2 / (fan_in + fan_out)).
DynTensor xavier_normal(const Shape& shape, DType dtype = DType::f32,
                        Device device = default_device(), Generator* gen = nullptr,
                        double gain = 1.0);
/// A (semi-)orthogonal matrix viewed as `shape` (rank >= 2; the trailing dims are flattened):
/// rows orthonormal when shape[0] <= the rest, columns otherwise, times `gain`. QR of a normal
/// draw with R's diagonal made positive, as PyTorch (Saxe et al. 2013); computed in float64.
DynTensor orthogonal(const Shape& shape, DType dtype = DType::f32, Device device = default_device(),
                     Generator* gen = nullptr, double gain = 1.0);

}  // namespace ember::nn::init
