// matmul with PyTorch's 1-D and batch-broadcast rules, dot, outer, and the softmax family.
#include "ember/tensor/ops/linalg.hpp"

#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/softmax_rows.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {

namespace {

DynTensor matmul_unrecorded(const DynTensor& a_in, const DynTensor& b_in) {
  detail::check_same_device(a_in, b_in, "matmul");
  EMBER_CHECK(a_in.rank() >= 1 && b_in.rank() >= 1,
              "[matmul] both operands need at least one dimension: lhs ", a_in.shape(), ", rhs ",
              b_in.shape());
  EMBER_CHECK(a_in.dtype() != DType::boolean && b_in.dtype() != DType::boolean,
              "[matmul] bool tensors are not supported");
  const DType dtype = promote_types(a_in.dtype(), b_in.dtype());
  // 1-D operands become matrices ([K] -> [1, K] on the left, [K, 1] on the right), squeezed after.
  const DynTensor a = a_in.rank() == 1 ? unsqueeze(a_in, 0) : a_in;
  const DynTensor b = b_in.rank() == 1 ? unsqueeze(b_in, 1) : b_in;
  const int64_t m = a.size(-2), k = a.size(-1), k2 = b.size(-2), n = b.size(-1);
  EMBER_CHECK(k == k2, "[matmul] inner dimensions differ: lhs ", a_in.shape(), ", rhs ",
              b_in.shape());
  Shape ab(std::span<const int64_t>(a.shape().data(), static_cast<size_t>(a.rank() - 2)));
  Shape bb(std::span<const int64_t>(b.shape().data(), static_cast<size_t>(b.rank() - 2)));
  const Shape batch = broadcast_shapes(ab, bb, "matmul");
  const int64_t nb = batch.numel();
  detail::check_supported(a, OpFamily::Matmul, dtype, "matmul");

  // Flatten the broadcast batch into one dim; views when the strides allow it.
  auto as3 = [&](const DynTensor& t, int64_t r, int64_t c) {
    Shape s = batch;
    s.push_back(r);
    s.push_back(c);
    return reshape(expand(cast(t, dtype), s), Shape{nb, r, c});
  };
  if (a_in.rank() == 2 && b_in.rank() == 2 && a.dtype() == dtype && b.dtype() == dtype) {
    // Matrix times matrix (every Linear layer, forward and backward): 3-D views directly.
    auto as3_view = [](const DynTensor& t) {
      const RawTensor& r = t.raw();
      return r.view(Shape{1, t.size(0), t.size(1)}, Strides{0, r.strides[0], r.strides[1]},
                    r.offset);
    };
    DynTensor out = detail::make_empty(Shape{m, n}, dtype, a.device(), "matmul");
    // Low-precision matmuls stage through f32 buffers: a failure there names matmul.
    as_op("matmul",
          [&] { detail::backend_of(out).matmul(as3_view(a), as3_view(b), as3_view(out)); });
    return out;
  }
  if (a_in.rank() >= 3 && b_in.rank() == 2) {
    // A stack of matrices times one matrix (Linear on [..., K]): one [batch * M, K] x [K, N]
    // product, as PyTorch folds it, instead of a small GEMM per batch entry.
    Shape s = a_in.shape();
    s[s.rank() - 1] = n;
    return reshape(matmul_unrecorded(reshape(a_in, Shape{-1, k}), b_in), s);
  }
  const DynTensor a3 = as3(a, m, k), b3 = as3(b, k, n);
  DynTensor out = detail::make_empty(Shape{nb, m, n}, dtype, a.device(), "matmul");
  as_op("matmul", [&] { detail::backend_of(out).matmul(a3.raw(), b3.raw(), out.raw()); });

  Shape shape = batch;
  if (a_in.rank() > 1) shape.push_back(m);
  if (b_in.rank() > 1) shape.push_back(n);
  return reshape(out, shape);
}

}  // namespace

DynTensor matmul(const DynTensor& a, const DynTensor& b) {
  if (detail::autocast_lowers(a, b)) {
    return matmul(detail::autocast_lower(a), detail::autocast_lower(b));
  }
  // One node for the whole product, whatever reshapes the forward needs.
  return detail::recorded(ops::matmul, {&a, &b}, NoParams{},
                          [&] { return matmul_unrecorded(a, b); });
}

