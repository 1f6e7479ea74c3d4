// Loss functions with torch.nn.functional's names, arguments and semantics. Each has a DynTensor
// form (any reduction) and a typed form that returns the reduced 0-d loss. Class weights and
// pos_weight are constants, as in PyTorch (no gradient flows to them); every other floating
// input gets a gradient, to any order. docs/NN.md lists what matches PyTorch and what does not.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/tensor/tensor.hpp"

namespace ember::nn {

/// How a loss reduces its per-element values. BatchMean (sum / batch size) is kl_div's only.
enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };

/// Options of cross_entropy, for designated initialisers:
/// `nn::cross_entropy(logits, target, {.ignore_index = 0, .label_smoothing = 0.1})`.
struct CrossEntropyOptions {
  DynTensor weight{};           // [C] class weights (undefined: all 1)
  int64_t ignore_index = -100;  // class-index targets equal to this add nothing
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0.0;  // in [0, 1]
};

struct NllLossOptions {
  DynTensor weight{};  // [C] class weights (undefined: all 1)
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};

struct BinaryCrossEntropyOptions {
  DynTensor weight{};  // broadcasts to the input (undefined: all 1)
  Reduction reduction = Reduction::Mean;
};

struct BceWithLogitsOptions {
  DynTensor weight{};      // broadcasts to the input
  DynTensor pos_weight{};  // weight of positive examples, broadcasts along the last dim ([C])
  Reduction reduction = Reduction::Mean;
};

/// Logits `input` [N, C] or [N, C, d1...] (classes in dim 1) or [C]. `target` is either class
/// indices (Int) of shape [N] / [N, d1...] / [], or class probabilities of the input's shape.
/// With weights, Mean divides by the summed weight of the non-ignored targets. Class-index
/// targets run as one fused node (log_softmax + gather forward, softmax - one-hot backward).
DynTensor cross_entropy(const DynTensor& input, const DynTensor& target,
                        const CrossEntropyOptions& options = {});
/// Negative log-likelihood of log-probabilities `input`; targets are class indices.
DynTensor nll_loss(const DynTensor& input, const DynTensor& target,
                   const NllLossOptions& options = {});
DynTensor mse_loss(const DynTensor& input, const DynTensor& target,
                   Reduction reduction = Reduction::Mean);
DynTensor l1_loss(const DynTensor& input, const DynTensor& target,
                  Reduction reduction = Reduction::Mean);
/// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
DynTensor huber_loss(const DynTensor& input, const DynTensor& target,
                     Reduction reduction = Reduction::Mean, double delta = 1.0);
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (l1_loss when beta = 0).
DynTensor smooth_l1_loss(const DynTensor& input, const DynTensor& target,
                         Reduction reduction = Reduction::Mean, double beta = 1.0);
/// Probabilities `input` in [0, 1]; the logs are clamped at -100 as in PyTorch.
DynTensor binary_cross_entropy(const DynTensor& input, const DynTensor& target,
                               const BinaryCrossEntropyOptions& options = {});
/// sigmoid + binary cross-entropy in the stable form (no overflow for any logit).
DynTensor binary_cross_entropy_with_logits(const DynTensor& input, const DynTensor& target,
                                           const BceWithLogitsOptions& options = {});
/// KL(target || exp(input)) with `input` log-probabilities; `target` probabilities, or
/// log-probabilities when log_target. BatchMean divides the sum by input.size(0).
DynTensor kl_div(const DynTensor& input, const DynTensor& target,
                 Reduction reduction = Reduction::Mean, bool log_target = false);
/// 1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1. Inputs [N, D] with
/// target [N], or [D] with a 0-d target.
DynTensor cosine_embedding_loss(const DynTensor& input1, const DynTensor& input2,
                                const DynTensor& target, double margin = 0.0,
                                Reduction reduction = Reduction::Mean);
/// max(0, -target * (input1 - input2) + margin).
DynTensor margin_ranking_loss(const DynTensor& input1, const DynTensor& input2,
                              const DynTensor& target, double margin = 0.0,
                              Reduction reduction = Reduction::Mean);

struct PoissonNllLossOptions {
  bool log_input = true;  // input is log(rate): loss exp(input) - target input
  bool full = false;      // add the Stirling term t log t - t + 0.5 log(2 pi t) where t > 1
  double eps = 1e-8;      // without log_input: input - target log(input + eps)
  Reduction reduction = Reduction::Mean;
};
/// Negative log-likelihood of `target` counts under Poisson rates `input` (same shape).
DynTensor poisson_nll_loss(const DynTensor& input, const DynTensor& target,
                           const PoissonNllLossOptions& options = {});

