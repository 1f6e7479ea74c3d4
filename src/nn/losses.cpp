// Loss functions, composed from tensor ops so that autodiff differentiates them to any order.
// cross_entropy with class indices and binary_cross_entropy_with_logits record one fused node
// each: the first is the hot loss of training, the second needs an exact gradient at 0 that the
// stable composite (relu + log1p(exp(-|x|))) would lose. Formulas follow ATen's Loss.cpp and
// LossNLL.cpp; docs/NN.md lists the decisions.
#include "ember/nn/losses.hpp"

#include <cmath>
#include <numbers>

#include "ember/autodiff/node.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/softmax_rows.hpp"
#include "ember/tensor/sync.hpp"
#include "losses_internal.hpp"

namespace ember::nn {
namespace loss_detail {

void check_floating(const DynTensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), "[", op, "] ", what, " is undefined");
  EMBER_CHECK(is_floating(t.dtype()), "[", op, "] ", what, " must be a floating tensor, got ",
              t.dtype());
}

void check_same_shape(const DynTensor& input, const DynTensor& other, const char* op,
                      const char* what) {
  EMBER_CHECK(other.defined(), "[", op, "] ", what, " is undefined");
  // PyTorch warns and broadcasts here; a [N] target against a [N, 1] input is a classic silent
  // bug, so Ember asks for equal shapes.
  EMBER_CHECK(input.shape() == other.shape(), "[", op, "] ", what, " shape ", other.shape(),
              " differs from input shape ", input.shape());
}

void check_reduction(Reduction r, const char* op) {
  EMBER_CHECK(r != Reduction::BatchMean, "[", op,
              "] Reduction::BatchMean is only for kl_div; use Mean, Sum or None");
}

// Losses are on autocast's float32 list: 16-bit inputs are widened first (as PyTorch does).
bool widened(const DynTensor& t) { return ember::detail::autocast_widens(t); }
DynTensor widen(const DynTensor& t) { return ember::detail::autocast_widen(t); }

DynTensor reduce_loss(const DynTensor& loss, Reduction r, const char* op) {
  check_reduction(r, op);
  switch (r) {
    case Reduction::Mean:
      return mean(loss);
    case Reduction::Sum:
      return sum(loss);
    default:
      return loss;
  }
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 1; i <= from.rank(); ++i) {
    const int64_t f = from[from.rank() - i], t = to[to.rank() - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

DynTensor constant_weight(const DynTensor& w, const DynTensor& input, const char* op,
                          const char* what) {
  if (!w.defined()) return w;
  check_floating(w, op, what);
  EMBER_CHECK(w.device() == input.device(), "[", op, "] ", what, " is on ", w.device(),
              " but input is on ", input.device());
  return cast(detach(w), input.dtype());
}

DynTensor log1p_exp(const DynTensor& z) {
  // Each branch sees only values where it is finite, so the unused one adds 0, never NaN.
  const DynTensor pos = gt(z, 0.0);
  const DynTensor zp = where(pos, z, 0.0), zn = where(pos, 0.0, z);
  return where(pos, add(zp, log1p(exp(neg(zp)))), log1p(exp(zn)));
}

}  // namespace loss_detail

using namespace loss_detail;

namespace {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "None";
    case Reduction::Mean:
      return "Mean";
    case Reduction::Sum:
      return "Sum";
    case Reduction::BatchMean:
      return "BatchMean";
  }
  return "?";
}

std::string target_class_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] target class ", e.index, " is out of range for ",
                            static_cast<int64_t>(e.check.arg0), " classes (ignore_index is ",
                            static_cast<int64_t>(e.check.arg1), ")");
}

// arg0: 0 for the input, 1 for the target.
std::string probability_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] ",
                            e.check.arg0 == 0 ? "input values must be probabilities in [0, 1]"
                                              : "target values must be in [0, 1]",
                            ", got ", e.value);
}

// Class-index targets, checked and normalised: input [N, C, d...], target [N, d...] (i64, with
// ignored entries replaced by class 0), the per-target weights (0 where ignored) and their sum.
struct ClassTargets {
  DynTensor input;
  DynTensor target;   // i64, every entry a valid class
  DynTensor valid;    // Bool: target != ignore_index
  DynTensor weights;  // input's dtype: weight[target], 0 where ignored
  DynTensor weight;   // [C] constant, or undefined
  int64_t classes = 0;
  bool unbatched = false;
};

