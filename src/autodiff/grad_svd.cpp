// Gradient rules of linalg.svd, one per output. For a = U diag(S) Vh (K = min(M, N), real):
//   from S:  U diag(gS) Vh
//   from U:  U [skew(U^T gU) / E] diag(S) Vh, plus (I - U U^T) gU diag(1/S) Vh when M > K
//   from Vh: U diag(S) [skew(Vh gV) / E] Vh, plus U diag(1/S) gVh (I - V Vh) when N > K
// with skew(X) = X - X^T and E_ij = S_j^2 - S_i^2 (1 on the diagonal): PyTorch's svd_backward
// split by output. The whole gradient is linear in (gU, gS, gVh), so the three nodes' sums are
// the whole, and an output nobody used adds nothing (as an undefined gradient in PyTorch).
// Full matrices' extra columns get no gradient, as in PyTorch: they are not unique.
#include <algorithm>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

struct Factors {
  DynTensor u, s, vh;  // reduced: [..., M, K], [..., K], [..., K, N]
  int64_t m = 0, n = 0, k = 0;
};

// The saved outputs; when the backward is itself recorded (create_graph), the SVD again with
// recording on, so that second derivatives flow through U, S and Vh (same kernel, same values).
Factors factors(const DynTensor& a, const SvdSaved& saved, const BackwardArgs& args) {
  Factors f;
  f.m = a.size(-2);
  f.n = a.size(-1);
  f.k = std::min(f.m, f.n);
  if (args.options.create_graph) {
    linalg::SVD r = linalg::svd(a, false);
    f.u = r.U;
    f.s = r.S;
    f.vh = r.Vh;
  } else {
    f.u = narrow(DynTensor(saved.u), -1, 0, f.k);
    f.s = DynTensor(saved.s);
    f.vh = narrow(DynTensor(saved.vh), -2, 0, f.k);
  }
  return f;
}

DynTensor mT(const DynTensor& x) { return transpose(x, -1, -2); }

// skew(x) / E, with E_ij = s_j^2 - s_i^2 off the diagonal and 1 on it (where skew is 0).
DynTensor skew_over_gaps(const DynTensor& x, const DynTensor& s) {
  const DynTensor s2 = mul(s, s);
  const DynTensor gaps = sub(unsqueeze(s2, -2), unsqueeze(s2, -1));
  const DynTensor e = add(gaps, eye(s.size(-1), s.size(-1), s.dtype(), s.device()));
  return div(sub(x, mT(x)), e);
}

void svd_s_rule(const Recording& r) {
  record(r, [a = r.input(0), saved = r.param<SvdSaved>()](BackwardArgs& args) {
    const Factors f = factors(a, saved, args);
    args.input_grads[0] = matmul(mul(f.u, unsqueeze(args.grad, -2)), f.vh);
  });
}

void svd_u_rule(const Recording& r) {
  record(r, [a = r.input(0), saved = r.param<SvdSaved>()](BackwardArgs& args) {
    const Factors f = factors(a, saved, args);
    const DynTensor gu = narrow(args.grad, -1, 0, f.k);
    const DynTensor inner = mul(skew_over_gaps(matmul(mT(f.u), gu), f.s), unsqueeze(f.s, -2));
    DynTensor left = matmul(f.u, inner);  // [..., M, K]
    if (f.m > f.k) {
      const DynTensor gu_sinv = div(gu, unsqueeze(f.s, -2));
      left = add(left, sub(gu_sinv, matmul(f.u, matmul(mT(f.u), gu_sinv))));
    }
    args.input_grads[0] = matmul(left, f.vh);
  });
}

void svd_vh_rule(const Recording& r) {
  record(r, [a = r.input(0), saved = r.param<SvdSaved>()](BackwardArgs& args) {
    const Factors f = factors(a, saved, args);
    const DynTensor gvh = narrow(args.grad, -2, 0, f.k);
    const DynTensor inner = mul(unsqueeze(f.s, -1), skew_over_gaps(matmul(f.vh, mT(gvh)), f.s));
    DynTensor right = matmul(inner, f.vh);  // [..., K, N]
    if (f.n > f.k) {
      const DynTensor sinv_gvh = div(gvh, unsqueeze(f.s, -1));
      right = add(right, sub(sinv_gvh, matmul(matmul(sinv_gvh, mT(f.vh)), f.vh)));
    }
    args.input_grads[0] = matmul(f.u, right);
  });
}

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::svd_u{"linalg.svd", autodiff::svd_u_rule};
const OpDef ops::svd_s{"linalg.svd", autodiff::svd_s_rule};
const OpDef ops::svd_vh{"linalg.svd", autodiff::svd_vh_rule};

}  // namespace ember