struct GaussianNllLossOptions {
  bool full = false;  // add 0.5 log(2 pi)
  double eps = 1e-6;  // var is clamped to at least eps (its gradient passes as if unclamped)
  Reduction reduction = Reduction::Mean;
};
/// 0.5 (log var + (input - target)^2 / var). `var` has the input's shape, or that shape without
/// its last dim, or with last dim 1 (one variance per row), as PyTorch; var must be >= 0.
DynTensor gaussian_nll_loss(const DynTensor& input, const DynTensor& target, const DynTensor& var,
                            const GaussianNllLossOptions& options = {});

struct TripletMarginLossOptions {
  double margin = 1.0;
  double p = 2.0;     // the norm of the pairwise distance
  double eps = 1e-6;  // added to the difference, as pairwise_distance
  bool swap = false;  // use min(d(a, n), d(p, n)) as the negative distance
  Reduction reduction = Reduction::Mean;
};
/// max(d(a, p) - d(a, n) + margin, 0) with d(x, y) = ||x - y + eps||_p over the last dim.
/// Inputs [N, D] or [D], of one shape.
DynTensor triplet_margin_loss(const DynTensor& anchor, const DynTensor& positive,
                              const DynTensor& negative,
                              const TripletMarginLossOptions& options = {});
/// input where target is 1, max(0, margin - input) where it is -1 (target of the input's shape).
DynTensor hinge_embedding_loss(const DynTensor& input, const DynTensor& target, double margin = 1.0,
                               Reduction reduction = Reduction::Mean);
/// Multi-class multi-label hinge loss. `input` [N, C] or [C]; `target` Int of the same shape
/// holding the target classes, ended by the first -1: sum over targets j and non-targets i of
/// max(0, 1 - (x[j] - x[i])) / C.
DynTensor multilabel_margin_loss(const DynTensor& input, const DynTensor& target,
                                 Reduction reduction = Reduction::Mean);
/// Per-class binary cross-entropy on logits, averaged over the classes (last dim). `target`
/// (0/1, floating) has the input's shape; `weight` (constant, broadcasting to the input:
/// [C] scales each class).
DynTensor multilabel_soft_margin_loss(const DynTensor& input, const DynTensor& target,
                                      const DynTensor& weight = {},
                                      Reduction reduction = Reduction::Mean);

struct MultiMarginLossOptions {
  int p = 1;  // 1 or 2: the hinge or its square
  double margin = 1.0;
  DynTensor weight{};  // [C] constant class weights, applied by the target's class
  Reduction reduction = Reduction::Mean;
};
/// Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p w[y] / C. `input`
/// [N, C] or [C]; `target` Int class indices [N] or [].
DynTensor multi_margin_loss(const DynTensor& input, const DynTensor& target,
                            const MultiMarginLossOptions& options = {});
/// log(1 + exp(-target input)) (target +-1, of the input's shape), computed without overflow.
DynTensor soft_margin_loss(const DynTensor& input, const DynTensor& target,
                           Reduction reduction = Reduction::Mean);

struct CtcLossOptions {
  int64_t blank = 0;
  Reduction reduction = Reduction::Mean;  // Mean: each loss / its target length, then the mean
  bool zero_infinity = false;             // infeasible alignments give 0 (and no gradient)
};
/// Connectionist temporal classification. `log_probs` [T, N, C] (or [T, C]) log-probabilities;
/// `targets` Int, padded [N, S] (or [S]) or all N concatenated (1-D, sum(target_lengths));
/// `input_lengths`, `target_lengths` Int [N] (or []). Returns [N] for Reduction::None.
/// Differentiable w.r.t. log_probs (the true gradient; see docs/NN.md for PyTorch's).
DynTensor ctc_loss(const DynTensor& log_probs, const DynTensor& targets,
                   const DynTensor& input_lengths, const DynTensor& target_lengths,
                   const CtcLossOptions& options = {});
/// Lengths given on the host, as PyTorch's tuples.
DynTensor ctc_loss(const DynTensor& log_probs, const DynTensor& targets,
                   const std::vector<int64_t>& input_lengths,
                   const std::vector<int64_t>& target_lengths, const CtcLossOptions& options = {});

struct RnntLossOptions {
  int64_t blank = -1;                     // -1: the last class (torchaudio's default)
  Reduction reduction = Reduction::Mean;  // Mean: the mean of the per-sample losses
  bool fused_log_softmax = true;          // false: logits are log-probabilities already
};
/// RNN-Transducer loss (Graves 2012; torchaudio.functional.rnnt_loss). `logits` [B, T, U + 1, V]
/// from the joiner; `targets` Int [B, U] (padded, no blank); `logit_lengths` Int [B] in [1, T];
/// `target_lengths` Int [B] in [0, U]. Returns [B] for Reduction::None.
DynTensor rnnt_loss(const DynTensor& logits, const DynTensor& targets,
                    const DynTensor& logit_lengths, const DynTensor& target_lengths,
                    const RnntLossOptions& options = {});