ClassTargets class_targets(const DynTensor& input, const DynTensor& target, const DynTensor& weight,
                           int64_t ignore_index, const char* op) {
  check_floating(input, op, "input");
  EMBER_CHECK(target.defined(), "[", op, "] target is undefined");
  EMBER_CHECK(is_integral(target.dtype()), "[", op,
              "] class-index target must be an Int tensor, got ", target.dtype());
  EMBER_CHECK(input.rank() >= 1, "[", op, "] input must have a class dim, got shape ",
              input.shape());
  EMBER_CHECK(target.device() == input.device(), "[", op, "] target is on ", target.device(),
              " but input is on ", input.device());
  ClassTargets ct;
  ct.unbatched = input.rank() == 1;
  if (ct.unbatched) {
    EMBER_CHECK(target.rank() == 0, "[", op, "] a 1-D input [C] takes a 0-d target, got shape ",
                target.shape());
    ct.input = unsqueeze(input, 0);
    ct.target = reshape(target, {1});
  } else {
    EMBER_CHECK(target.rank() == input.rank() - 1, "[", op, "] target shape ", target.shape(),
                " does not fit input shape ", input.shape(),
                ": class indices have the input's shape without dim 1");
    EMBER_CHECK(target.size(0) == input.size(0), "[", op, "] target has ", target.size(0),
                " entries but input has batch ", input.size(0));
    for (int d = 1; d < target.rank(); ++d) {
      EMBER_CHECK(target.size(d) == input.size(d + 1), "[", op, "] target shape ", target.shape(),
                  " does not match input shape ", input.shape(), " without its class dim 1");
    }
    ct.input = input;
    ct.target = target;
  }
  ct.classes = ct.input.size(1);
  if (weight.defined()) {
    EMBER_CHECK(weight.rank() == 1 && weight.size(0) == ct.classes, "[", op,
                "] weight must have shape [", ct.classes, "] (one per class), got ",
                weight.shape());
    ct.weight = constant_weight(weight, input, op, "weight");
  }
  const DynTensor t = cast(detach(ct.target), DType::i64);
  ct.valid = ne(t, ignore_index);
  ct.target = where(ct.valid, t, 0);
  RangeCheck check;  // where the targets live: no host read
  check.hi = static_cast<double>(ct.classes - 1);
  check.op = op;
  check.arg0 = static_cast<double>(ct.classes);
  check.arg1 = static_cast<double>(ignore_index);
  check.message = target_class_message;
  check_range(ct.target, check);
  DynTensor w = ct.weight.defined()
                    ? reshape(index_select(ct.weight, 0, flatten(ct.target)), ct.target.shape())
                    : ones(ct.target.shape(), input.dtype(), input.device());
  ct.weights = where(ct.valid, w, 0.0);
  return ct;
}

/// The weight viewed along dim 1 of an [N, C, d...] tensor: [1, C, 1...].
DynTensor class_view(const DynTensor& weight, int rank) {
  Shape s = Shape::filled(rank, 1);
  s[1] = weight.size(0);
  return reshape(weight, s);
}

/// -input[target] * weight[target], reduced. Mean divides by the summed target weights; when
/// every target is ignored the loss is NaN (0 / 0) and the gradient 0, as in PyTorch.
DynTensor nll_of(const DynTensor& picked, const ClassTargets& ct, Reduction r) {
  switch (r) {
    case Reduction::None: {
      const DynTensor elems = neg(mul(picked, ct.weights));
      return ct.unbatched ? reshape(elems, Shape{}) : elems;
    }
    case Reduction::Sum:
      return neg(sum(mul(picked, ct.weights)));
    default: {
      const DynTensor total = sum(ct.weights);
      const DynTensor scale = where(ct.valid, div(ct.weights, total), 0.0);
      const DynTensor nan_if_none = div(mul(total, 0.0), total);  // 0, or NaN when total is 0
      return add(neg(sum(mul(picked, scale))), nan_if_none);
    }
  }
}

