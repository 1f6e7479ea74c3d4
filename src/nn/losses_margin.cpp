// Margin and embedding losses: triplet, hinge embedding, the multi-class and multi-label hinge
// losses and the soft-margin family, composed from tensor ops (autodiff differentiates them to
// any order). Formulas follow ATen's Loss.cpp, LossMultiMargin.cpp and LossMultiLabelMargin.cpp,
// and torch.nn.functional for multilabel_soft_margin_loss; docs/NN.md lists the decisions.
#include "ember/tensor/sync.hpp"
#include "losses_internal.hpp"

namespace ember::nn {
using namespace loss_detail;
namespace {

std::string class_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] target class ", e.index, " is out of range for ",
                            static_cast<int64_t>(e.check.arg0), " classes");
}

/// Fails unless the Int target's values lie in [lo, classes - 1] (where they live: no host read).
void check_classes(const DynTensor& target, int64_t lo, int64_t classes, const char* op) {
  RangeCheck check;
  check.lo = static_cast<double>(lo);
  check.hi = static_cast<double>(classes - 1);
  check.op = op;
  check.arg0 = static_cast<double>(classes);
  check.message = class_message;
  check_range(target, check);
}

/// The per-sample losses [N] of an unbatched input ([C], made [1, C]) reduced: None gives [].
DynTensor reduce_samples(const DynTensor& per_sample, bool unbatched, Reduction r, const char* op) {
  if (r == Reduction::None && unbatched) return reshape(per_sample, Shape{});
  return reduce_loss(per_sample, r, op);
}

}  // namespace

DynTensor triplet_margin_loss(const DynTensor& anchor, const DynTensor& positive,
                              const DynTensor& negative, const TripletMarginLossOptions& o) {
  constexpr const char* op = "triplet_margin_loss";
  check_floating(anchor, op, "anchor");
  check_same_shape(anchor, positive, op, "positive");
  check_same_shape(anchor, negative, op, "negative");
  EMBER_CHECK(anchor.rank() == 1 || anchor.rank() == 2, "[", op,
              "] inputs must be [N, D] or [D], got ", anchor.shape());
  EMBER_CHECK(o.p > 0.0, "[", op, "] p must be positive, got ", o.p);
  check_reduction(o.reduction, op);
  const DynTensor d_pos = pairwise_distance(anchor, positive, o.p, o.eps);
  DynTensor d_neg = pairwise_distance(anchor, negative, o.p, o.eps);
  if (o.swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, o.p, o.eps));
  return reduce_loss(clamp_min(add(sub(d_pos, d_neg), o.margin), 0.0), o.reduction, op);
}

DynTensor hinge_embedding_loss(const DynTensor& input, const DynTensor& target, double margin,
                               Reduction reduction) {
  constexpr const char* op = "hinge_embedding_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  // As ATen: a target neither 1 nor -1 takes both terms.
  const DynTensor hinge = where(ne(target, 1), clamp_min(sub(margin, input), 0.0), 0.0);
  return reduce_loss(add(hinge, where(ne(target, -1), input, 0.0)), reduction, op);
}

DynTensor multilabel_margin_loss(const DynTensor& input, const DynTensor& target,
                                 Reduction reduction) {
  constexpr const char* op = "multilabel_margin_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  EMBER_CHECK(is_integral(target.dtype()), "[", op, "] target must be an Int tensor, got ",
              target.dtype());
  EMBER_CHECK(input.rank() == 1 || input.rank() == 2, "[", op,
              "] input must be [N, C] or [C], got ", input.shape());
  check_reduction(reduction, op);
  const bool unbatched = input.rank() == 1;
  const DynTensor x = unbatched ? unsqueeze(input, 0) : input;
  const DynTensor t = cast(detach(unbatched ? unsqueeze(target, 0) : target), DType::i64);
  const int64_t classes = x.size(1);
  check_classes(t, -1, classes, op);
  // The targets are the entries before the first -1 ([N, j]); is_target marks them by class.
  const DynTensor valid = gt(cumprod(cast(ne(t, -1), DType::i64), 1), 0);
  const DynTensor tc = where(valid, t, 0);
  const DynTensor cls = reshape(arange(0, classes, 1, DType::i64, x.device()), {1, 1, classes});
  const DynTensor is_target =
      any(logical_and(eq(unsqueeze(tc, 2), cls), unsqueeze(valid, 2)), {1});  // [N, i]
  // max(0, 1 - x[t_j] + x[i]) over valid targets j and non-target classes i: [N, j, i].
  const DynTensor z = relu(add(sub(1.0, unsqueeze(gather(x, 1, tc), 2)), unsqueeze(x, 1)));
  const DynTensor pairs = logical_and(unsqueeze(valid, 2), unsqueeze(logical_not(is_target), 1));
  const DynTensor per_sample = div(sum(where(pairs, z, 0.0), {1, 2}), static_cast<double>(classes));
  return reduce_samples(per_sample, unbatched, reduction, op);
}