/// |input - target|^p elementwise, reduced (Burn's LpLoss; p = 1 is l1_loss, p = 2 mse_loss).
DynTensor lp_loss(const DynTensor& input, const DynTensor& target, double p,
                  Reduction reduction = Reduction::Mean);

// Typed forms: the reduced loss as a 0-d tensor. Reduction::None is an error here (its result
// has the input's rank, known only at run time); the DynTensor forms above return it.
namespace detail {
/// The 0-d typed result of a loss; fails for Reduction::None.
Tensor<0> reduced(DynTensor loss, Reduction reduction, const char* op);
}  // namespace detail

template <int D>
Tensor<0> cross_entropy(const Tensor<D>& input, const Tensor<ember::detail::drop1(D), Int>& target,
                        const CrossEntropyOptions& options = {}) {
  return detail::reduced(cross_entropy(input.dyn(), target.dyn(), options), options.reduction,
                         "cross_entropy");
}
/// Probability targets.
template <int D>
Tensor<0> cross_entropy(const Tensor<D>& input, const Tensor<D>& target,
                        const CrossEntropyOptions& options = {}) {
  return detail::reduced(cross_entropy(input.dyn(), target.dyn(), options), options.reduction,
                         "cross_entropy");
}
template <int D>
Tensor<0> nll_loss(const Tensor<D>& input, const Tensor<ember::detail::drop1(D), Int>& target,
                   const NllLossOptions& options = {}) {
  return detail::reduced(nll_loss(input.dyn(), target.dyn(), options), options.reduction,
                         "nll_loss");
}
template <int D>
Tensor<0> mse_loss(const Tensor<D>& input, const Tensor<D>& target,
                   Reduction reduction = Reduction::Mean) {
  return detail::reduced(mse_loss(input.dyn(), target.dyn(), reduction), reduction, "mse_loss");
}
template <int D>
Tensor<0> l1_loss(const Tensor<D>& input, const Tensor<D>& target,
                  Reduction reduction = Reduction::Mean) {
  return detail::reduced(l1_loss(input.dyn(), target.dyn(), reduction), reduction, "l1_loss");
}
template <int D>
Tensor<0> huber_loss(const Tensor<D>& input, const Tensor<D>& target,
                     Reduction reduction = Reduction::Mean, double delta = 1.0) {
  return detail::reduced(huber_loss(input.dyn(), target.dyn(), reduction, delta), reduction,
                         "huber_loss");
}
template <int D>
Tensor<0> smooth_l1_loss(const Tensor<D>& input, const Tensor<D>& target,
                         Reduction reduction = Reduction::Mean, double beta = 1.0) {
  return detail::reduced(smooth_l1_loss(input.dyn(), target.dyn(), reduction, beta), reduction,
                         "smooth_l1_loss");
}
template <int D>
Tensor<0> binary_cross_entropy(const Tensor<D>& input, const Tensor<D>& target,
                               const BinaryCrossEntropyOptions& options = {}) {
  return detail::reduced(binary_cross_entropy(input.dyn(), target.dyn(), options),
                         options.reduction, "binary_cross_entropy");
}
template <int D>
Tensor<0> binary_cross_entropy_with_logits(const Tensor<D>& input, const Tensor<D>& target,
                                           const BceWithLogitsOptions& options = {}) {
  return detail::reduced(binary_cross_entropy_with_logits(input.dyn(), target.dyn(), options),
                         options.reduction, "binary_cross_entropy_with_logits");
}
template <int D>
Tensor<0> kl_div(const Tensor<D>& input, const Tensor<D>& target,
                 Reduction reduction = Reduction::Mean, bool log_target = false) {
  return detail::reduced(kl_div(input.dyn(), target.dyn(), reduction, log_target), reduction,
                         "kl_div");
}
template <int D>
Tensor<0> cosine_embedding_loss(const Tensor<D>& input1, const Tensor<D>& input2,
                                const Tensor<ember::detail::drop1(D)>& target, double margin = 0.0,
                                Reduction reduction = Reduction::Mean) {
  return detail::reduced(
      cosine_embedding_loss(input1.dyn(), input2.dyn(), target.dyn(), margin, reduction), reduction,
      "cosine_embedding_loss");
}
template <int D>
Tensor<0> margin_ranking_loss(const Tensor<D>& input1, const Tensor<D>& input2,
                              const Tensor<D>& target, double margin = 0.0,
                              Reduction reduction = Reduction::Mean) {
  return detail::reduced(
      margin_ranking_loss(input1.dyn(), input2.dyn(), target.dyn(), margin, reduction), reduction,
      "margin_ranking_loss");
}