// cross_entropy with class indices as one node. Per element i (w = 1 without weights,
// W = sum_c w_c, e = label_smoothing, v_i = 0 where ignored):
//   loss_i = v_i [(1 - e) w_{t_i} (-logp_{i,t_i}) + (e / C) sum_c w_c (-logp_{i,c})]
//   dloss_i / dx_{i,k} = v_i [(1 - e) w_{t_i} (p_{i,k} - [k = t_i]) + (e / C) (W p_{i,k} - w_k)]
// Whether cross_entropy runs on the backend's fused row kernels: class indices, [N, C] logits,
// no label smoothing (its extra terms are the composite's).
bool rows_fused(const DynTensor& input, const DynTensor& target, const CrossEntropyOptions& o) {
  return input.defined() && target.defined() && !is_floating(target.dtype()) && input.rank() == 2 &&
         o.label_smoothing == 0.0 && fused_softmax_rows(input);
}

// cross_entropy on the fused row kernels: lse from one read of the logits (in f32 whatever their
// type), the picked log-probabilities from N gathered logits, and a backward that writes
// coef * (softmax - one_hot) in the logits' type in one pass. The loss is f32 under autocast and
// in the logits' type otherwise (as the composite).
DynTensor cross_entropy_rows(const DynTensor& input, const DynTensor& target,
                             const CrossEntropyOptions& o) {
  constexpr const char* op = "cross_entropy";
  check_reduction(o.reduction, op);
  const ClassTargets ct = class_targets(input, target, o.weight, o.ignore_index, op);
  const DynTensor x = contiguous(detach(ct.input));
  const DynTensor lse = logsumexp_rows(x);
  const DynTensor picked =
      sub(cast(squeeze(gather(x, 1, unsqueeze(ct.target, 1)), 1), DType::f32), lse);
  const DynTensor w = cast(ct.weights, DType::f32);
  const DynTensor elems = neg(mul(picked, w));
  const DynTensor denom = o.reduction == Reduction::Mean ? sum(w) : DynTensor();
  DynTensor out = o.reduction == Reduction::None  ? elems
                  : o.reduction == Reduction::Sum ? sum(elems)
                                                  : div(sum(elems), denom);
  if (autodiff::should_record({&ct.input})) {
    autodiff::record(
        op, {&ct.input}, out,
        [x_in = ct.input, x, lse, target = ct.target, w, valid = ct.valid, denom,
         r = o.reduction](autodiff::BackwardArgs& a) {
          DynTensor g = cast(a.grad, DType::f32);
          if (r == Reduction::Mean) g = div(g, denom);
          if (r != Reduction::None) g = expand(g, w.shape());
          const DynTensor coef = where(valid, mul(g, w), 0.0);  // not 0 * inf when all ignored
          if (a.options.create_graph) {  // from the tracked input, so that it has a gradient
            const DynTensor c = unsqueeze(coef, 1);
            const DynTensor p = mul(softmax(cast(x_in, DType::f32), 1), c);
            a.input_grads[0] = cast(scatter_add(p, 1, unsqueeze(target, 1), neg(c)), x_in.dtype());
          } else {
            a.input_grads[0] = cross_entropy_rows_grad(x, lse, target, coef);
          }
        });
  }
  return ember::detail::autocast_on(input) ? out : cast(out, input.dtype());
}

