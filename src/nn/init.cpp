// Initialisers: the formulas of torch/nn/init.py, drawing from Ember's Philox generators.
#include "ember/nn/init.hpp"

#include <cmath>
#include <vector>

#include "ember/tensor/ops/creation.hpp"

namespace ember::nn::init {
namespace {

const char* nonlinearity_name(Nonlinearity n) {
  switch (n) {
    case Nonlinearity::Linear:
      return "linear";
    case Nonlinearity::Conv1d:
      return "conv1d";
    case Nonlinearity::Conv2d:
      return "conv2d";
    case Nonlinearity::Conv3d:
      return "conv3d";
    case Nonlinearity::ConvTranspose1d:
      return "conv_transpose1d";
    case Nonlinearity::ConvTranspose2d:
      return "conv_transpose2d";
    case Nonlinearity::ConvTranspose3d:
      return "conv_transpose3d";
    case Nonlinearity::Sigmoid:
      return "sigmoid";
    case Nonlinearity::Tanh:
      return "tanh";
    case Nonlinearity::Relu:
      return "relu";
    case Nonlinearity::LeakyRelu:
      return "leaky_relu";
    case Nonlinearity::Selu:
      return "selu";
  }
  return "?";
}

void check_float(DType dtype, const char* op) {
  EMBER_CHECK(is_floating(dtype), "[init::", op, "] needs a floating dtype, got ", dtype);
}

double fan_of(const Shape& shape, FanMode mode) {
  const Fans f = calculate_fan_in_and_fan_out(shape);
  return static_cast<double>(mode == FanMode::FanIn ? f.fan_in : f.fan_out);
}

/// Householder QR of the row-major m x n matrix `a` (m >= n): the thin Q (m x n, row-major)
/// with its columns' signs chosen so that R's diagonal is positive, which makes Q unique.
std::vector<double> thin_q(std::vector<double> a, int64_t m, int64_t n) {
  auto at = [&](std::vector<double>& x, int64_t i, int64_t j) -> double& {
    return x[static_cast<size_t>(i * n + j)];
  };
  std::vector<std::vector<double>> reflectors;
  std::vector<double> r_diag(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> v(static_cast<size_t>(m - k));
    double norm2 = 0.0;
    for (int64_t i = k; i < m; ++i) {
      v[static_cast<size_t>(i - k)] = at(a, i, k);
      norm2 += at(a, i, k) * at(a, i, k);
    }
    const double norm = std::sqrt(norm2);
    const double alpha = v[0] > 0 ? -norm : norm;  // the sign that avoids cancellation
    v[0] -= alpha;
    double vnorm2 = 0.0;
    for (double x : v) vnorm2 += x * x;
    r_diag[static_cast<size_t>(k)] = alpha;
    if (vnorm2 > 0.0) {
      for (double& x : v) x /= std::sqrt(vnorm2);
      for (int64_t j = k; j < n; ++j) {  // A[k:, k:] -= 2 v (v^T A[k:, k:])
        double dot = 0.0;
        for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(a, i, j);
        for (int64_t i = k; i < m; ++i) at(a, i, j) -= 2.0 * v[static_cast<size_t>(i - k)] * dot;
      }
    } else {
      r_diag[static_cast<size_t>(k)] = at(a, k, k);  // nothing to reflect: R_kk is the entry
    }
    reflectors.push_back(std::move(v));
  }
  // Q = H_0 ... H_{n-1} I[:, :n], applied from the last reflector.
  std::vector<double> q(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < n; ++i) at(q, i, i) = 1.0;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[static_cast<size_t>(k)];
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(q, i, j);
      for (int64_t i = k; i < m; ++i) at(q, i, j) -= 2.0 * v[static_cast<size_t>(i - k)] * dot;
    }
  }
  // torch: q *= sign(diag(r)) (a zero diagonal entry zeroes its column there too).
  for (int64_t j = 0; j < n; ++j) {
    const double d = r_diag[static_cast<size_t>(j)];
    const double s = d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
    for (int64_t i = 0; i < m; ++i) at(q, i, j) *= s;
  }
  return q;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1d:
    case Nonlinearity::Conv2d:
    case Nonlinearity::Conv3d:
    case Nonlinearity::ConvTranspose1d:
    case Nonlinearity::ConvTranspose2d:
    case Nonlinearity::ConvTranspose3d:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::Relu:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyRelu: {
      const double slope = param.value_or(0.01);
      return std::sqrt(2.0 / (1.0 + slope * slope));
    }
    case Nonlinearity::Selu:
      return 3.0 / 4.0;  // keeps SELU's self-normalisation in practice (PyTorch's value)
  }
  EMBER_FAIL("[init::calculate_gain] unsupported nonlinearity ", nonlinearity_name(nonlinearity));
}