template <int D>
Tensor<0> poisson_nll_loss(const Tensor<D>& input, const Tensor<D>& target,
                           const PoissonNllLossOptions& options = {}) {
  return detail::reduced(poisson_nll_loss(input.dyn(), target.dyn(), options), options.reduction,
                         "poisson_nll_loss");
}
template <int D, int V>
Tensor<0> gaussian_nll_loss(const Tensor<D>& input, const Tensor<D>& target, const Tensor<V>& var,
                            const GaussianNllLossOptions& options = {}) {
  return detail::reduced(gaussian_nll_loss(input.dyn(), target.dyn(), var.dyn(), options),
                         options.reduction, "gaussian_nll_loss");
}
template <int D>
Tensor<0> triplet_margin_loss(const Tensor<D>& anchor, const Tensor<D>& positive,
                              const Tensor<D>& negative,
                              const TripletMarginLossOptions& options = {}) {
  return detail::reduced(triplet_margin_loss(anchor.dyn(), positive.dyn(), negative.dyn(), options),
                         options.reduction, "triplet_margin_loss");
}
template <int D>
Tensor<0> hinge_embedding_loss(const Tensor<D>& input, const Tensor<D>& target, double margin = 1.0,
                               Reduction reduction = Reduction::Mean) {
  return detail::reduced(hinge_embedding_loss(input.dyn(), target.dyn(), margin, reduction),
                         reduction, "hinge_embedding_loss");
}
template <int D>
Tensor<0> multilabel_margin_loss(const Tensor<D>& input, const Tensor<D, Int>& target,
                                 Reduction reduction = Reduction::Mean) {
  return detail::reduced(multilabel_margin_loss(input.dyn(), target.dyn(), reduction), reduction,
                         "multilabel_margin_loss");
}
template <int D>
Tensor<0> multilabel_soft_margin_loss(const Tensor<D>& input, const Tensor<D>& target,
                                      const DynTensor& weight = {},
                                      Reduction reduction = Reduction::Mean) {
  return detail::reduced(multilabel_soft_margin_loss(input.dyn(), target.dyn(), weight, reduction),
                         reduction, "multilabel_soft_margin_loss");
}
template <int D>
Tensor<0> multi_margin_loss(const Tensor<D>& input,
                            const Tensor<ember::detail::drop1(D), Int>& target,
                            const MultiMarginLossOptions& options = {}) {
  return detail::reduced(multi_margin_loss(input.dyn(), target.dyn(), options), options.reduction,
                         "multi_margin_loss");
}
template <int D>
Tensor<0> soft_margin_loss(const Tensor<D>& input, const Tensor<D>& target,
                           Reduction reduction = Reduction::Mean) {
  return detail::reduced(soft_margin_loss(input.dyn(), target.dyn(), reduction), reduction,
                         "soft_margin_loss");
}
/// Batched: log_probs [T, N, C], targets [N, S] padded or [sum(target_lengths)] concatenated.
template <int S>
Tensor<0> ctc_loss(const Tensor<3>& log_probs, const Tensor<S, Int>& targets,
                   const Tensor<1, Int>& input_lengths, const Tensor<1, Int>& target_lengths,
                   const CtcLossOptions& options = {}) {
  return detail::reduced(
      ctc_loss(log_probs.dyn(), targets.dyn(), input_lengths.dyn(), target_lengths.dyn(), options),
      options.reduction, "ctc_loss");
}
template <int S>
Tensor<0> ctc_loss(const Tensor<3>& log_probs, const Tensor<S, Int>& targets,
                   const std::vector<int64_t>& input_lengths,
                   const std::vector<int64_t>& target_lengths, const CtcLossOptions& options = {}) {
  return detail::reduced(
      ctc_loss(log_probs.dyn(), targets.dyn(), input_lengths, target_lengths, options),
      options.reduction, "ctc_loss");
}

template <int D>
Tensor<0> lp_loss(const Tensor<D>& input, const Tensor<D>& target, double p,
                  Reduction reduction = Reduction::Mean) {
  return detail::reduced(lp_loss(input.dyn(), target.dyn(), p, reduction), reduction, "lp_loss");
}
inline Tensor<0> rnnt_loss(const Tensor<4>& logits, const Tensor<2, Int>& targets,
                           const Tensor<1, Int>& logit_lengths,
                           const Tensor<1, Int>& target_lengths,
                           const RnntLossOptions& options = {}) {
  return detail::reduced(
      rnnt_loss(logits.dyn(), targets.dyn(), logit_lengths.dyn(), target_lengths.dyn(), options),
      options.reduction, "rnnt_loss");
}

}  // namespace ember::nn
