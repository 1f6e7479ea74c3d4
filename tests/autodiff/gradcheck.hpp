// Finite-difference gradient checks, as PyTorch's gradcheck and gradgradcheck: the analytic
// gradient of sum(f(x) * v), for a fixed random v, against central differences in float64,
// element by element, with every input made in a chosen memory layout.
#pragma once

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/test_util.hpp"

namespace ember::test {

/// PyTorch's gradcheck defaults.
struct GradTol {
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
};

/// One float64 input: its shape, the layout it is made in and its row-major values.
struct GradInput {
  Shape shape;
  Layout layout = Layout::Contiguous;
  std::vector<double> values;
};

using GradFn = std::function<DynTensor(const std::vector<DynTensor>&)>;

/// A float64 tensor showing `values` (row-major) through in.shape, laid out as in.layout:
/// transposed (first and last dims swapped in memory) or strided (every other element of a
/// wider buffer, from offset 1). Expanded layouts alias elements, so they cannot be perturbed
/// one at a time; rank < 2 makes Transposed strided instead.
inline DynTensor materialize(const GradInput& in, const std::vector<double>& values) {
  const Shape& shape = in.shape;
  const int r = shape.rank();
  EMBER_CHECK(in.layout != Layout::Expanded, "[gradcheck] expanded inputs alias their elements");
  Layout layout = in.layout;
  if (r < 2 && layout == Layout::Transposed) layout = Layout::Strided;
  if (r == 0 || layout == Layout::Contiguous) {
    return from_data(TensorData::from(values, shape));
  }
  const Host logical{shape, values};
  if (layout == Layout::Transposed) {
    Shape mem_shape = shape;
    std::swap(mem_shape[0], mem_shape[r - 1]);
    Host mem{mem_shape, std::vector<double>(values.size())};
    for (int64_t i = 0; i < logical.numel(); ++i) {
      std::vector<int64_t> idx = logical.index(i);
      std::swap(idx[0], idx[static_cast<size_t>(r - 1)]);
      mem.v[static_cast<size_t>(mem.offset(idx))] = values[static_cast<size_t>(i)];
    }
    return transpose(from_data(TensorData::from(mem.v, mem_shape)), 0, r - 1);
  }
  Shape wide = shape;
  wide[r - 1] = 2 * shape[r - 1] + 1;
  Host mem{wide, std::vector<double>(static_cast<size_t>(wide.numel()), -99.0)};
  for (int64_t i = 0; i < logical.numel(); ++i) {
    std::vector<int64_t> idx = logical.index(i);
    idx.back() = 2 * idx.back() + 1;
    mem.v[static_cast<size_t>(mem.offset(idx))] = values[static_cast<size_t>(i)];
  }
  return slice(from_data(TensorData::from(mem.v, wide)), -1, 1, INT64_MAX, 2);
}

namespace gradcheck_detail {

inline constexpr uint32_t kSeedV = 9001, kSeedW = 9101;

inline DynTensor random_like_shape(const Shape& shape, uint32_t seed) {
  return from_data(TensorData::from(random_values(shape.numel(), -1.0, 1.0, false, seed), shape));
}

// sum(y * v) on the host, in double.
inline double host_dot(const DynTensor& y, const DynTensor& v) {
  const std::vector<double> a = y.to_vector<double>(), b = v.to_vector<double>();
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

inline std::string describe(const GradInput& in, int64_t element) {
  std::ostringstream os;
  os << "element " << element << " [";
  const std::vector<int64_t> idx = Host{in.shape, {}}.index(element);
  for (size_t i = 0; i < idx.size(); ++i) os << (i ? ", " : "") << idx[i];
  os << "] of " << to_string(in.shape) << " " << layout_name(in.layout);
  return os.str();
}

}  // namespace gradcheck_detail

/// Checks f's first derivatives at `inputs` (all differentiated). Each mismatch
/// |analytic - numerical| > atol + rtol * |numerical| is reported with the check's name, the
/// input, the element and both values; returns true when there is none. With
/// `untracked_is_zero` an output that autodiff does not track means a zero gradient (a second
/// derivative of a linear op); otherwise it is a failure.
inline bool gradcheck(const std::string& name, const GradFn& f,
                      const std::vector<GradInput>& inputs, const GradTol& tol = {},
                      bool untracked_is_zero = false) {
  using namespace gradcheck_detail;
  std::vector<DynTensor> xs;
  for (const GradInput& in : inputs) xs.push_back(require_grad(materialize(in, in.values)));
  const DynTensor y = f(xs);
  const DynTensor v = random_like_shape(y.shape(), kSeedV);
  std::vector<std::vector<double>> analytic(inputs.size());
  if (y.requires_grad()) {
    const std::vector<DynTensor> gs = grad(y, xs, v);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!gs[i].defined()) continue;  // the output does not depend on input i
      if (gs[i].shape() != inputs[i].shape || gs[i].dtype() != DType::f64) {
        ADD_FAILURE() << name << ": input " << i << " of shape " << to_string(inputs[i].shape)
                      << " got a gradient of shape " << to_string(gs[i].shape()) << " and dtype "
                      << dtype_name(gs[i].dtype());
        return false;
      }
      analytic[i] = gs[i].to_vector<double>();
    }
  } else if (!untracked_is_zero) {
    ADD_FAILURE() << name << ": the output is not tracked by autodiff (no gradient recorded)";
    return false;
  }

