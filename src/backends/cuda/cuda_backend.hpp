// The Cuda backend's class: every Backend entry it implements, each defined in its family's file
// (elementwise.cu, random.cu, reduce.cu, sort.cu, index.cu, matmul.cpp, conv.cpp, pool.cu,
// norm.cu, linear.cpp, optim.cu; memory, transfers and synchronisation in cuda_backend.cpp).
#pragma once

#include "ember/core/backend.hpp"

namespace ember::cuda {

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool supports(OpFamily family, DType dtype) const override;
  DType pool_index_dtype() const override { return DType::i64; }
  bool channels_last(OpFamily family, DType dtype, int spatial) const override;

  MemoryStats memory_stats(Device device) const override;
  void reset_peak_memory(Device device) override;
  void empty_cache(Device device) override;
  std::shared_ptr<Storage> allocate(size_t nbytes, Device device) override;
  void copy(const RawTensor& src, const RawTensor& dst) override;
  void write_from_host(const void* host, const RawTensor& dst) override;
  void read_to_host(const RawTensor& src, void* host) override;
  void fill(const RawTensor& dst, const Scalar& value) override;
  void iota(const RawTensor& dst, double start, double step) override;
  void random(RandomOp op, const RandomParams& params, const RawTensor& dst) override;

  void unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
             const RawTensor& out) override;
  void binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  void where(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
             const RawTensor& out) override;

  void reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask, const RawTensor& out) override;
  void arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                  const RawTensor& indices) override;
  void scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) override;
  void sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
            const RawTensor& indices) override;
  void topk(const RawTensor& x, int64_t k, int dim, bool largest, const RawTensor& values,
            const RawTensor& indices) override;

  void matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  void svd(const RawTensor& a, const RawTensor& u, const RawTensor& s,
           const RawTensor& vh) override;

  void gather(const RawTensor& x, int dim, const RawTensor& index, const RawTensor& out) override;
  void scatter(ScatterReduce reduce, const RawTensor& dst, int dim, const RawTensor& index,
               const RawTensor& src) override;
  void index_select(const RawTensor& x, int dim, const RawTensor& index,
                    const RawTensor& out) override;
  RawTensor nonzero(const RawTensor& x) override;

  void conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias, const ConvParams& p,
            const RawTensor& out) override;
  void conv_backward_data(const RawTensor& grad_out, const RawTensor& w, const ConvParams& p,
                          const RawTensor& grad_in) override;
  void conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                     const RawTensor& grad_out, const ConvParams& p, const RawTensor& grad_in,
                     const RawTensor& grad_w, const RawTensor& grad_bias) override;
  void conv_backward_weight(const RawTensor& x, const RawTensor& grad_out, const ConvParams& p,
                            const RawTensor& grad_w, const RawTensor& grad_bias) override;

  void max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                const RawTensor& indices) override;
  void max_pool_backward(const RawTensor& grad_out, const RawTensor& indices, const PoolParams& p,
                         const RawTensor& grad_in) override;
  void avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) override;
  void avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                         const RawTensor& grad_in) override;

  void channel_moments(const RawTensor& x, const RawTensor& out) override;
  void channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                   const RawTensor& out) override;
  void batch_norm_coefficients(const RawTensor& moments, const RawTensor& weight,
                               const RawTensor& bias, double eps, const RawTensor& out) override;
  void batch_norm_backward_coefficients(const RawTensor& d, const RawTensor& coefficients,
                                        const RawTensor& moments, double count,
                                        const RawTensor& out) override;
  void channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                   const RawTensor& k0, const RawTensor& out) override;

  void logsumexp_rows(const RawTensor& x, const RawTensor& lse) override;
  void cross_entropy_backward(const RawTensor& x, const RawTensor& lse, const RawTensor& target,
                              const RawTensor& coef, const RawTensor& dx) override;
  void softmax_rows(const RawTensor& x, const RawTensor& lse, bool log,
                    const RawTensor& y) override;
  void softmax_rows_backward(const RawTensor& y, const RawTensor& gy, bool log,
                             const RawTensor& gx) override;

  void layer_norm(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, double eps,
                  const RawTensor& y, const RawTensor& mean, const RawTensor& rstd) override;
  void layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean,
                           const RawTensor& rstd, const RawTensor& weight, const RawTensor& dx,
                           const RawTensor& dweight, const RawTensor& dbias) override;
  void rms_norm(const RawTensor& x, const RawTensor& weight, double eps, const RawTensor& y,
                const RawTensor& rstd) override;
  void rms_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& rstd,
                         const RawTensor& weight, const RawTensor& dx,
                         const RawTensor& dweight) override;
  void activation_grad(UnaryOp op, const RawTensor& gy, const RawTensor& x,
                       const RawTensor& gx) override;
  bool attention_supports(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                          const RawTensor& bias) const override;
  void attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& bias,
                 const AttentionParams& p, const RawTensor& out, const RawTensor& lse) override;
  void attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                          const RawTensor& bias, const RawTensor& out, const RawTensor& grad_out,
                          const RawTensor& lse, const AttentionParams& p, const RawTensor& dq,
                          const RawTensor& dk, const RawTensor& dv) override;

  void linear(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
              const RawTensor& out) override;
  void linear_backward_weight(const RawTensor& grad, const RawTensor& x, const RawTensor& dw,
                              const RawTensor& dbias) override;

  void adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                 const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq, const AdamParams& p,
                 const RawTensor& param_out, const RawTensor& exp_avg_out,
                 const RawTensor& exp_avg_sq_out, const RawTensor& max_exp_avg_sq_out) override;
  void adam_step_multi(const std::vector<AdamStepItem>& items) override;
  bool sgd_step_multi(const std::vector<SgdStepItem>& items) override;

  RangeError check_range(const RawTensor& x, const RangeCheck& check) override;
  RangeError synchronize(Device device) override;

  // graph.cpp
  bool can_capture() const override { return true; }
  bool capturing(Device device) const override;
  void begin_capture(Device device) override;
  std::unique_ptr<CapturedWork> end_capture(Device device, bool ok) override;
};

// layout.cu: [N, C, *] between contiguous and channels-last (RawTensor::is_channels_last) as a
// tiled transpose, coalesced on both sides: dst = src when it applies (same dtype, one side of
// each layout, a grid that holds it), and whether it did. CudaBackend::copy tries it first.
bool relayout_channels(const RawTensor& src, const RawTensor& dst, const char* op);

}  // namespace ember::cuda
