// Matmul and the indexing family through ATen. Index tensors are i64 and range-checked by the
// front end.
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
      at::bmm_out(o, view_of(a), view_of(b));  // straight into out: no temporary
      return;
    }
    assign(out, at::bmm(compute_view(a), compute_view(b)));
  });
}

void LibTorchBackend::gather(const RawTensor& x, int dim, const RawTensor& index,
                             const RawTensor& out) {
  run("gather", [&] { assign(out, at::gather(view_of(x), dim, view_of(index))); });
}

void LibTorchBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                              const RawTensor& index, const RawTensor& src) {
  run("scatter", [&] {
    at::Tensor d = at_least_1d(view_of(dst)), i = view_of(index), v = view_of(src);
    if (dst.rank() == 0) {
      i = i.reshape({-1});
      v = v.numel() == 1 ? v.reshape({1}).expand(i.sizes()) : v.reshape({-1});
    }
    if (reduce == ScatterReduce::Add) {
      d.scatter_add_(dim, i, v);
    } else {
      d.scatter_(dim, i, v);
    }
  });
}

void LibTorchBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                                   const RawTensor& out) {
  run("index_select", [&] { assign(out, at::index_select(view_of(x), dim, view_of(index))); });
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
