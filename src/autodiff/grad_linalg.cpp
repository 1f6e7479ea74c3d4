// Gradient rules of matmul (any ranks, batch broadcasting undone) and the fused softmax family.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/softmax_rows.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

void matmul_rule(const Recording& r) {
  record(r, [a = r.input(0), b = r.input(1)](BackwardArgs& args) {
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

// The fused row kernel where the forward's dim is the last and nothing is recorded; else the
// formula in tensor ops. The gradient takes the input's dtype (a 16-bit input read straight
// under autocast has an f32 output).
void softmax_family_rule(const Recording& r, bool log) {
  record(r, [saved = r.out.raw(), dim = r.param<int64_t>(), in = r.input(0).dtype(),
             log](BackwardArgs& a) {
    const DynTensor y = a.output(saved);
    if (!a.options.create_graph && fused_softmax_dim(y, dim)) {
      a.input_grads[0] = softmax_last_backward(y, a.grad, log, in);
      return;
    }
    // 16-bit outputs (read straight from 16-bit inputs) get the formula in f32, as their
    // forward had.
    const bool narrow = y.dtype() == DType::f16 || y.dtype() == DType::bf16;
    const DynTensor yf = narrow ? cast(y, DType::f32) : y;
    const DynTensor gy = cast(a.grad, yf.dtype());
    const DynTensor g = log ? sub(gy, mul(exp(yf), sum(gy, {dim}, true)))
                            : mul(yf, sub(gy, sum(mul(gy, yf), {dim}, true)));
    a.input_grads[0] = cast(g, in);
  });
}
void softmax_rule(const Recording& r) { softmax_family_rule(r, false); }
void log_softmax_rule(const Recording& r) { softmax_family_rule(r, true); }

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::matmul{"matmul", autodiff::matmul_rule};
const OpDef ops::softmax{"softmax", autodiff::softmax_rule};
const OpDef ops::log_softmax{"log_softmax", autodiff::log_softmax_rule};

}  // namespace ember
