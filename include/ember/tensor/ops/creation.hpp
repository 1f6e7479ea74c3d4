// Creation ops on the rank-erased tensor. Tensor<D, K> has typed statics over these.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/generator.hpp"

namespace ember {

DynTensor empty(const Shape& shape, DType dtype, Device device = default_device());
DynTensor zeros(const Shape& shape, DType dtype, Device device = default_device());
DynTensor ones(const Shape& shape, DType dtype, Device device = default_device());
DynTensor full(const Shape& shape, const Scalar& value, DType dtype,
               Device device = default_device());
/// [start, end) in steps of `step`, as torch.arange.
DynTensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype,
                 Device device = default_device());
DynTensor linspace(double start, double end, int64_t steps, DType dtype,
                   Device device = default_device());
/// n x m identity (m = n when negative).
DynTensor eye(int64_t n, int64_t m, DType dtype, Device device = default_device());

/// Uniform on [low, high).
DynTensor rand(const Shape& shape, DType dtype, Device device = default_device(),
               Generator* gen = nullptr, double low = 0.0, double high = 1.0);
DynTensor randn(const Shape& shape, DType dtype, Device device = default_device(),
                Generator* gen = nullptr, double mean = 0.0, double std = 1.0);
/// Integers uniform on [low, high).
DynTensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype,
                  Device device = default_device(), Generator* gen = nullptr);
/// 1 with probability p, else 0, in `dtype`.
DynTensor bernoulli(const Shape& shape, double p, DType dtype, Device device = default_device(),
                    Generator* gen = nullptr);
/// 1 with probability probs[i] (a Float tensor in [0, 1]).
DynTensor bernoulli(const DynTensor& probs, Generator* gen = nullptr);

DynTensor empty_like(const DynTensor& x);
DynTensor zeros_like(const DynTensor& x);
DynTensor ones_like(const DynTensor& x);
DynTensor full_like(const DynTensor& x, const Scalar& value);
DynTensor rand_like(const DynTensor& x, Generator* gen = nullptr);
DynTensor randn_like(const DynTensor& x, Generator* gen = nullptr);

DynTensor from_data(const TensorData& data, Device device = default_device());
/// A tensor sharing nothing with `x`, with the same values (torch.clone).
DynTensor clone(const DynTensor& x);
/// Moves to a device (no copy when already there).
DynTensor to_device(const DynTensor& x, Device device);
/// Converts the element type (no copy when already `dtype`).
DynTensor cast(const DynTensor& x, DType dtype);

}  // namespace ember
