// The sequence losses as composites. ctc_loss: the forward (alpha) recursion of Graves et al.
// (2006) in log space, one step of tensor ops per time step over every sample and extended-label
// state at once, so it runs on every backend and autodiff gives its gradient. rnnt_loss: the
// transducer lattice of Graves (2012), one step per anti-diagonal t + u of the [T, U + 1] grid.
// Impossible states hold a large finite negative value instead of -inf: exp() of it is exactly 0
// next to any real log-probability, and no step ever forms inf - inf, so the gradient has no NaN to
// mask. A loss that comes out that large marks an infeasible alignment: inf, or 0 with
// zero_infinity.
#include <limits>

#include "ember/tensor/sync.hpp"
#include "losses_internal.hpp"

namespace ember::nn {
using namespace loss_detail;
namespace {

constexpr const char* kOp = "ctc_loss";
constexpr double kImpossible = -1e30;  // log of "no path"; fits f32
constexpr double kInfeasible = 1e29;   // a loss above this had no path

std::string length_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] ", e.check.arg1 == 0 ? "input" : "target",
                            " length ", e.index, " is out of range [0, ",
                            static_cast<int64_t>(e.check.arg0), "]");
}

std::string target_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] target class ", e.index, " is out of range for ",
                            static_cast<int64_t>(e.check.arg0), " classes");
}

void check_values(const DynTensor& x, int64_t hi, double which,
                  std::string (*message)(const RangeError&), double arg0) {
  RangeCheck check;
  check.hi = static_cast<double>(hi);
  check.op = kOp;
  check.arg0 = arg0;
  check.arg1 = which;
  check.message = message;
  check_range(x, check);
}

/// An Int tensor of lengths, as i64 [batch] (a 0-d one for an unbatched call).
DynTensor lengths(const DynTensor& l, int64_t batch, bool unbatched, const char* what) {
  EMBER_CHECK(l.defined(), "[", kOp, "] ", what, " is undefined");
  EMBER_CHECK(is_integral(l.dtype()), "[", kOp, "] ", what, " must be an Int tensor, got ",
              l.dtype());
  EMBER_CHECK(unbatched ? l.numel() == 1 && l.rank() <= 1 : l.rank() == 1 && l.size(0) == batch,
              "[", kOp, "] ", what, " must have shape [", batch, "]", unbatched ? " or []" : "",
              ", got ", l.shape());
  return reshape(cast(detach(l), DType::i64), {batch});
}

/// Concatenated targets (1-D, sum(target_lengths)) laid out padded [N, max length].
DynTensor pad_targets(const DynTensor& flat, const std::vector<int64_t>& lens, Device device) {
  int64_t total = 0, longest = 0;
  std::vector<int64_t> index;
  for (const int64_t n : lens) {
    EMBER_CHECK(n >= 0, "[", kOp, "] target lengths must be non-negative, got ", n);
    longest = std::max(longest, n);
  }
  for (const int64_t n : lens) {
    for (int64_t s = 0; s < longest; ++s) index.push_back(s < n ? total + s : 0);
    total += n;
  }
  EMBER_CHECK(total == flat.numel(), "[", kOp, "] concatenated targets have ", flat.numel(),
              " entries but target_lengths sum to ", total);
  const auto batch = static_cast<int64_t>(lens.size());
  if (longest == 0) return zeros({batch, 0}, DType::i64, device);
  const DynTensor idx = from_data(TensorData::from(index, {batch * longest}), device);
  return reshape(index_select(cast(detach(flat), DType::i64), 0, idx), {batch, longest});
}