DynTensor cross_entropy_fused(const DynTensor& input, const DynTensor& target,
                              const CrossEntropyOptions& o) {
  constexpr const char* op = "cross_entropy";
  if (rows_fused(input, target, o)) return cross_entropy_rows(input, target, o);
  EMBER_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, "[", op,
              "] label_smoothing must be in [0, 1], got ", o.label_smoothing);
  if (input.dtype() == DType::f16 || input.dtype() == DType::bf16) {
    CrossEntropyOptions f32 = o;
    if (o.weight.defined()) f32.weight = cast(o.weight, DType::f32);
    return cast(cross_entropy_fused(cast(input, DType::f32), target, f32), input.dtype());
  }
  check_reduction(o.reduction, op);
  const ClassTargets ct = class_targets(input, target, o.weight, o.ignore_index, op);
  const double eps = o.label_smoothing;
  const int64_t classes = ct.classes;
  const int rank = ct.input.rank();
  const DynTensor index = unsqueeze(ct.target, 1);

  // log_softmax's own steps, kept apart: the picked log-probabilities need only
  // shifted[t] - lse, and the backward reuses exp(shifted) / sum as the softmax (one exp in all).
  const DynTensor shifted = sub(detach(ct.input), amax(detach(ct.input), {1}, true));
  const DynTensor e = exp(shifted);
  const DynTensor total = sum(e, {1}, true);
  const DynTensor lse = squeeze(log(total), 1);
  const DynTensor picked = sub(squeeze(gather(shifted, 1, index), 1), lse);
  DynTensor elems = neg(mul(picked, ct.weights));
  // W = sum_c w_c, a tensor when there are weights (not read back to the host).
  const DynTensor weight_total = eps > 0.0 && ct.weight.defined() ? sum(ct.weight) : DynTensor();
  auto times_w = [weight_total, classes](const DynTensor& v) {
    return weight_total.defined() ? mul(v, weight_total) : mul(v, static_cast<double>(classes));
  };
  const DynTensor smooth_w =
      eps > 0.0 && ct.weight.defined() ? class_view(ct.weight, rank) : DynTensor();
  if (eps > 0.0) {
    // sum_c w_c logp_c = sum_c w_c shifted_c - W lse
    const DynTensor wsum = sum(smooth_w.defined() ? mul(shifted, smooth_w) : shifted, {1});
    const DynTensor smooth = where(ct.valid, neg(sub(wsum, times_w(lse))), 0.0);
    elems = add(mul(elems, 1.0 - eps), mul(smooth, eps / static_cast<double>(classes)));
  }
  const DynTensor denom = o.reduction == Reduction::Mean ? sum(ct.weights) : DynTensor();
  DynTensor out = o.reduction == Reduction::None  ? elems
                  : o.reduction == Reduction::Sum ? sum(elems)
                                                  : div(sum(elems), denom);
  if (!autodiff::should_record({&ct.input})) {
    return ct.unbatched && o.reduction == Reduction::None ? reshape(out, Shape{}) : out;
  }
  const DynTensor probs = div(e, total);
  autodiff::record(
      op, {&ct.input}, out,
      [x = ct.input, probs = probs.raw(), index, weights = ct.weights, valid = ct.valid, denom,
       smooth_w, eps, classes, times_w, r = o.reduction](autodiff::BackwardArgs& a) {
        // Per-element upstream gradient, of the target's shape.
        DynTensor g = a.grad;
        if (r == Reduction::Mean) g = div(g, denom);
        if (r != Reduction::None) g = expand(g, weights.shape());
        // Under create_graph, p is recomputed from the tracked input so that it has a gradient.
        const DynTensor p = a.options.create_graph ? softmax(x, 1) : DynTensor(probs);
        // w_t g, 0 where ignored (not 0 * inf when every target is ignored and denom is 0).
        DynTensor coef = where(valid, mul(g, weights), 0.0);
        DynTensor gx;
        if (eps > 0.0) {
          coef = mul(coef, 1.0 - eps);
          const DynTensor b = mul(where(valid, g, 0.0), eps / static_cast<double>(classes));
          gx = mul(p, unsqueeze(add(coef, times_w(b)), 1));
          const DynTensor b1 = unsqueeze(b, 1);
          gx = sub(gx, smooth_w.defined() ? mul(b1, smooth_w) : b1);
        } else {
          gx = mul(p, unsqueeze(coef, 1));
        }
        a.input_grads[0] = scatter_add(gx, 1, index, neg(unsqueeze(coef, 1)));
      });
  return ct.unbatched && o.reduction == Reduction::None ? reshape(out, Shape{}) : out;
}

