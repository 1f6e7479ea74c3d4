// Matmul, the SVD and the indexing family through ATen. Index tensors are i64 and range-checked by
// the front end.
#include <cmath>
#include <limits>

#include "aten.hpp"

namespace ember::libtorch {
namespace {

// A 0-d operand of gather or scatter, as the 1-element vector ATen wants (the Cpu kernels read
// a 0-d tensor's one element for every index).
at::Tensor at_least_1d(const at::Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

}  // namespace

void LibTorchBackend::matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  run("matmul", [&] {
    if (out.dtype == DType::f32 || out.dtype == DType::f64) {
      at::Tensor o = view_of(out);
      if (out.shape[0] == 1) {
        at::Tensor o2 = o[0];
        at::mm_out(o2, view_of(a)[0], view_of(b)[0]);  // one GEMM: ATen's bmm is slower here
      } else {
        at::bmm_out(o, view_of(a), view_of(b));  // straight into out: no temporary
      }
      return;
    }
    assign(out, at::bmm(compute_view(a), compute_view(b)));
  });
}

void LibTorchBackend::svd(const RawTensor& a, const RawTensor& u, const RawTensor& s,
                          const RawTensor& vh) {
  run("linalg.svd", [&] {
    const at::Tensor x = view_of(a);
    // LAPACK refuses NaN and inf; the other backends answer NaN, and so does this one.
    if (!at::isfinite(x).all().item<bool>()) {
      for (const RawTensor* t : {&u, &s, &vh}) {
        if (t->defined()) view_of(*t).fill_(std::numeric_limits<double>::quiet_NaN());
      }
      return;
    }
    if (!u.defined()) return assign(s, at::linalg_svdvals(x));
    const bool full = u.shape[2] != s.shape[1] || vh.shape[1] != s.shape[1];
    const auto [pu, ps, pvh] = at::linalg_svd(x, full);
    assign(u, pu);
    assign(s, ps);
    assign(vh, pvh);
  });
}

void LibTorchBackend::gather(const RawTensor& x, int dim, const RawTensor& index,
                             const RawTensor& out) {
  run("gather", [&] { assign(out, at::gather(view_of(x), dim, view_of(index))); });
}

void LibTorchBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                              const RawTensor& index, const RawTensor& src) {
  run(scatter_name(reduce), [&] {
    at::Tensor d = at_least_1d(view_of(dst)), i = view_of(index), v = view_of(src);
    if (dst.rank() == 0) {
      i = i.reshape({-1});
      v = v.numel() == 1 ? v.reshape({1}).expand(i.sizes()) : v.reshape({-1});
    }
    switch (reduce) {
      case ScatterReduce::None:
        d.scatter_(dim, i, v);
        break;
      case ScatterReduce::Add:
        d.scatter_add_(dim, i, v);
        break;
      case ScatterReduce::Mul:
        d.scatter_reduce_(dim, i, v, "prod");
        break;
      case ScatterReduce::Max:
        d.scatter_reduce_(dim, i, v, "amax");
        break;
      case ScatterReduce::Min:
        d.scatter_reduce_(dim, i, v, "amin");
        break;
    }
  });
}

void LibTorchBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                                   const RawTensor& out) {
  run("index_select", [&] { assign(out, at::index_select(view_of(x), dim, view_of(index))); });
}

// ATen runs on the host at once, so the verdict is known here (as on the Cpu).
RangeError LibTorchBackend::check_range(const RawTensor& x, const RangeCheck& check) {
  RangeError e;
  e.check = check;
  run("check_range", [&] {
    at::Tensor v = compute_view(x);
    if (x.dtype == DType::boolean) v = v.to(at::kLong);
    const auto [mn, mx] = at::aminmax(v);  // NaN propagates to both
    if (is_integral(x.dtype) || x.dtype == DType::boolean) {
      const int64_t lo = mn.item<int64_t>(), hi = mx.item<int64_t>();
      if (static_cast<double>(lo) >= check.lo && static_cast<double>(hi) <= check.hi) return;
      e.found = true;
      e.index = static_cast<double>(lo) < check.lo ? lo : hi;
      e.value = static_cast<double>(e.index);
    } else {
      const double lo = mn.item<double>(), hi = mx.item<double>();
      if (lo >= check.lo && hi <= check.hi) return;  // false for NaN
      e.found = true;
      e.value = std::isnan(lo) ? lo : lo < check.lo ? lo : hi;
    }
  });
  return e;
}

RawTensor LibTorchBackend::nonzero(const RawTensor& x) {
  RawTensor t;
  run("nonzero", [&] {
    const at::Tensor r = at::nonzero(view_of(x));
    t.shape = Shape(r.sizes().vec());
    t.strides = contiguous_strides(t.shape);
    t.dtype = DType::i64;
    t.storage = allocate(t.nbytes(), x.device());
    assign(t, r);
  });
  return t;
}

}  // namespace ember::libtorch
