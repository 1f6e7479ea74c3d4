// Reductions, arg-reductions, scans, sort and topk through ATen. Half types are computed in f32
// (compute_view) and bools as u8 where ATen 1.13 has no Bool kernel.
#include <vector>

#include "aten.hpp"

namespace ember::libtorch {
namespace {

std::vector<int64_t> dims_of(uint32_t mask, int rank) {
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    if (mask & (1u << d)) dims.push_back(d);
  }
  return dims;
}

at::Tensor numeric_view(const RawTensor& t) {
  at::Tensor v = compute_view(t);
  return t.dtype == DType::boolean ? v.to(at::kByte) : v;
}

// The accumulation type of sum, prod, mean and scans: double for floats, int64 for integers
// and bools (the Cpu kernels' types; f32 sums in f32 drift past the tables' tolerance).
at::ScalarType accumulate_type(DType out) { return is_floating(out) ? at::kDouble : at::kLong; }

}  // namespace

void LibTorchBackend::reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                             const RawTensor& out) {
  run(op_name(op), [&] {
    const std::vector<int64_t> dims = dims_of(dims_mask, x.rank());
    if (dims.empty()) return assign(out, view_of(x));  // nothing reduced: a (casting) copy
    if ((op == ReduceOp::Amax || op == ReduceOp::Amin) &&
        (x.dtype == DType::f32 || x.dtype == DType::f64) && out.dtype == x.dtype &&
        out.rank() == x.rank()) {
      at::Tensor o = view_of(out);  // straight into out: no temporary and copy
      if (op == ReduceOp::Amax) at::amax_out(o, view_of(x), dims, true);
      if (op == ReduceOp::Amin) at::amin_out(o, view_of(x), dims, true);
      return;
    }
    at::Tensor r = numeric_view(x);
    switch (op) {
      case ReduceOp::Sum:
        r = at::sum(r, dims, true, accumulate_type(out.dtype));
        break;
      case ReduceOp::Mean:
        r = at::mean(r.to(at::kDouble), dims, true);
        break;
      case ReduceOp::Prod:
        for (int64_t d : dims) r = at::prod(r, d, true, accumulate_type(out.dtype));
        break;
      case ReduceOp::Amax:
        r = at::amax(r, dims, true);
        break;
      case ReduceOp::Amin:
        r = at::amin(r, dims, true);
        break;
      case ReduceOp::All:
        for (int64_t d : dims) r = r.ne(0).all(d, true);
        break;
      case ReduceOp::Any:
        for (int64_t d : dims) r = r.ne(0).any(d, true);
        break;
    }
    assign(out, r);
  });
}

void LibTorchBackend::arg_reduce(ArgReduceOp op, const RawTensor& x, int dim,
                                 const RawTensor& values, const RawTensor& indices) {
  run(op_name(op), [&] {
    const at::Tensor v = numeric_view(x);
    const at::Tensor i =
        op == ArgReduceOp::ArgMax ? at::argmax(v, dim, true) : at::argmin(v, dim, true);
    assign(indices, i);
    assign(values, x.rank() == 0 ? v : v.gather(dim, i));
  });
}

void LibTorchBackend::scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) {
  run(op_name(op), [&] {
    const at::Tensor v = numeric_view(x);
    const at::ScalarType acc = accumulate_type(out.dtype);
    assign(out, op == ScanOp::CumSum ? at::cumsum(v, dim, acc) : at::cumprod(v, dim, acc));
  });
}

void LibTorchBackend::sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                           const RawTensor& indices) {
  run("sort", [&] {
    const auto [v, i] = at::sort(numeric_view(x), /*stable=*/true, dim, descending);
    assign(values, v);
    assign(indices, i);
  });
}

void LibTorchBackend::topk(const RawTensor& x, int64_t k, int dim, bool largest,
                           const RawTensor& values, const RawTensor& indices) {
  run("topk", [&] {
    // A stable sort's first k: ties in index order, as the Cpu and Cuda kernels (at::topk
    // orders ties as it likes).
    const auto [v, i] = at::sort(numeric_view(x), /*stable=*/true, dim, /*descending=*/largest);
    assign(values, v.dim() == 0 ? v : v.narrow(dim, 0, k));
    assign(indices, i.dim() == 0 ? i : i.narrow(dim, 0, k));
  });
}

}  // namespace ember::libtorch
