// torch.linalg's vector_norm, matrix_norm and norm, written over ember::norm, the reductions and
// (for orders 2, -2 and "nuc") the singular values.
#include <algorithm>
#include <cmath>
#include <string>

#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "internal.hpp"

namespace ember::linalg {
namespace {

// Drops dims a and b (the larger first, so the other does not move).
DynTensor squeeze_dims(DynTensor x, int a, int b) {
  x = squeeze(x, std::max(a, b));
  return squeeze(x, std::min(a, b));
}

std::string ord_name(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  std::string s = std::to_string(ord);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The two wrapped, distinct matrix dims.
std::pair<int, int> matrix_dims(const DynTensor& x, const std::vector<int64_t>& dims,
                                const char* op) {
  EMBER_CHECK(x.rank() >= 2, "[", op, "] expects a tensor with at least 2 dims, got shape ",
              x.shape());
  EMBER_CHECK(dims.size() == 2, "[", op, "] dims must name 2 dims, got ", dims.size());
  const int a = wrap_dim(dims[0], x.rank(), op), b = wrap_dim(dims[1], x.rank(), op);
  EMBER_CHECK(a != b, "[", op, "] dims must differ, got ", dims[0], " and ", dims[1]);
  return {a, b};
}

void check_floating(const DynTensor& x, const char* op) {
  detail::check_defined(x, op);
  EMBER_CHECK(is_floating(x.dtype()), "[", op, "] needs a floating tensor, got ", x.dtype());
}

// The matrices at dims (r, c) moved last, their singular values reduced to one number each
// (largest, smallest or sum), and the two dims dropped or kept as size 1.
DynTensor singular_norm(const DynTensor& x, int r, int c, double ord, bool keepdim) {
  std::vector<int64_t> perm;
  for (int d = 0; d < x.rank(); ++d) {
    if (d != r && d != c) perm.push_back(d);
  }
  perm.push_back(r);
  perm.push_back(c);
  const DynTensor s = svdvals(permute(x, perm));
  DynTensor n = ord == 2 ? amax(s, {-1}) : ord == -2 ? amin(s, {-1}) : sum(s, {-1});
  if (keepdim) {
    n = unsqueeze(n, std::min(r, c));
    n = unsqueeze(n, std::max(r, c));
  }
  return n;
}

}  // namespace

DynTensor vector_norm(const DynTensor& x, double ord, const std::vector<int64_t>& dims,
                      bool keepdim) {
  check_floating(x, "linalg.vector_norm");
  const uint32_t mask = detail::dims_mask(dims, x.rank(), "linalg.vector_norm");
  if (ord < 0 || std::isinf(ord)) {
    // max, min and negative powers have no value on an empty reduction (PyTorch raises too).
    for (int d = 0; d < x.rank(); ++d) {
      EMBER_CHECK(!((mask >> d) & 1u) || x.size(d) > 0, "[linalg.vector_norm] cannot compute the ",
                  ord_name(ord), " norm over dim ", d, " of size 0 (shape ", x.shape(), ")");
    }
  }
  // A negative p: pow(|x|, p) is inf at 0, which sums to inf and gives the norm 0, as PyTorch.
  return as_op("linalg.vector_norm", [&] { return ember::norm(x, ord, dims, keepdim); });
}

DynTensor matrix_norm(const DynTensor& x, double ord, const std::vector<int64_t>& dims,
                      bool keepdim) {
  check_floating(x, "linalg.matrix_norm");
  const auto [r, c] = matrix_dims(x, dims, "linalg.matrix_norm");
  EMBER_CHECK(ord == 1 || ord == -1 || ord == 2 || ord == -2 || std::isinf(ord),
              "[linalg.matrix_norm] ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; got ",
              ord_name(ord));
  if (ord == 2 || ord == -2) {
    // The largest or smallest of no singular values has no value (PyTorch raises too).
    EMBER_CHECK(x.size(r) > 0 && x.size(c) > 0, "[linalg.matrix_norm] cannot compute the ",
                ord_name(ord), " norm of empty matrices (shape ", x.shape(), ")");
    return as_op("linalg.matrix_norm",
                 [&, r = r, c = c] { return singular_norm(x, r, c, ord, keepdim); });
  }
  return as_op("linalg.matrix_norm", [&, r = r, c = c] {
    // 1 / -1: sums over rows (one per column), then max / min; inf / -inf: the other way.
    const bool cols = !std::isinf(ord);
    const int summed = cols ? r : c, picked = cols ? c : r;
    const DynTensor sums = sum(abs(x), {summed}, true);
    const DynTensor n = ord > 0 ? amax(sums, {picked}, true) : amin(sums, {picked}, true);
    return keepdim ? n : squeeze_dims(n, r, c);
  });
}

DynTensor matrix_norm(const DynTensor& x, std::string_view ord, const std::vector<int64_t>& dims,
                      bool keepdim) {
  check_floating(x, "linalg.matrix_norm");
  const auto [r, c] = matrix_dims(x, dims, "linalg.matrix_norm");
  EMBER_CHECK(ord == "fro" || ord == "nuc",
              "[linalg.matrix_norm] ord must be 'fro' or 'nuc', got '", ord, "'");
  if (ord == "nuc") {
    return as_op("linalg.matrix_norm",
                 [&, r = r, c = c] { return singular_norm(x, r, c, 0, keepdim); });
  }
  return as_op("linalg.matrix_norm", [&] { return ember::norm(x, 2.0, dims, keepdim); });
}

DynTensor norm(const DynTensor& x, std::optional<double> ord,
               const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  check_floating(x, "linalg.norm");
  if (dims) {
    EMBER_CHECK(dims->size() == 1 || dims->size() == 2,
                "[linalg.norm] dims must name 1 or 2 dims, got ", dims->size());
    if (dims->size() == 2 && ord) return matrix_norm(x, *ord, *dims, keepdim);
    return vector_norm(x, ord.value_or(2.0), *dims, keepdim);  // no ord: 'fro' is the 2-norm
  }
  if (!ord) return vector_norm(x, 2.0, {}, keepdim);
  EMBER_CHECK(x.rank() == 1 || x.rank() == 2,
              "[linalg.norm] without dims, an ord needs a 1-D or 2-D input, got shape ", x.shape());
  return x.rank() == 1 ? vector_norm(x, *ord, {0}, keepdim) : matrix_norm(x, *ord, {0, 1}, keepdim);
}

DynTensor norm(const DynTensor& x, std::string_view ord,
               const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  check_floating(x, "linalg.norm");
  if (dims) return matrix_norm(x, ord, *dims, keepdim);
  EMBER_CHECK(x.rank() == 2, "[linalg.norm] ord '", ord,
              "' needs a 2-D input or 2 dims, got shape ", x.shape());
  return matrix_norm(x, ord, {0, 1}, keepdim);
}

}  // namespace ember::linalg