DynTensor cross_entropy_probs(const DynTensor& input, const DynTensor& target,
                              const CrossEntropyOptions& o) {
  constexpr const char* op = "cross_entropy";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "probability target");
  check_reduction(o.reduction, op);
  EMBER_CHECK(o.ignore_index < 0, "[", op,
              "] ignore_index is not supported for probability targets, got ", o.ignore_index);
  EMBER_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, "[", op,
              "] label_smoothing must be in [0, 1], got ", o.label_smoothing);
  const int64_t cdim = input.rank() == 1 ? 0 : 1;
  const int64_t classes = input.size(static_cast<int>(cdim));
  DynTensor t = target;
  if (o.label_smoothing > 0.0) {
    t = add(mul(t, 1.0 - o.label_smoothing), o.label_smoothing / static_cast<double>(classes));
  }
  DynTensor prod = mul(log_softmax(input, cdim), t);
  if (o.weight.defined()) {
    EMBER_CHECK(o.weight.rank() == 1 && o.weight.size(0) == classes, "[", op,
                "] weight must have shape [", classes, "] (one per class), got ", o.weight.shape());
    const DynTensor w = constant_weight(o.weight, input, op, "weight");
    prod = mul(prod, input.rank() == 1 ? w : class_view(w, input.rank()));
  }
  switch (o.reduction) {
    case Reduction::None:
      return neg(sum(prod, {cdim}));
    case Reduction::Sum:
      return neg(sum(prod));
    default:
      return div(neg(sum(prod)), static_cast<double>(classes > 0 ? input.numel() / classes : 0));
  }
}

}  // namespace

namespace detail {
Tensor<0> reduced(DynTensor loss, Reduction reduction, const char* op) {
  EMBER_CHECK(reduction != Reduction::None, "[", op,
              "] the typed form returns the reduced 0-d loss; for Reduction::None call the "
              "DynTensor form (pass x.dyn())");
  return Tensor<0>(std::move(loss));
}
}  // namespace detail

DynTensor cross_entropy(const DynTensor& input, const DynTensor& target,
                        const CrossEntropyOptions& options) {
  if (widened(input) && !rows_fused(input, target, options)) {
    return cross_entropy(cast(input, DType::f32), target, options);
  }
  check_floating(input, "cross_entropy", "input");
  EMBER_CHECK(target.defined(), "[cross_entropy] target is undefined");
  return as_op("cross_entropy", [&] {
    return is_floating(target.dtype()) ? cross_entropy_probs(input, target, options)
                                       : cross_entropy_fused(input, target, options);
  });
}

DynTensor nll_loss(const DynTensor& input, const DynTensor& target, const NllLossOptions& o) {
  if (widened(input)) return nll_loss(cast(input, DType::f32), target, o);
  constexpr const char* op = "nll_loss";
  check_reduction(o.reduction, op);
  const ClassTargets ct = class_targets(input, target, o.weight, o.ignore_index, op);
  return nll_of(squeeze(gather(ct.input, 1, unsqueeze(ct.target, 1)), 1), ct, o.reduction);
}

DynTensor mse_loss(const DynTensor& input, const DynTensor& target, Reduction reduction) {
  if (widened(input) || widened(target)) return mse_loss(widen(input), widen(target), reduction);
  check_floating(input, "mse_loss", "input");
  check_same_shape(input, target, "mse_loss", "target");
  return reduce_loss(square(sub(input, target)), reduction, "mse_loss");
}

DynTensor l1_loss(const DynTensor& input, const DynTensor& target, Reduction reduction) {
  if (widened(input) || widened(target)) return l1_loss(widen(input), widen(target), reduction);
  check_floating(input, "l1_loss", "input");
  check_same_shape(input, target, "l1_loss", "target");
  return reduce_loss(abs(sub(input, target)), reduction, "l1_loss");
}

DynTensor huber_loss(const DynTensor& input, const DynTensor& target, Reduction reduction,
                     double delta) {
  if (widened(input) || widened(target)) {
    return huber_loss(widen(input), widen(target), reduction, delta);
  }
  check_floating(input, "huber_loss", "input");
  check_same_shape(input, target, "huber_loss", "target");
  EMBER_CHECK(delta > 0.0, "[huber_loss] delta must be positive, got ", delta);
  const DynTensor d = sub(input, target);
  const DynTensor ad = abs(d);
  const DynTensor loss =
      where(lt(ad, delta), mul(square(d), 0.5), mul(sub(ad, 0.5 * delta), delta));
  return reduce_loss(loss, reduction, "huber_loss");
}

