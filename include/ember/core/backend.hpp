// The backend interface: one virtual per op family. The front end validates shapes and dtypes,
// allocates outputs (through allocate) and calls these; a backend only computes.
//
// Conventions every kernel can rely on:
//  - `out` (and other outputs) are contiguous, freshly allocated or uniquely owned.
//  - Elementwise inputs are already broadcast to out's shape (stride 0 where broadcast) and have
//    the compute dtype the front end chose; strides may be anything, including negative.
//  - Outputs and inputs never overlap unless the op says it works in place.
//
// Only name() must be written: every other entry has a default (src/core/backend.cpp) that raises
// "[op] no kernel on <name> for <dtype>", and supports() defaults to false, so a new backend
// starts empty and grows family by family. The front end asks supports() before every call;
// families with a composite (Norm, Optim, ConvRelu) then run the composite instead of failing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/ops.hpp"
#include "ember/core/raw_tensor.hpp"
#include "ember/core/scalar.hpp"

namespace ember {

struct RandomParams {
  double a = 0.0, b = 1.0;  // uniform/randint: [a, b); normal: mean a, std b; bernoulli: p = a
  uint64_t seed = 0;        // Philox key
  uint64_t offset = 0;      // Philox counter where this draw starts
};

struct RangeError;

/// A check that every value of an operand lies in [lo, hi] (Backend::check_range): the range
/// of an index, a class or a probability. Plain data, so that a backend can keep it in its queue;
/// the front end's `message` writes the error when the check fails, perhaps much later.
struct RangeCheck {
  double lo = 0.0, hi = 0.0;
  const char* op = "";            // a static string: "gather"
  double arg0 = 0.0, arg1 = 0.0;  // for the message: the dim and its size
  std::string (*message)(const RangeError&) = nullptr;
};

/// A failed RangeCheck: the first bad value found (the smallest when it is below lo, else the
/// largest; NaN when that is what failed), as `value` and, for integer operands, `index`.
struct RangeError {
  RangeCheck check;
  double value = 0.0;
  int64_t index = 0;
  bool found = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  /// Whether this backend has a kernel for `family` on `dtype`; the front end checks before use.
  /// Default false: a backend claims only what it overrides.
  virtual bool supports(OpFamily family, DType dtype) const;
  /// Whether `device` computes in `dtype` at all (ember::has_dtype). Default true.
  virtual bool has_dtype(Device device, DType dtype) const;
  /// Whether a storage's data() is host memory the CPU may read and write directly (Cpu,
  /// LibTorch): transfers between such backends are one copy, with no staging buffer.
  virtual bool host_memory() const { return false; }
  /// The index dtype its max-pool writes without a conversion, for the indices that only the
  /// gradient reads (max_pool2d's): i32 halves their traffic on the Cpu; ATen's kernels write i64.
  virtual DType pool_index_dtype() const { return DType::i32; }
  /// Whether its kernels of `family` (Conv, Norm) take [N, C, *] operands channels-last
  /// (RawTensor::is_channels_last: NHWC memory) for `dtype` over `spatial` dims, and are faster
  /// so (docs/ARCHITECTURE.md, "Memory formats"). Conv (asked of convolutions with one group
  /// only; grouped ones stay contiguous): the front end then allocates the output
  /// (and the data gradient) channels-last and passes the input as it comes, channels-last or
  /// contiguous; the backend stages whatever else its kernels need. Norm: channels-last operands
  /// are passed as they are and channel_fma's out takes a's layout. Default false: the
  /// "contiguous" of the conventions above.
  virtual bool channels_last(OpFamily family, DType dtype, int spatial) const;

  /// Raises "[op] no kernel on <name()> for <dtype>": the one message of a missing kernel, used
  /// by the defaults and by the front end when supports() says no.
  [[noreturn]] void no_kernel(std::string_view op, DType dtype) const;