Fans calculate_fan_in_and_fan_out(const Shape& shape) {
  EMBER_CHECK(shape.rank() >= 2,
              "[init] fan in and fan out cannot be computed for a tensor of fewer than 2 dims, "
              "got shape ",
              shape);
  int64_t receptive = 1;
  for (int d = 2; d < shape.rank(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

DynTensor constant(const Shape& shape, double value, DType dtype, Device device) {
  return full(shape, value, dtype, device);
}

DynTensor zeros(const Shape& shape, DType dtype, Device device) {
  return ember::zeros(shape, dtype, device);
}

DynTensor ones(const Shape& shape, DType dtype, Device device) {
  return ember::ones(shape, dtype, device);
}

DynTensor uniform(const Shape& shape, DType dtype, Device device, Generator* gen, double a,
                  double b) {
  check_float(dtype, "uniform");
  EMBER_CHECK(a <= b, "[init::uniform] needs a <= b, got a = ", a, ", b = ", b);
  return rand(shape, dtype, device, gen, a, b);
}

DynTensor normal(const Shape& shape, DType dtype, Device device, Generator* gen, double mean,
                 double std) {
  check_float(dtype, "normal");
  EMBER_CHECK(std >= 0.0, "[init::normal] std must be non-negative, got ", std);
  return randn(shape, dtype, device, gen, mean, std);
}

DynTensor kaiming_uniform(const Shape& shape, DType dtype, Device device, Generator* gen, double a,
                          FanMode mode, Nonlinearity nonlinearity) {
  check_float(dtype, "kaiming_uniform");
  if (shape.numel() == 0) return empty(shape, dtype, device);  // PyTorch: a no-op
  const double sd = calculate_gain(nonlinearity, a) / std::sqrt(fan_of(shape, mode));
  const double bound = std::sqrt(3.0) * sd;
  return rand(shape, dtype, device, gen, -bound, bound);
}

DynTensor kaiming_normal(const Shape& shape, DType dtype, Device device, Generator* gen, double a,
                         FanMode mode, Nonlinearity nonlinearity) {
  check_float(dtype, "kaiming_normal");
  if (shape.numel() == 0) return empty(shape, dtype, device);
  const double sd = calculate_gain(nonlinearity, a) / std::sqrt(fan_of(shape, mode));
  return randn(shape, dtype, device, gen, 0.0, sd);
}

DynTensor xavier_uniform(const Shape& shape, DType dtype, Device device, Generator* gen,
                         double gain) {
  check_float(dtype, "xavier_uniform");
  const Fans f = calculate_fan_in_and_fan_out(shape);
  const double bound =
      gain * std::sqrt(6.0 / static_cast<double>(f.fan_in + f.fan_out));  // sqrt(3) * std
  return rand(shape, dtype, device, gen, -bound, bound);
}

DynTensor xavier_normal(const Shape& shape, DType dtype, Device device, Generator* gen,
                        double gain) {
  check_float(dtype, "xavier_normal");
  const Fans f = calculate_fan_in_and_fan_out(shape);
  const double sd = gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out));
  return randn(shape, dtype, device, gen, 0.0, sd);
}

DynTensor orthogonal(const Shape& shape, DType dtype, Device device, Generator* gen, double gain) {
  check_float(dtype, "orthogonal");
  EMBER_CHECK(shape.rank() >= 2, "[init::orthogonal] needs a shape of 2 or more dims, got ", shape);
  if (shape.numel() == 0) return empty(shape, dtype, device);
  const int64_t rows = shape[0], cols = shape.numel() / rows;
  // Drawn as PyTorch draws it: a [rows, cols] normal matrix, transposed when wide.
  const std::vector<double> drawn =
      randn({rows, cols}, DType::f64, Device::cpu(), gen).to_vector<double>();
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  std::vector<double> a(drawn.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const size_t src = static_cast<size_t>(i * cols + j);
      a[wide ? static_cast<size_t>(j * rows + i) : src] = drawn[src];
    }
  }
  const std::vector<double> q = thin_q(std::move(a), m, n);  // m x n
  std::vector<double> out(drawn.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const double v = wide ? q[static_cast<size_t>(j * n + i)] : q[static_cast<size_t>(i * n + j)];
      out[static_cast<size_t>(i * cols + j)] = gain * v;
    }
  }
  return to_device(cast(from_data(TensorData::from(out, shape)), dtype), device);
}

}  // namespace ember::nn::init
