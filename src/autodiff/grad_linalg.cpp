// Gradient rules of matmul (any ranks, batch broadcasting undone) and the fused softmax family.
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {

void record_matmul(const DynTensor& a, const DynTensor& b, DynTensor& out) {
  record("matmul", {&a, &b}, out, [a, b](BackwardArgs& args) {
    // Back to matrices: the squeezed dims of 1-D operands return as size 1.
    DynTensor g = args.grad;
    if (b.rank() == 1) g = unsqueeze(g, -1);
    if (a.rank() == 1) g = unsqueeze(g, -2);
    const DynTensor am = a.rank() == 1 ? unsqueeze(a, 0) : a;
    const DynTensor bm = b.rank() == 1 ? unsqueeze(b, 1) : b;
    if (args.needs(0)) {
      const DynTensor ga = matmul(g, transpose(bm, -1, -2));
      args.input_grads[0] = reshape(sum_to(ga, am.shape()), a.shape());
    }
    if (args.needs(1) && a.rank() >= 3 && b.rank() == 2) {
      // The forward folded a's batch into its rows: so does the weight's gradient, one
      // [K, batch * M] x [batch * M, N] product with no batch to sum away.
      const int64_t k = a.size(-1);
      args.input_grads[1] =
          matmul(transpose(reshape(a, Shape{-1, k}), 0, 1), reshape(g, Shape{-1, g.size(-1)}));
    } else if (args.needs(1)) {
      const DynTensor gb = matmul(transpose(am, -1, -2), g);
      args.input_grads[1] = reshape(sum_to(gb, bm.shape()), b.shape());
    }
  });
}

void record_softmax(const DynTensor& x, int64_t dim, DynTensor& out) {
  const RawTensor saved = out.raw();
  record("softmax", {&x}, out, [saved, dim](BackwardArgs& a) {
    const DynTensor y = a.output(saved);
    a.input_grads[0] = mul(y, sub(a.grad, sum(mul(a.grad, y), {dim}, true)));
  });
}

void record_log_softmax(const DynTensor& x, int64_t dim, DynTensor& out) {
  const RawTensor saved = out.raw();
  record("log_softmax", {&x}, out, [saved, dim](BackwardArgs& a) {
    const DynTensor y = a.output(saved);
    a.input_grads[0] = sub(a.grad, mul(exp(y), sum(a.grad, {dim}, true)));
  });
}

}  // namespace ember::autodiff