DynTensor ctc(const DynTensor& log_probs, const DynTensor& targets, const DynTensor& input_lengths,
              const DynTensor& target_lengths, const std::vector<int64_t>* host_target_lengths,
              const CtcLossOptions& o) {
  check_floating(log_probs, kOp, "log_probs");
  EMBER_CHECK(log_probs.rank() == 3 || log_probs.rank() == 2, "[", kOp,
              "] log_probs must be [T, N, C] or [T, C], got shape ", log_probs.shape());
  check_reduction(o.reduction, kOp);
  if (log_probs.dtype() == DType::f16 || log_probs.dtype() == DType::bf16) {
    return cast(ctc(cast(log_probs, DType::f32), targets, input_lengths, target_lengths,
                    host_target_lengths, o),
                log_probs.dtype());
  }
  const bool unbatched = log_probs.rank() == 2;
  const DynTensor lp = unbatched ? unsqueeze(log_probs, 1) : log_probs;
  const int64_t steps = lp.size(0), batch = lp.size(1), classes = lp.size(2);
  const Device device = lp.device();
  const DType dtype = lp.dtype();
  EMBER_CHECK(o.blank >= 0 && o.blank < classes, "[", kOp, "] blank ", o.blank,
              " is out of range for ", classes, " classes");
  EMBER_CHECK(targets.defined(), "[", kOp, "] targets is undefined");
  EMBER_CHECK(is_integral(targets.dtype()), "[", kOp, "] targets must be an Int tensor, got ",
              targets.dtype());
  for (const DynTensor* t : {&targets, &input_lengths, &target_lengths}) {
    EMBER_CHECK(!t->defined() || t->device() == device, "[", kOp, "] all inputs must be on ",
                device, ", got one on ", t->device());
  }
  const DynTensor in_len = lengths(input_lengths, batch, unbatched, "input_lengths");
  const DynTensor tgt_len = lengths(target_lengths, batch, unbatched, "target_lengths");
  check_values(in_len, steps, 0, length_message, static_cast<double>(steps));

  // Targets, padded [N, S].
  DynTensor padded;
  if (unbatched) {
    EMBER_CHECK(targets.rank() == 1, "[", kOp, "] unbatched targets must be [S], got shape ",
                targets.shape());
    padded = unsqueeze(cast(detach(targets), DType::i64), 0);
  } else if (targets.rank() == 2) {
    EMBER_CHECK(targets.size(0) == batch, "[", kOp, "] targets have ", targets.size(0),
                " rows but log_probs has batch ", batch);
    padded = cast(detach(targets), DType::i64);
  } else {
    EMBER_CHECK(targets.rank() == 1, "[", kOp,
                "] targets must be padded [N, S] or concatenated [sum(target_lengths)], got shape ",
                targets.shape());
    // The longest target sets the work per step: the lengths are read to the host (as PyTorch).
    padded = pad_targets(
        targets, host_target_lengths ? *host_target_lengths : tgt_len.to_vector<int64_t>(), device);
  }
  const int64_t longest = padded.size(1), states = 2 * longest + 1;
  check_values(tgt_len, longest, 1, length_message, static_cast<double>(longest));
  const DynTensor in_target =
      lt(reshape(arange(0, longest, 1, DType::i64, device), {1, longest}), unsqueeze(tgt_len, 1));
  const DynTensor labels = where(in_target, padded, o.blank);  // padding reads as blank
  check_values(labels, classes - 1, 0, target_message, static_cast<double>(classes));

  // Extended labels [N, 2S + 1]: blank, l1, blank, l2, ..., blank. A state may skip the one
  // before it when it is a label that differs from the label two states back.
  const DynTensor blanks = full({batch, longest}, o.blank, DType::i64, device);
  const DynTensor ext = cat({reshape(stack({blanks, labels}, 2), {batch, 2 * longest}),
                             full({batch, 1}, o.blank, DType::i64, device)},
                            1);
  DynTensor skip_penalty = zeros({batch, states}, dtype, device);
  if (states > 2) {
    const DynTensor differs = ne(slice(ext, 1, 2, states), slice(ext, 1, 0, states - 2));
    skip_penalty = cat({full({batch, 2}, kImpossible, dtype, device),
                        where(differs, 0.0, full({batch, states - 2}, kImpossible, dtype, device))},
                       1);
  } else {
    skip_penalty = full({batch, states}, kImpossible, dtype, device);
  }
  // Log-probabilities of each state's label at each step [T, N, 2S + 1]; -inf held finite.
  const DynTensor emit = clamp_min(
      gather(lp, 2, contiguous(expand(unsqueeze(ext, 0), {steps, batch, states}))), kImpossible);
  const DynTensor active =
      lt(reshape(arange(0, steps, 1, DType::i64, device), {steps, 1}), unsqueeze(in_len, 0));

  // alpha before the first step: all mass on a virtual start that feeds states 0 and 1 (state
  // 0 itself), so step 0 needs no special case and a zero-length input keeps it.
  DynTensor alpha = cat(
      {zeros({batch, 1}, dtype, device), full({batch, states - 1}, kImpossible, dtype, device)}, 1);
  for (int64_t t = 0; t < steps; ++t) {
    const DynTensor shifted = pad(alpha, {2, 0}, PadMode::Constant, kImpossible);
    const DynTensor stay = alpha, step = slice(shifted, 1, 1, states + 1),
                    skip = add(slice(shifted, 1, 0, states), skip_penalty);
    const DynTensor next = add(logsumexp(stack({stay, step, skip}, 0), {0}), select(emit, 0, t));
    alpha = where(unsqueeze(select(active, 0, t), 1), next, alpha);  // past its length: kept
  }
  // End in the last label or the final blank: states 2 l and 2 l - 1 of a length-l target.
  const DynTensor last = unsqueeze(mul(tgt_len, 2), 1);
  const DynTensor end_blank = squeeze(gather(alpha, 1, last), 1);
  const DynTensor end_label =
      where(gt(tgt_len, 0), squeeze(gather(alpha, 1, clamp_min(sub(last, 1), 0)), 1), kImpossible);
  const DynTensor nll = neg(logsumexp(stack({end_blank, end_label}, 0), {0}));
  const DynTensor infeasible = gt(nll, kInfeasible);
  const DynTensor loss =
      where(infeasible, o.zero_infinity ? 0.0 : std::numeric_limits<double>::infinity(), nll);
  switch (o.reduction) {
    case Reduction::None:
      return unbatched ? reshape(loss, Shape{}) : loss;
    case Reduction::Sum:
      return sum(loss);
    default:
      return mean(div(loss, clamp_min(cast(tgt_len, dtype), 1.0)));
  }
}

}  // namespace