DynTensor smooth_l1_loss(const DynTensor& input, const DynTensor& target, Reduction reduction,
                         double beta) {
  check_floating(input, "smooth_l1_loss", "input");
  check_same_shape(input, target, "smooth_l1_loss", "target");
  EMBER_CHECK(beta >= 0.0, "[smooth_l1_loss] beta must be non-negative, got ", beta);
  const DynTensor d = sub(input, target);
  const DynTensor ad = abs(d);
  if (beta == 0.0) return reduce_loss(ad, reduction, "smooth_l1_loss");
  const DynTensor loss = where(lt(ad, beta), mul(square(d), 0.5 / beta), sub(ad, 0.5 * beta));
  return reduce_loss(loss, reduction, "smooth_l1_loss");
}

DynTensor binary_cross_entropy(const DynTensor& input, const DynTensor& target,
                               const BinaryCrossEntropyOptions& o) {
  constexpr const char* op = "binary_cross_entropy";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  check_reduction(o.reduction, op);
  RangeCheck check;  // where the values live: no host read
  check.hi = 1.0;
  check.op = op;
  check.message = probability_message;
  check_range(input, check);
  check.arg0 = 1;  // the target
  check_range(target, check);
  // -(t log x + (1 - t) log(1 - x)), each log clamped at -100 as ATen does. One node: through
  // the clamp, the input's derivative would be 0 * inf = NaN at x = 0 or 1, where ATen's rule
  // (x - t) / max(x (1 - x), 1e-12) stays finite.
  const auto log_x = [](const DynTensor& x) { return clamp_min(log(x), -100.0); };
  const auto log_1mx = [](const DynTensor& x) { return clamp_min(log1p(neg(x)), -100.0); };
  const DynTensor x = detach(input), t = detach(target);
  DynTensor loss = sub(mul(sub(t, 1.0), log_1mx(x)), mul(t, log_x(x)));
  if (autodiff::should_record({&input, &target})) {
    autodiff::record(
        op, {&input, &target}, loss, [input, target, log_x, log_1mx](autodiff::BackwardArgs& a) {
          if (a.needs(0)) {
            // ATen's EPSILON is the float 1e-12.
            const DynTensor d = clamp_min(mul(input, sub(1.0, input)), static_cast<double>(1e-12f));
            a.input_grads[0] = mul(a.grad, div(sub(input, target), d));
          }
          // The clamped logs' difference: finite where ATen's -logit(x) is inf.
          if (a.needs(1)) {
            a.input_grads[1] = mul(a.grad, sub(log_1mx(input), log_x(input)));
          }
        });
  }
  if (o.weight.defined()) {
    EMBER_CHECK(broadcasts_to(o.weight.shape(), input.shape()), "[", op, "] weight shape ",
                o.weight.shape(), " does not broadcast to input shape ", input.shape());
    loss = mul(loss, constant_weight(o.weight, input, op, "weight"));
  }
  return reduce_loss(loss, o.reduction, op);
}