  auto guard = no_grad();
  std::vector<DynTensor> plain;
  for (const GradInput& in : inputs) plain.push_back(materialize(in, in.values));
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> values = inputs[i].values;
    for (size_t j = 0; j < values.size(); ++j) {
      values[j] = inputs[i].values[j] + tol.eps;
      plain[i] = materialize(inputs[i], values);
      const double up = host_dot(f(plain), v);
      values[j] = inputs[i].values[j] - tol.eps;
      plain[i] = materialize(inputs[i], values);
      const double down = host_dot(f(plain), v);
      values[j] = inputs[i].values[j];
      const double numerical = (up - down) / (2.0 * tol.eps);
      const double a = analytic[i].empty() ? 0.0 : analytic[i][j];
      if (!(std::fabs(a - numerical) <= tol.atol + tol.rtol * std::fabs(numerical))) {
        if (++failures <= 4) {
          ADD_FAILURE() << name << ": input " << i << ", "
                        << describe(inputs[i], static_cast<int64_t>(j)) << ": analytic " << a
                        << ", numerical " << numerical;
        }
      }
    }
    plain[i] = materialize(inputs[i], inputs[i].values);
  }
  if (failures > 4) ADD_FAILURE() << name << ": " << failures - 4 << " more mismatches";
  return failures == 0;
}

/// Checks second derivatives: gradcheck of x -> sum_i <d sum(f(x) * v) / dx_i, w_i> for fixed
/// random v and w_i, whose analytic gradient differentiates the first backward pass recorded
/// with create_graph = true.
inline bool gradgradcheck(const std::string& name, const GradFn& f,
                          const std::vector<GradInput>& inputs, const GradTol& tol = {}) {
  using namespace gradcheck_detail;
  const GradFn first = [f](const std::vector<DynTensor>& in) {
    auto guard = enable_grad();  // the numerical pass runs under no_grad
    std::vector<DynTensor> xs;
    for (const DynTensor& x : in) xs.push_back(x.requires_grad() ? x : require_grad(x));
    const DynTensor y = f(xs);
    DynTensor total = zeros(Shape{}, DType::f64);
    if (!y.requires_grad()) return total;  // gradcheck reports it
    const std::vector<DynTensor> gs =
        grad(y, xs, random_like_shape(y.shape(), kSeedV), {.create_graph = true});
    for (size_t i = 0; i < gs.size(); ++i) {
      if (!gs[i].defined()) continue;
      const DynTensor w = random_like_shape(gs[i].shape(), kSeedW + static_cast<uint32_t>(i));
      total = add(total, sum(mul(gs[i], w)));
    }
    return total;
  };
  return gradcheck(name + " (2nd order)", first, inputs, tol, /*untracked_is_zero=*/true);
}

/// For piecewise-constant ops (floor, sign...), where central differences are undefined at the
/// jumps: the output is tracked and its gradient is exactly zero.
inline bool zerogradcheck(const std::string& name, const GradFn& f,
                          const std::vector<GradInput>& inputs) {
  std::vector<DynTensor> xs;
  for (const GradInput& in : inputs) xs.push_back(require_grad(materialize(in, in.values)));
  const DynTensor y = f(xs);
  if (!y.requires_grad()) {
    ADD_FAILURE() << name << ": the output is not tracked by autodiff";
    return false;
  }
  const std::vector<DynTensor> gs =
      grad(y, xs, gradcheck_detail::random_like_shape(y.shape(), gradcheck_detail::kSeedV));
  bool ok = true;
  for (size_t i = 0; i < gs.size(); ++i) {
    if (!gs[i].defined()) continue;
    const std::vector<double> g = gs[i].to_vector<double>();
    for (size_t j = 0; j < g.size(); ++j) {
      if (g[j] != 0.0) {
        ADD_FAILURE() << name << ": input " << i << ", "
                      << gradcheck_detail::describe(inputs[i], static_cast<int64_t>(j))
                      << ": gradient " << g[j] << ", expected exactly 0";
        ok = false;
        break;
      }
    }
  }
  return ok;
}

}  // namespace ember::test