  // Memory. The statistics and the cache are per device (a backend may serve several indices);
  // defaults: all zero, and nothing to free.
  virtual MemoryStats memory_stats(Device device) const;
  virtual void reset_peak_memory(Device device);
  /// Returns the memory the allocator holds for reuse (not in use) to the system.
  virtual void empty_cache(Device device);
  virtual std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  /// dst = src (cast to dst's dtype). Same shape; any strides on both sides.
  virtual void copy(const RawTensor& src, const RawTensor& dst);
  /// Host transfers of contiguous tensors (the front end packs strided ones first).
  virtual void write_from_host(const void* host, const RawTensor& dst);
  virtual void read_to_host(const RawTensor& src, void* host);
  virtual void fill(const RawTensor& dst, const Scalar& value);
  /// dst[i] = start + i * step over the flattened (contiguous) dst.
  virtual void iota(const RawTensor& dst, double start, double step);
  virtual void random(RandomOp op, const RandomParams& params, const RawTensor& dst);

  // Elementwise.
  virtual void unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
                     const RawTensor& out);
  virtual void binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out);
  /// out = cond ? a : b; cond is Bool.
  virtual void where(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
                     const RawTensor& out);

  // Reductions. `dims_mask` has bit d set for each reduced dim of x; out has x's rank with those
  // dims of size 1 (keepdim layout).
  virtual void reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask, const RawTensor& out);
  /// Index (i64) of the max/min along `dim`, and its value; first occurrence wins; NaN wins.
  virtual void arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                          const RawTensor& indices);
  virtual void scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out);
  /// Stable sort along `dim`; NaN sorts as the largest value, as in PyTorch.
  virtual void sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                    const RawTensor& indices);
  /// The k largest (or smallest) along `dim`, sorted.
  virtual void topk(const RawTensor& x, int64_t k, int dim, bool largest, const RawTensor& values,
                    const RawTensor& indices);

  // Linear algebra: a [B, M, K] x b [B, K, N] -> out [B, M, N]; a and b may be strided
  // (transposed, batch-broadcast with stride 0).
  virtual void matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out);
  /// The same for a and b of i8 into out of i32, every product summed in int32
  /// (OpFamily::MatmulInt8: quantized layers). The front end's composite casts to i32 instead.
  virtual void matmul_int8(const RawTensor& a, const RawTensor& b, const RawTensor& out);
  /// Singular value decomposition (OpFamily::Svd) of each contiguous a[b] ([B, M, N], K =
  /// min(M, N)): s [B, K] descending, u [B, M, K or M] and vh [B, K or N, N] orthonormal, the
  /// columns past K (full matrices) any orthonormal completion. u and vh may both be undefined:
  /// singular values only. NaN or inf in a gives NaN, not an error (no host synchronisation).
  virtual void svd(const RawTensor& a, const RawTensor& u, const RawTensor& s, const RawTensor& vh);

  // Indexing. Index tensors are i64 and already range-checked by the front end.
  virtual void gather(const RawTensor& x, int dim, const RawTensor& index, const RawTensor& out);
  /// dst[..index[i]..] (= | += | *= | max= | min=) src[i] along `dim`, per `reduce`; dst is written
  /// in place; max and min propagate NaN.
  virtual void scatter(ScatterReduce reduce, const RawTensor& dst, int dim, const RawTensor& index,
                       const RawTensor& src);
  virtual void index_select(const RawTensor& x, int dim, const RawTensor& index,
                            const RawTensor& out);
  /// Coordinates of the non-zero elements, [count, rank] i64, row-major order.
  virtual RawTensor nonzero(const RawTensor& x);

  // Convolution (OpFamily::Conv), NC + spatial layouts as in PyTorch: x [N, C, *in],
  // w [O, C / groups, *k], out [N, O, *out]. Every operand is contiguous and of one float dtype;
  // the front end has checked the geometry. `bias` ([O]) may be undefined. With p.relu, conv
  // writes relu(conv + bias) (a fused activation; the backward entries ignore the flag); with
  // p.constant_weight it may reuse a copy of w made by an earlier call on the same storage.
  virtual void conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                    const ConvParams& p, const RawTensor& out);
  /// grad_in [N, C, *in] = the gradient of conv w.r.t. x for grad_out [N, O, *out]: the
  /// transposed convolution. grad_in's shape decides the input size (output_padding).
  virtual void conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                  const ConvParams& p, const RawTensor& grad_in);
  /// The whole backward of conv in one call, each of grad_in, grad_w, grad_bias written when
  /// defined (at least one is). With `y` defined, conv had p.relu and y is its output: grad_out
  /// is masked to 0 where y <= 0 first (relu_backward), once for every gradient.
  virtual void conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                             const RawTensor& grad_out, const ConvParams& p,
                             const RawTensor& grad_in, const RawTensor& grad_w,
                             const RawTensor& grad_bias);
  /// grad_w [O, C / groups, *k] = the gradient of conv w.r.t. w; grad_bias [O], when defined,
  /// the gradient w.r.t. the bias (grad_out summed over all dims but 1) in the same pass.
  virtual void conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                    const ConvParams& p, const RawTensor& grad_w,
                                    const RawTensor& grad_bias);

  // Pooling (OpFamily::Pool) over the trailing `p.spatial` dims of contiguous [B..., *in]
  // tensors; out's shape gives the output size. Max pooling writes, per output, the flat index
  // of its maximum within the input's spatial plane (i64, PyTorch's convention, or i32: the indices
  // tensor's dtype; NaN wins); `indices` undefined: the values only (nothing records the op).
  virtual void max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                        const RawTensor& indices);
  /// grad_in (zeroed by the kernel) += grad_out at `indices`.
  virtual void max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                 const PoolParams& p, const RawTensor& grad_in);
  virtual void avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out);
  virtual void avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                 const RawTensor& grad_in);

  // Fused normalisation (OpFamily::Norm) over contiguous [N, C, *] tensors of one float dtype,
  // per channel c (every dim but 1 reduced); per-channel operands are contiguous [C]. Sums are
  // accumulated in double, each channel in a fixed order (results do not depend on threads).
  // Where supports(Norm, f16/bf16), 16-bit data comes as it is while the per-channel operands and
  // the [2, C] results are f32 (batch norm's statistics), and channel_fma's out is a's dtype.
  /// out [2, C]: the mean and the biased variance of each channel (two passes, so the variance
  /// does not lose digits to a large mean).
  virtual void channel_moments(const RawTensor& x, const RawTensor& out);
  /// out [2, C]: sum(a) and sum(a * (b - center[c])) of each channel.
  virtual void channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                           const RawTensor& out);
  /// out = a * ka[c] + b * kb[c] + k0[c]; b and kb may be undefined (then out = a * ka + k0).
  virtual void channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                           const RawTensor& kb, const RawTensor& k0, const RawTensor& out);

  // Batch norm's per-channel arithmetic (OpFamily::BatchNormCoefficients) over contiguous [C]
  // vectors of one float dtype (f32 or f64, the statistics'); tensor/ops/norm.hpp gives the
  // formulas. weight and bias may be undefined (1 and 0).
  /// out [3, C]: invstd, scale, shift from moments [2, C].
  virtual void batch_norm_coefficients(const RawTensor& moments, const RawTensor& weight,
                                       const RawTensor& bias, double eps, const RawTensor& out);
  /// out [4, C]: k2, k3, dweight, dbias from d [2, C], coefficients [3, C] and moments [2, C].
  virtual void batch_norm_backward_coefficients(const RawTensor& d, const RawTensor& coefficients,
                                                const RawTensor& moments, double count,
                                                const RawTensor& out);

  // cross_entropy's two passes over contiguous [N, C] logits (OpFamily::SoftmaxRows), computed in
  // f32 whatever the logits' float type, so 16-bit logits are read once and never widened.
  /// lse [N] f32: log(sum_k exp(x[i, k])) of each row.
  virtual void logsumexp_rows(const RawTensor& x, const RawTensor& lse);
  /// dx [N, C] in x's dtype: coef[i] * (exp(x[i, k] - lse[i]) - [k == target[i]]), with lse and
  /// coef [N] f32 and target [N] i64 (every entry a class in [0, C)).
  virtual void cross_entropy_backward(const RawTensor& x, const RawTensor& lse,
                                      const RawTensor& target, const RawTensor& coef,
                                      const RawTensor& dx);
  /// softmax (log false) or log_softmax over the rows: y [N, C] (x's dtype or f32) =
  /// exp(x - lse[i]) or x - lse[i], with lse from logsumexp_rows.
  virtual void softmax_rows(const RawTensor& x, const RawTensor& lse, bool log, const RawTensor& y);
  /// Their input gradient from y and gy (y's dtype, contiguous [N, C]): y * (gy - sum(gy * y))
  /// or gy - exp(y) * sum(gy) per row, written in gx's dtype (y's, or the 16-bit input's type
  /// when y is f32).
  virtual void softmax_rows_backward(const RawTensor& y, const RawTensor& gy, bool log,
                                     const RawTensor& gx);

  // layer_norm and rms_norm over the last dim of contiguous [N, D] (OpFamily::LayerNorm; x's dtype
  // is the one supports() is asked about): x f32, f16 or bf16; y f32 or x's dtype; weight and bias
  // [D] f32 or undefined. Statistics in f32.
  /// y = (x - mean) * rstd * weight + bias per row; mean and rstd [N] f32 kept for the backward.
  virtual void layer_norm(const RawTensor& x, const RawTensor& weight, const RawTensor& bias,
                          double eps, const RawTensor& y, const RawTensor& mean,
                          const RawTensor& rstd);
  /// dx (x's dtype) from dy (y's dtype); dweight and dbias ([D] f32) when defined.
  virtual void layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean,
                                   const RawTensor& rstd, const RawTensor& weight,
                                   const RawTensor& dx, const RawTensor& dweight,
                                   const RawTensor& dbias);
  /// rms_norm over the same rows (OpFamily::LayerNorm too): y = x * rstd * weight with rstd [N]
  /// f32 = 1 / sqrt(mean(x^2) + eps), kept for the backward; weight [D] f32 or undefined.
  virtual void rms_norm(const RawTensor& x, const RawTensor& weight, double eps, const RawTensor& y,
                        const RawTensor& rstd);
  /// dx (x's dtype) from dy (y's dtype), and dweight ([D] f32) when defined.
  virtual void rms_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& rstd,
                                 const RawTensor& weight, const RawTensor& dx,
                                 const RawTensor& dweight);

  /// gx = gy * f'(x) for f = op (Gelu, GeluTanh or Silu) in one pass over contiguous gy and x of
  /// one shape and float dtype (OpFamily::ActivationGrad), arithmetic in f32 for 16-bit types.
  virtual void activation_grad(UnaryOp op, const RawTensor& gy, const RawTensor& x,
                               const RawTensor& gx);

  // Fused attention (OpFamily::Attention) over q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev]
  // of one 16-bit float dtype, each with unit stride in its last dim (other strides free: the
  // heads of a packed qkv projection are views), and an optional additive mask `bias` (undefined:
  // none) of q's dtype, [B or 1, H or 1, L, S] with a unit last stride, added to the scaled
  // scores before the softmax. The backend reports which shapes it takes.
  /// Whether the fused kernels take these shapes (head dims, sequence lengths, the mask's).
  virtual bool attention_supports(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                                  const RawTensor& bias) const;
  /// out [B, H, L, Ev] (any strides with a unit last one) and lse [B, H, L] f32 contiguous, the
  /// log-sum-exp of each query's scaled (and masked) scores (what the backward needs).
  virtual void attention(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                         const RawTensor& bias, const AttentionParams& p, const RawTensor& out,
                         const RawTensor& lse);
  /// dq, dk, dv from the forward's inputs, out, lse and grad_out: contiguous, or laid out as q,
  /// k and v are when those are the three slices of one packed view (one buffer, no overlap).
  /// The mask gets no gradient.
  virtual void attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                                  const RawTensor& bias, const RawTensor& out,
                                  const RawTensor& grad_out, const RawTensor& lse,
                                  const AttentionParams& p, const RawTensor& dq,
                                  const RawTensor& dk, const RawTensor& dv);

  // Fused linear layer (OpFamily::Linear), every operand of one float dtype (the one supports()
  // is asked about): x [M, K], w [N, K] and grad [M, N] with a unit last stride and rows at least
  // a row apart (any row stride for one row), bias, out and the gradients contiguous; M, N, K >= 1.
  // w and dw may instead be column-major (unit row stride, columns at least a column apart: the
  // transpose of a row-major [K, N], as a Conv1D weight is passed).
  /// out [M, N] = x w^T + bias (bias [N] may be undefined): one GEMM with the bias in its epilogue.
  virtual void linear(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                      const RawTensor& out);
  /// dw [N, K] = grad^T x and, when defined, dbias [N] = grad summed over its M rows, in one pass.
  virtual void linear_backward_weight(const RawTensor& grad, const RawTensor& x,
                                      const RawTensor& dw, const RawTensor& dbias);

  /// One Adam/AdamW step (OpFamily::Optim), elementwise over contiguous tensors of one float
  /// dtype and one shape: reads param, grad, exp_avg, exp_avg_sq (and max_exp_avg_sq with
  /// amsgrad; undefined otherwise), writes the new values to the *_out tensors.
  virtual void adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                         const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq,
                         const AdamParams& p, const RawTensor& param_out,
                         const RawTensor& exp_avg_out, const RawTensor& exp_avg_sq_out,
                         const RawTensor& max_exp_avg_sq_out);

  /// adam_step over many parameters in place (OpFamily::Optim): each item's param, exp_avg,
  /// exp_avg_sq (and max_exp_avg_sq) are read and written in their own storage. Items share a
  /// device, a dtype and the amsgrad and decoupled options; each has its own constants. Default:
  /// adam_step per item into scratch tensors, copied back.
  struct AdamStepItem {
    RawTensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
    AdamParams params;
  };
  virtual void adam_step_multi(const std::vector<AdamStepItem>& items);
  /// One SGD step over many parameters in place: each item's param and momentum_buffer
  /// (undefined without momentum) are read and written in their own storage; contiguous, of one
  /// float dtype and device. False, having done nothing, where the backend has no multi-tensor
  /// kernel for them (the default): the front end then runs tensor ops per parameter.
  struct SgdStepItem {
    RawTensor param, grad, momentum_buffer;
    SgdParams params;
  };
  virtual bool sgd_step_multi(const std::vector<SgdStepItem>& items);

  // Asynchrony (docs/ARCHITECTURE.md, "Asynchrony"): any entry may queue its work and return;
  // reading to the host waits, and range checks run where the data lives.
  /// Looks for a value of `x` outside [check.lo, check.hi] (NaN is outside) without reading x
  /// back to the host. A backend that runs it at once returns what it found; one that queues it
  /// returns found = false, reports the first failure from synchronize(), and its index kernels
  /// must then skip bad indices (never touch memory out of bounds).
  virtual RangeError check_range(const RawTensor& x, const RangeCheck& check);
  /// Waits until the work queued on `device` is done; returns the first range check of that work
  /// that failed (found = false when none). Default: nothing is ever queued.
  virtual RangeError synchronize(Device device) {
    (void)device;
    return {};
  }

  // Graph capture (DeviceGraph, include/ember/tensor/device_graph.hpp). A backend that queues
  // work may record the work queued on a device between begin_capture and end_capture and
  // replay it later on the same memory (Cuda: a CUDA graph). Default: it cannot.
  class CapturedWork {
   public:
    virtual ~CapturedWork() = default;
    /// Queues the recorded work again (no host wait).
    virtual void replay() = 0;
  };
  virtual bool can_capture() const { return false; }
  /// Whether a capture is under way on `device`.
  virtual bool capturing(Device device) const {
    (void)device;
    return false;
  }
  virtual void begin_capture(Device device);
  /// Ends the capture begun on `device`; `ok` false (the captured code threw) discards it.
  virtual std::unique_ptr<CapturedWork> end_capture(Device device, bool ok);
};

}  // namespace ember