DynTensor matmul_int8(const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(a, b, "matmul_int8");
  EMBER_CHECK(a.dtype() == DType::i8 && b.dtype() == DType::i8,
              "[matmul_int8] takes int8 operands, got ", a.dtype(), " and ", b.dtype());
  EMBER_CHECK((a.rank() == 2 || a.rank() == 3) && (b.rank() == 2 || b.rank() == 3),
              "[matmul_int8] takes [M, K] or [B, M, K] times [K, N] or [B, K, N], got ", a.shape(),
              " and ", b.shape());
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  EMBER_CHECK(b.size(-2) == k, "[matmul_int8] inner dimensions differ: lhs ", a.shape(), ", rhs ",
              b.shape());
  // 128 * 128 * k must fit an int32, the sums' type: -128 * -128 is the largest product.
  EMBER_CHECK(k <= 131071, "[matmul_int8] k = ", k,
              " could overflow the int32 sums (at most 131071)");
  const int64_t nb = a.rank() == 3 ? a.size(0) : b.rank() == 3 ? b.size(0) : 1;
  EMBER_CHECK(a.rank() == 2 || b.rank() == 2 || b.size(0) == nb,
              "[matmul_int8] batch sizes differ: lhs ", a.shape(), ", rhs ", b.shape());
  auto as3 = [nb](const DynTensor& t) {  // a 2-D operand is broadcast over the batch (stride 0)
    return t.rank() == 3 ? t : expand(unsqueeze(t, 0), Shape{nb, t.size(0), t.size(1)});
  };
  const DynTensor a3 = as3(a), b3 = as3(b);
  DynTensor out;
  if (detail::backend_of(a).supports(OpFamily::MatmulInt8, DType::i8)) {
    out = detail::make_empty(Shape{nb, m, n}, DType::i32, a.device(), "matmul_int8");
    as_op("matmul_int8",
          [&] { detail::backend_of(out).matmul_int8(a3.raw(), b3.raw(), out.raw()); });
  } else {  // the composite: the same sums, in a backend's int32 matmul
    out = matmul(cast(a3, DType::i32), cast(b3, DType::i32));
  }
  return a.rank() == 2 && b.rank() == 2 ? reshape(out, Shape{m, n}) : out;
}

DynTensor dot(const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(a, b, "dot");
  EMBER_CHECK(a.rank() == 1 && b.rank() == 1 && a.size(0) == b.size(0),
              "[dot] expects two 1-D tensors of equal size, got ", a.shape(), " and ", b.shape());
  return matmul(a, b);
}

DynTensor outer(const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(a, b, "outer");
  EMBER_CHECK(a.rank() == 1 && b.rank() == 1, "[outer] expects two 1-D tensors, got ", a.shape(),
              " and ", b.shape());
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

DynTensor softmax(const DynTensor& x, int64_t dim) {
  detail::check_defined(x, "softmax");
  EMBER_CHECK(is_floating(x.dtype()), "[softmax] needs a floating tensor, got ", x.dtype());
  wrap_dim(dim, x.rank(), "softmax");  // here, not in the inner amax, so the error says softmax
  if (fused_softmax_dim(x, dim)) {     // 16-bit read as it is: f32 under autocast, else x's type
    const DType out = detail::autocast_widens(x) ? DType::f32 : x.dtype();
    return as_op("softmax", [&] {
      return detail::recorded(ops::softmax, {&x}, dim, [&] { return softmax_last(x, false, out); });
    });
  }
  if (detail::autocast_widens(x)) return softmax(cast(x, DType::f32), dim);  // stays f32
  return as_op("softmax", [&] {
    if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) {
      return cast(softmax(cast(x, DType::f32), dim), x.dtype());  // sums in f32, as PyTorch
    }
    return detail::recorded(ops::softmax, {&x}, dim, [&] {
      const DynTensor e = exp(sub(x, amax(x, {dim}, true)));
      return div(e, sum(e, {dim}, true));
    });
  });
}

DynTensor log_softmax(const DynTensor& x, int64_t dim) {
  detail::check_defined(x, "log_softmax");
  EMBER_CHECK(is_floating(x.dtype()), "[log_softmax] needs a floating tensor, got ", x.dtype());
  wrap_dim(dim, x.rank(), "log_softmax");
  if (fused_softmax_dim(x, dim)) {
    const DType out = detail::autocast_widens(x) ? DType::f32 : x.dtype();
    return as_op("log_softmax", [&] {
      return detail::recorded(ops::log_softmax, {&x}, dim,
                              [&] { return softmax_last(x, true, out); });
    });
  }
  if (detail::autocast_widens(x)) return log_softmax(cast(x, DType::f32), dim);  // stays f32
  return as_op("log_softmax", [&] {
    if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) {
      return cast(log_softmax(cast(x, DType::f32), dim), x.dtype());
    }
    return detail::recorded(ops::log_softmax, {&x}, dim, [&] {
      const DynTensor shifted = sub(x, amax(x, {dim}, true));
      return sub(shifted, log(sum(exp(shifted), {dim}, true)));
    });
  });
}

}  // namespace ember