DynTensor multilabel_soft_margin_loss(const DynTensor& input, const DynTensor& target,
                                      const DynTensor& weight, Reduction reduction) {
  constexpr const char* op = "multilabel_soft_margin_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  EMBER_CHECK(input.rank() >= 1, "[", op, "] input must have a class dim, got shape ",
              input.shape());
  check_reduction(reduction, op);
  // -(t log_sigmoid(x) + (1 - t) log_sigmoid(-x)), with log_sigmoid(x) = -log(1 + exp(-x)).
  DynTensor loss = add(mul(target, log1p_exp(neg(input))), mul(sub(1.0, target), log1p_exp(input)));
  if (weight.defined()) {
    EMBER_CHECK(broadcasts_to(weight.shape(), input.shape()), "[", op, "] weight shape ",
                weight.shape(), " does not broadcast to input shape ", input.shape());
    loss = mul(loss, constant_weight(weight, input, op, "weight"));
  }
  const double classes = static_cast<double>(input.size(input.rank() - 1));
  return reduce_loss(div(sum(loss, {-1}), classes), reduction, op);
}

DynTensor multi_margin_loss(const DynTensor& input, const DynTensor& target,
                            const MultiMarginLossOptions& o) {
  constexpr const char* op = "multi_margin_loss";
  check_floating(input, op, "input");
  EMBER_CHECK(target.defined(), "[", op, "] target is undefined");
  EMBER_CHECK(is_integral(target.dtype()), "[", op,
              "] target must be an Int tensor of class indices, got ", target.dtype());
  EMBER_CHECK(input.rank() == 1 || input.rank() == 2, "[", op,
              "] input must be [N, C] or [C], got ", input.shape());
  EMBER_CHECK(
      target.rank() == input.rank() - 1 && (target.rank() == 0 || target.size(0) == input.size(0)),
      "[", op, "] target shape ", target.shape(), " does not fit input shape ", input.shape(),
      ": one class index per row expected");
  EMBER_CHECK(o.p == 1 || o.p == 2, "[", op, "] p must be 1 or 2, got ", o.p);
  check_reduction(o.reduction, op);
  const bool unbatched = input.rank() == 1;
  const DynTensor x = unbatched ? unsqueeze(input, 0) : input;
  const int64_t classes = x.size(1);
  const DynTensor t = cast(detach(reshape(target, {x.size(0)})), DType::i64);
  check_classes(t, 0, classes, op);
  const DynTensor index = unsqueeze(t, 1);
  // max(0, margin - x[y] + x[i])^p for every class i but y itself.
  DynTensor h = relu(add(sub(o.margin, gather(x, 1, index)), x));
  if (o.p == 2) h = square(h);
  const DynTensor cls = reshape(arange(0, classes, 1, DType::i64, x.device()), {1, classes});
  h = where(ne(cls, index), h, 0.0);
  if (o.weight.defined()) {
    EMBER_CHECK(o.weight.rank() == 1 && o.weight.size(0) == classes, "[", op,
                "] weight must have shape [", classes, "] (one per class), got ", o.weight.shape());
    const DynTensor w = constant_weight(o.weight, input, op, "weight");
    h = mul(h, unsqueeze(index_select(w, 0, t), 1));
  }
  const DynTensor per_sample = div(sum(h, {1}), static_cast<double>(classes));
  return reduce_samples(per_sample, unbatched, o.reduction, op);
}

DynTensor soft_margin_loss(const DynTensor& input, const DynTensor& target, Reduction reduction) {
  constexpr const char* op = "soft_margin_loss";
  check_floating(input, op, "input");
  check_same_shape(input, target, op, "target");
  check_floating(target, op, "target");
  // ATen's log1p(exp(-y x)) overflows to inf past -y x ~ 88 (f32); this form does not.
  return reduce_loss(log1p_exp(neg(mul(input, target))), reduction, op);
}

}  // namespace ember::nn