DynTensor binary_cross_entropy_with_logits(const DynTensor& input, const DynTensor& target,
                                           const BceWithLogitsOptions& o) {
  if (widened(input) || widened(target)) {
    return binary_cross_entropy_with_logits(widen(input), widen(target), o);
  }
  constexpr const char* op = "binary_cross_entropy_with_logits";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  check_reduction(o.reduction, op);
  DynTensor w, pw;
  if (o.weight.defined()) {
    EMBER_CHECK(broadcasts_to(o.weight.shape(), input.shape()), "[", op, "] weight shape ",
                o.weight.shape(), " does not broadcast to input shape ", input.shape());
    w = constant_weight(o.weight, input, op, "weight");
  }
  if (o.pos_weight.defined()) {
    EMBER_CHECK(broadcasts_to(o.pos_weight.shape(), input.shape()), "[", op, "] pos_weight shape ",
                o.pos_weight.shape(), " does not broadcast to input shape ", input.shape());
    pw = constant_weight(o.pos_weight, input, op, "pos_weight");
  }
  // loss = w [(1 - t) x - lw log_sigmoid(x)], lw = 1 + (pw - 1) t, with the stable
  // log_sigmoid(x) = -(max(-x, 0) + log1p(exp(-|x|))).
  const auto log_sigmoid = [](const DynTensor& x) {
    return neg(add(relu(neg(x)), log1p(exp(neg(abs(x))))));
  };
  const DynTensor x = detach(input), t = detach(target);
  const DynTensor ls = log_sigmoid(x);
  DynTensor loss =
      sub(mul(sub(1.0, t), x), pw.defined() ? mul(add(mul(sub(pw, 1.0), t), 1.0), ls) : ls);
  if (w.defined()) loss = mul(loss, w);
  if (autodiff::should_record({&input, &target})) {
    autodiff::record(op, {&input, &target}, loss,
                     [input, target, w, pw, log_sigmoid](autodiff::BackwardArgs& a) {
                       const DynTensor g = w.defined() ? mul(a.grad, w) : a.grad;
                       const DynTensor& xx = input;
                       const DynTensor& tt = target;
                       if (a.needs(0)) {
                         // d/dx = (1 - t) - lw sigmoid(-x)
                         const DynTensor s = sigmoid(neg(xx));
                         const DynTensor lw_s =
                             pw.defined() ? mul(add(mul(sub(pw, 1.0), tt), 1.0), s) : s;
                         a.input_grads[0] = mul(g, sub(sub(1.0, tt), lw_s));
                       }
                       if (a.needs(1)) {
                         // d/dt = -x - (pw - 1) log_sigmoid(x)
                         DynTensor d = neg(xx);
                         if (pw.defined()) d = sub(d, mul(sub(pw, 1.0), log_sigmoid(xx)));
                         a.input_grads[1] = mul(g, d);
                       }
                     });
  }
  return reduce_loss(loss, o.reduction, op);
}

DynTensor kl_div(const DynTensor& input, const DynTensor& target, Reduction reduction,
                 bool log_target) {
  if (widened(input) || widened(target)) {
    return kl_div(widen(input), widen(target), reduction, log_target);
  }
  check_floating(input, "kl_div", "input");
  check_same_shape(input, target, "kl_div", "target");
  check_floating(target, "kl_div", "target");
  DynTensor loss;
  if (log_target) {
    loss = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t * input; t log t is 0 at t = 0 (log of 1 there keeps gradients finite).
    const DynTensor safe = where(eq(target, 0.0), ones_like(target), target);
    loss = sub(mul(target, log(safe)), mul(target, input));
  }
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Mean:
      return mean(loss);
    case Reduction::Sum:
      return sum(loss);
    case Reduction::BatchMean:
      return input.rank() == 0 ? sum(loss) : div(sum(loss), static_cast<double>(input.size(0)));
  }
  EMBER_FAIL("[kl_div] unknown reduction ", reduction_name(reduction));
}

DynTensor cosine_embedding_loss(const DynTensor& input1, const DynTensor& input2,
                                const DynTensor& target, double margin, Reduction reduction) {
  constexpr const char* op = "cosine_embedding_loss";
  check_floating(input1, op, "input1");
  check_same_shape(input1, input2, op, "input2");
  EMBER_CHECK(input1.rank() == 1 || input1.rank() == 2, "[", op,
              "] inputs must be [N, D] or [D], got ", input1.shape());
  EMBER_CHECK(target.defined(), "[", op, "] target is undefined");
  EMBER_CHECK(target.rank() == input1.rank() - 1 &&
                  (target.rank() == 0 || target.size(0) == input1.size(0)),
              "[", op, "] target shape ", target.shape(), " does not fit inputs of shape ",
              input1.shape(), ": one entry per row expected");
  // As ATen: cos = <x1, x2> / sqrt((|x1|^2 + eps) (|x2|^2 + eps)), eps = 1e-12.
  constexpr double kEps = 1e-12;
  const int64_t dim = input1.rank() - 1;
  const DynTensor dot = sum(mul(input1, input2), {dim});
  const DynTensor mag1 = add(sum(square(input1), {dim}), kEps);
  const DynTensor mag2 = add(sum(square(input2), {dim}), kEps);
  const DynTensor cos = div(dot, sqrt(mul(mag1, mag2)));
  const DynTensor pos = where(eq(target, 1), sub(1.0, cos), 0.0);
  const DynTensor negative = where(eq(target, -1), clamp_min(sub(cos, margin), 0.0), 0.0);
  return reduce_loss(add(pos, negative), reduction, op);
}

