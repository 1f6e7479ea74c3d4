// Normalisation layers (torch.nn names, parameters and defaults): LayerNorm, RMSNorm,
// GroupNorm, BatchNorm1d/2d, InstanceNorm1d/2d, and their functional forms. Composites of
// primitive ops: their gradients come from autodiff.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::nn {

/// Normalises over the last normalized_shape.size() dims; weight and bias (of that shape) may
/// be undefined.
DynTensor layer_norm(const DynTensor& x, const std::vector<int64_t>& normalized_shape,
                     const DynTensor& weight = {}, const DynTensor& bias = {}, double eps = 1e-5);
/// x / sqrt(mean(x^2) + eps) * weight over the last dims; eps defaults to the dtype's epsilon.
DynTensor rms_norm(const DynTensor& x, const std::vector<int64_t>& normalized_shape,
                   const DynTensor& weight = {}, std::optional<double> eps = std::nullopt);
/// x [N, C, *] normalised per sample over groups of C / num_groups channels.
DynTensor group_norm(const DynTensor& x, int64_t num_groups, const DynTensor& weight = {},
                     const DynTensor& bias = {}, double eps = 1e-5);
/// x [N, C, *] normalised per sample and channel over the spatial dims.
DynTensor instance_norm(const DynTensor& x, const DynTensor& weight = {},
                        const DynTensor& bias = {}, double eps = 1e-5);

/// Batch normalisation of x [N, C, *] per channel. In training the batch's statistics are used
/// and, when running_mean/var are given, updated copies are returned (momentum as PyTorch: new =
/// (1 - m) old + m batch, with the unbiased variance); otherwise the running ones are used.
struct BatchNormOutput {
  DynTensor y;
  DynTensor running_mean;  // undefined unless updated
  DynTensor running_var;
};
BatchNormOutput batch_norm(const DynTensor& x, const DynTensor& running_mean,
                           const DynTensor& running_var, const DynTensor& weight,
                           const DynTensor& bias, bool training, double momentum = 0.1,
                           double eps = 1e-5);

struct LayerNormConfig {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool has_bias = true;
  DType dtype = DType::f32;

  explicit LayerNormConfig(std::vector<int64_t> shape) : normalized_shape(std::move(shape)) {}
  LayerNormConfig& epsilon(double e) {
    eps = e;
    return *this;
  }
  LayerNormConfig& affine(bool on) {
    elementwise_affine = on;
    return *this;
  }
  LayerNormConfig& bias(bool on) {
    has_bias = on;
    return *this;
  }
  std::string to_json() const;
  static LayerNormConfig from_json(const std::string& json);
};

class LayerNorm {
 public:
  std::optional<Param<1>> weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps = 1e-5;
  EMBER_MODULE(LayerNorm, weight, bias)

  LayerNorm() = default;
  /// Weight ones, bias zeros. Affine parameters need a 1-D normalized shape (the common case,
  /// [d_model]); several dims are supported with affine(false).
  explicit LayerNorm(const LayerNormConfig& config, Device device = default_device());
  explicit LayerNorm(int64_t dim, Device device = default_device())
      : LayerNorm(LayerNormConfig({dim}), device) {}
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

struct RMSNormConfig {
  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;  // default: the dtype's epsilon
  bool elementwise_affine = true;
  DType dtype = DType::f32;

  explicit RMSNormConfig(std::vector<int64_t> shape) : normalized_shape(std::move(shape)) {}
  RMSNormConfig& epsilon(double e) {
    eps = e;
    return *this;
  }
  RMSNormConfig& affine(bool on) {
    elementwise_affine = on;
    return *this;
  }
  std::string to_json() const;
  static RMSNormConfig from_json(const std::string& json);
};

struct GroupNormConfig {
  int64_t num_groups;
  int64_t num_channels;
  double eps = 1e-5;
  bool has_affine = true;
  DType dtype = DType::f32;

  GroupNormConfig(int64_t groups, int64_t channels) : num_groups(groups), num_channels(channels) {}
  GroupNormConfig& epsilon(double e) {
    eps = e;
    return *this;
  }
  GroupNormConfig& affine(bool on) {
    has_affine = on;
    return *this;
  }
  std::string to_json() const;
  static GroupNormConfig from_json(const std::string& json);
};

struct InstanceNormConfig {
  int64_t num_features;
  double eps = 1e-5;
  bool has_affine = false;  // PyTorch's default for InstanceNorm
  DType dtype = DType::f32;

  explicit InstanceNormConfig(int64_t features) : num_features(features) {}
  InstanceNormConfig& epsilon(double e) {
    eps = e;
    return *this;
  }
  InstanceNormConfig& affine(bool on) {
    has_affine = on;
    return *this;
  }
  std::string to_json() const;
  static InstanceNormConfig from_json(const std::string& json);
};

class RMSNorm {
 public:
  std::optional<Param<1>> weight;
  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  EMBER_MODULE(RMSNorm, weight)