DynTensor ctc_loss(const DynTensor& log_probs, const DynTensor& targets,
                   const DynTensor& input_lengths, const DynTensor& target_lengths,
                   const CtcLossOptions& options) {
  return as_op(kOp, [&] {
    return ctc(log_probs, targets, input_lengths, target_lengths, nullptr, options);
  });
}

DynTensor ctc_loss(const DynTensor& log_probs, const DynTensor& targets,
                   const std::vector<int64_t>& input_lengths,
                   const std::vector<int64_t>& target_lengths, const CtcLossOptions& options) {
  return as_op(kOp, [&] {
    check_floating(log_probs, kOp, "log_probs");
    const Device device = log_probs.device();
    const bool unbatched = log_probs.rank() == 2;
    auto tensor = [&](const std::vector<int64_t>& v) {
      const Shape s = unbatched && v.size() == 1 ? Shape{} : Shape{static_cast<int64_t>(v.size())};
      return from_data(TensorData::from(v, s), device);
    };
    return ctc(log_probs, targets, tensor(input_lengths), tensor(target_lengths), &target_lengths,
               options);
  });
}

namespace {

constexpr const char* kRnnt = "rnnt_loss";

std::string rnnt_length_message(const RangeError& e) {
  return ember::detail::cat("[", e.check.op, "] ", e.check.arg1 == 0 ? "logit" : "target",
                            " length ", e.index, " is out of range [", e.check.arg1 == 0 ? 1 : 0,
                            ", ", static_cast<int64_t>(e.check.arg0), "]");
}

DynTensor rnnt(const DynTensor& logits, const DynTensor& targets, const DynTensor& logit_lengths,
               const DynTensor& target_lengths, const RnntLossOptions& o) {
  check_floating(logits, kRnnt, "logits");
  EMBER_CHECK(logits.rank() == 4, "[", kRnnt, "] logits must be [B, T, U + 1, V], got shape ",
              logits.shape());
  check_reduction(o.reduction, kRnnt);
  if (logits.dtype() == DType::f16 || logits.dtype() == DType::bf16) {
    return cast(rnnt(cast(logits, DType::f32), targets, logit_lengths, target_lengths, o),
                logits.dtype());
  }
  const int64_t batch = logits.size(0), steps = logits.size(1), cols = logits.size(2),
                vocab = logits.size(3), labels = cols - 1;
  const int64_t blank = o.blank < 0 ? o.blank + vocab : o.blank;
  EMBER_CHECK(blank >= 0 && blank < vocab, "[", kRnnt, "] blank ", o.blank, " is out of range for ",
              vocab, " classes");
  EMBER_CHECK(steps >= 1 && cols >= 1, "[", kRnnt, "] logits need T >= 1 and U + 1 >= 1, got ",
              logits.shape());
  EMBER_CHECK(targets.defined() && is_integral(targets.dtype()), "[", kRnnt,
              "] targets must be an Int tensor");
  EMBER_CHECK(targets.rank() == 2 && targets.size(0) == batch && targets.size(1) == labels, "[",
              kRnnt, "] targets must have shape [", batch, ", ", labels, "] for logits ",
              logits.shape(), ", got ", targets.shape());
  const Device device = logits.device();
  const DType dtype = logits.dtype();
  for (const DynTensor* t : {&targets, &logit_lengths, &target_lengths}) {
    EMBER_CHECK(!t->defined() || t->device() == device, "[", kRnnt, "] all inputs must be on ",
                device, ", got one on ", t->device());
  }
  auto lengths = [&](const DynTensor& l, const char* what) {
    EMBER_CHECK(l.defined() && is_integral(l.dtype()), "[", kRnnt, "] ", what,
                " must be an Int tensor");
    EMBER_CHECK(l.rank() == 1 && l.size(0) == batch, "[", kRnnt, "] ", what, " must have shape [",
                batch, "], got ", l.shape());
    return cast(detach(l), DType::i64);
  };
  const DynTensor t_len = lengths(logit_lengths, "logit_lengths");
  const DynTensor u_len = lengths(target_lengths, "target_lengths");
  RangeCheck check;
  check.op = kRnnt;
  check.message = rnnt_length_message;
  check.lo = 1;
  check.hi = static_cast<double>(steps);
  check.arg0 = check.hi;
  check_range(t_len, check);
  check.lo = 0;
  check.hi = static_cast<double>(labels);
  check.arg0 = check.hi;
  check.arg1 = 1;
  check_range(u_len, check);
  // Entries past a target's length are padding: read as class 0, never checked.
  const DynTensor in_target =
      lt(reshape(arange(0, labels, 1, DType::i64, device), {1, labels}), unsqueeze(u_len, 1));
  const DynTensor tgt = where(in_target, cast(detach(targets), DType::i64), 0);
  RangeCheck classes;
  classes.op = kRnnt;
  classes.hi = static_cast<double>(vocab - 1);
  classes.arg0 = static_cast<double>(vocab);
  classes.message = target_message;
  check_range(tgt, classes);

  const DynTensor lp = o.fused_log_softmax ? log_softmax(logits, -1) : logits;
  // blank_lp[b, t, u]: leave (t, u) for (t + 1, u); emit_lp[b, t, u]: for (t, u + 1).
  const DynTensor blank_lp = clamp_min(select(lp, 3, blank), kImpossible);
  DynTensor emit_lp = full({batch, steps, cols}, kImpossible, dtype, device);
  if (labels > 0) {
    const DynTensor index =
        contiguous(expand(reshape(tgt, {batch, 1, labels, 1}), {batch, steps, labels, 1}));
    emit_lp = pad(clamp_min(squeeze(gather(slice(lp, 2, 0, labels), 3, index), 3), kImpossible),
                  {0, 1}, PadMode::Constant, kImpossible);
  }
  // alpha[b, t, u], filled one anti-diagonal d = t + u at a time.
  const DynTensor t_idx = reshape(arange(0, steps, 1, DType::i64, device), {steps, 1});
  const DynTensor u_idx = reshape(arange(0, cols, 1, DType::i64, device), {1, cols});
  const DynTensor diagonal = add(t_idx, u_idx);  // [T, U + 1]
  DynTensor alpha = where(eq(diagonal, 0), 0.0, full({steps, cols}, kImpossible, dtype, device));
  alpha = contiguous(expand(unsqueeze(alpha, 0), {batch, steps, cols}));
  for (int64_t d = 1; d < steps + cols - 1; ++d) {
    const DynTensor from_t =
        slice(pad(add(alpha, blank_lp), {0, 0, 1, 0}, PadMode::Constant, kImpossible), 1, 0, steps);
    const DynTensor from_u =
        slice(pad(add(alpha, emit_lp), {1, 0}, PadMode::Constant, kImpossible), 2, 0, cols);
    alpha = where(eq(diagonal, d), logsumexp(stack({from_t, from_u}, 0), {0}), alpha);
  }
  // -(alpha + blank_lp) at (T_b - 1, U_b): the last blank ends the alignment.
  const DynTensor at = unsqueeze(add(mul(sub(t_len, 1), cols), u_len), 1);
  const DynTensor end = add(alpha, blank_lp);
  const DynTensor loss = neg(squeeze(gather(reshape(end, {batch, steps * cols}), 1, at), 1));
  switch (o.reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    default:
      return mean(loss);
  }
}

}  // namespace

DynTensor rnnt_loss(const DynTensor& logits, const DynTensor& targets,
                    const DynTensor& logit_lengths, const DynTensor& target_lengths,
                    const RnntLossOptions& options) {
  return as_op(kRnnt,
               [&] { return rnnt(logits, targets, logit_lengths, target_lengths, options); });
}

}  // namespace ember::nn