DynTensor margin_ranking_loss(const DynTensor& input1, const DynTensor& input2,
                              const DynTensor& target, double margin, Reduction reduction) {
  constexpr const char* op = "margin_ranking_loss";
  check_floating(input1, op, "input1");
  check_same_shape(input1, input2, op, "input2");
  check_same_shape(input1, target, op, "target");
  const DynTensor loss = clamp_min(add(mul(neg(target), sub(input1, input2)), margin), 0.0);
  return reduce_loss(loss, reduction, op);
}

}  // namespace ember::nn

namespace ember::nn {
namespace {
std::string negative_var_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] var must be non-negative, got ", e.value);
}
}  // namespace

DynTensor poisson_nll_loss(const DynTensor& input, const DynTensor& target,
                           const PoissonNllLossOptions& o) {
  constexpr const char* op = "poisson_nll_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  check_reduction(o.reduction, op);
  DynTensor loss = o.log_input ? sub(exp(input), mul(target, input))
                               : sub(input, mul(target, log(add(input, o.eps))));
  if (o.full) {
    // Stirling's log(t!) where t > 1, else 0; t is 1 in the unused branch, so that its
    // gradient is 0 rather than 0 * log(0) = NaN (ATen gives NaN there for t = 0).
    const DynTensor big = gt(target, 1.0);
    const DynTensor t = where(big, target, 1.0);
    const DynTensor stirling =
        add(sub(mul(t, log(t)), t), mul(log(mul(t, 2.0 * std::numbers::pi)), 0.5));
    loss = add(loss, where(big, stirling, 0.0));
  }
  return reduce_loss(loss, o.reduction, op);
}

DynTensor gaussian_nll_loss(const DynTensor& input, const DynTensor& target, const DynTensor& var,
                            const GaussianNllLossOptions& o) {
  constexpr const char* op = "gaussian_nll_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  check_floating(var, op, "var");
  check_reduction(o.reduction, op);
  EMBER_CHECK(o.eps >= 0.0, "[", op, "] eps must be non-negative, got ", o.eps);
  // var: the input's shape (heteroscedastic), or one variance per row of the last dim.
  DynTensor v = var;
  if (var.shape() != input.shape()) {
    const int r = input.rank();
    Shape lead;
    for (int d = 0; d + 1 < r; ++d) lead.push_back(input.size(d));
    bool row_shaped = r >= 1 && var.rank() == r && var.size(r - 1) == 1;
    for (int d = 0; row_shaped && d + 1 < r; ++d) row_shaped = var.size(d) == input.size(d);
    if (r >= 1 && var.shape() == lead) {
      v = unsqueeze(var, -1);
    } else {
      EMBER_CHECK(row_shaped, "[", op, "] var shape ", var.shape(), " does not fit input shape ",
                  input.shape(),
                  ": it must be the input's shape, or that shape without its last "
                  "dim or with last dim 1");
    }
  }
  RangeCheck check;  // where var lives: no host read
  check.lo = 0.0;
  check.hi = INFINITY;
  check.op = op;
  check.message = negative_var_message;
  check_range(var, check);
  // Clamped at eps in value only: PyTorch clamps in place under no_grad, so the gradient
  // reaches var as if it were not clamped.
  v = add(detach(clamp_min(v, o.eps)), sub(v, detach(v)));
  DynTensor loss = mul(add(log(v), div(square(sub(input, target)), v)), 0.5);
  if (o.full) loss = add(loss, 0.5 * std::log(2.0 * std::numbers::pi));
  return reduce_loss(loss, o.reduction, op);
}

DynTensor lp_loss(const DynTensor& input, const DynTensor& target, double p, Reduction reduction) {
  if (widened(input) || widened(target)) return lp_loss(widen(input), widen(target), p, reduction);
  constexpr const char* op = "lp_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  EMBER_CHECK(p > 0.0, "[", op, "] p must be positive, got ", p);
  const DynTensor d = sub(input, target);
  // abs and square for 1 and 2: the same values, and gradients without pow's at d = 0.
  const DynTensor loss = p == 1.0 ? abs(d) : p == 2.0 ? square(d) : pow(abs(d), p);
  return reduce_loss(loss, reduction, op);
}

}  // namespace ember::nn