  RMSNorm() = default;
  explicit RMSNorm(const RMSNormConfig& config, Device device = default_device());
  explicit RMSNorm(int64_t dim, std::optional<double> eps = std::nullopt, bool affine = true,
                   Device device = default_device(), DType dtype = DType::f32);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return rms_norm(x, normalized_shape, weight ? weight->dyn() : DynTensor(), eps);
  }
};

class GroupNorm {
 public:
  std::optional<Param<1>> weight, bias;
  int64_t num_groups = 1;
  double eps = 1e-5;
  EMBER_MODULE(GroupNorm, weight, bias)

  GroupNorm() = default;
  explicit GroupNorm(const GroupNormConfig& config, Device device = default_device());
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            Device device = default_device(), DType dtype = DType::f32);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return group_norm(x, num_groups, weight ? weight->dyn() : DynTensor(),
                      bias ? bias->dyn() : DynTensor(), eps);
  }
};

struct BatchNormConfig {
  int64_t num_features;
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt: cumulative moving average (PyTorch's None)
  bool has_affine = true;
  bool track_running_stats = true;
  DType dtype = DType::f32;

  explicit BatchNormConfig(int64_t features) : num_features(features) {}
  BatchNormConfig& epsilon(double e) {
    eps = e;
    return *this;
  }
  /// std::nullopt: the running statistics are the cumulative average over all batches seen
  /// (factor 1 / num_batches_tracked), as PyTorch's momentum=None.
  BatchNormConfig& with_momentum(std::optional<double> m) {
    momentum = m;
    return *this;
  }
  BatchNormConfig& affine(bool on) {
    has_affine = on;
    return *this;
  }
  BatchNormConfig& running_stats(bool on) {
    track_running_stats = on;
    return *this;
  }
  std::string to_json() const;
  static BatchNormConfig from_json(const std::string& json);
};

/// BatchNorm1d ([N, C] or [N, C, L]) and BatchNorm2d ([N, C, H, W]): one implementation, the
/// rank checked per alias. forward() updates the running statistics in training mode, so they
/// are mutable: a model's forward stays const.
class BatchNorm {
 public:
  std::optional<Param<1>> weight, bias;
  mutable std::optional<Buffer<1>> running_mean, running_var;
  mutable std::optional<Buffer<0, Int>> num_batches_tracked;
  ModeFlag mode;
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt: cumulative moving average
  int min_rank = 2, max_rank = 4;
  const char* name = "BatchNorm";
  EMBER_MODULE(BatchNorm, weight, bias, running_mean, running_var, num_batches_tracked, mode)

  BatchNorm() = default;
  BatchNorm(const BatchNormConfig& config, Device device, int min_rank, int max_rank,
            const char* name);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

struct BatchNorm1d : BatchNorm {
  EMBER_MODULE(BatchNorm1d, weight, bias, running_mean, running_var, num_batches_tracked, mode)
  explicit BatchNorm1d(const BatchNormConfig& config, Device device = default_device())
      : BatchNorm(config, device, 2, 3, "BatchNorm1d") {}
  explicit BatchNorm1d(int64_t features, Device device = default_device())
      : BatchNorm1d(BatchNormConfig(features), device) {}
};
struct BatchNorm2d : BatchNorm {
  EMBER_MODULE(BatchNorm2d, weight, bias, running_mean, running_var, num_batches_tracked, mode)
  explicit BatchNorm2d(const BatchNormConfig& config, Device device = default_device())
      : BatchNorm(config, device, 4, 4, "BatchNorm2d") {}
  explicit BatchNorm2d(int64_t features, Device device = default_device())
      : BatchNorm2d(BatchNormConfig(features), device) {}
};

/// InstanceNorm1d/2d: PyTorch's defaults (no affine parameters, no running statistics).
class InstanceNorm {
 public:
  std::optional<Param<1>> weight, bias;
  double eps = 1e-5;
  EMBER_MODULE(InstanceNorm, weight, bias)

  explicit InstanceNorm(const InstanceNormConfig& config, Device device = default_device())
      : InstanceNorm(config.num_features, config.eps, config.has_affine, device, config.dtype) {}
  explicit InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = false,
                        Device device = default_device(), DType dtype = DType::f32);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return instance_norm(x, weight ? weight->dyn() : DynTensor(), bias ? bias->dyn() : DynTensor(),
                         eps);
  }
};
using InstanceNorm1d = InstanceNorm;
using InstanceNorm2d = InstanceNorm;

/// Local response normalisation across channels (torch.nn.functional.local_response_norm):
/// x / (k + alpha / size * sum of x^2 over the `size` channels around c)^beta, x [N, C, *].
DynTensor local_response_norm(const DynTensor& x, int64_t size, double alpha = 1e-4,
                              double beta = 0.75, double k = 1.0);

/// torch.nn.LocalResponseNorm (AlexNet's); no parameters, its own config.
struct LocalResponseNorm {
  int64_t size = 5;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
  EMBER_MODULE(LocalResponseNorm)
  std::string to_json() const;
  static LocalResponseNorm from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return local_response_norm(x, size, alpha, beta, k);
  }
};

}  // namespace ember::nn
