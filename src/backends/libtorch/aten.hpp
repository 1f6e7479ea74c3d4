// The LibTorch backend: Ember's ops run by ATen (PyTorch's C++ kernels) on the host, each entry
// adapted to ATen calls on Ember's own buffers (no copies per op). It is the reference second
// backend: every test table runs on it. A plugin loaded on first use of Device::libtorch()
// (src/tensor/plugin.cpp). This header holds the helpers its files share and the class; it is
// internal, the only place ATen's headers meet Ember's.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/InferenceMode.h>

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"

namespace ember::libtorch {

at::ScalarType to_aten(DType dtype);

/// `t` as an ATen tensor over the same memory (no copy, not owning it). ATen has no negative
/// strides: dims that have one (flip's views) are read forwards and flipped, which copies.
at::Tensor view_of(const RawTensor& t);

/// view_of(t), in f32 when t is f16 or bf16: ATen 1.13 has no CPU kernels for half types in
/// many ops, and Ember's Cpu kernels compute them in f32 too (then round once), so results agree.
at::Tensor compute_view(const RawTensor& t);

/// r in `dtype`; floats to integers saturate at the type's bounds, NaN gives 0 (Ember's cast).
at::Tensor saturate_to(const at::Tensor& r, at::ScalarType dtype);

/// out = r, cast to out's dtype as saturate_to does (half types are rounded once).
void assign(const RawTensor& out, const at::Tensor& r);

/// The dims ATen's pooling functions expect: [1, B..., *spatial] flattened to [1, B, *spatial].
at::Tensor as_pool_input(const at::Tensor& t, int spatial);

[[noreturn]] void fail(std::string_view op, const char* what);

/// Runs f with ATen below autograd (Ember's own tape records the op; no version counters), and
/// turns ATen's errors into an ember::Error naming `op`.
template <class F>
void run(std::string_view op, F&& f) {
  c10::InferenceMode guard;
  try {
    f();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    fail(op, e.what_without_backtrace());
  } catch (const std::exception& e) {  // oneDNN's errors, std::bad_alloc
    fail(op, e.what());
  }
}

class LibTorchBackend final : public Backend {
 public:
  std::string_view name() const override { return "libtorch"; }
  bool supports(OpFamily family, DType dtype) const override;
  bool host_memory() const override { return true; }
  DType pool_index_dtype() const override { return DType::i64; }

  std::shared_ptr<Storage> allocate(size_t nbytes, Device device) override;
  MemoryStats memory_stats(Device device) const override;
  void reset_peak_memory(Device device) override;
  void copy(const RawTensor& src, const RawTensor& dst) override;
  void write_from_host(const void* host, const RawTensor& dst) override;
  void read_to_host(const RawTensor& src, void* host) override;
  void fill(const RawTensor& dst, const Scalar& value) override;
  void iota(const RawTensor& dst, double start, double step) override;

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
  RangeError check_range(const RawTensor& x, const RangeCheck& check) override;

  void conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias, const ConvParams& p,
            const RawTensor& out) override;
  void conv_backward_data(const RawTensor& grad_out, const RawTensor& w, const ConvParams& p,
                          const RawTensor& grad_in) override;
  void conv_backward_weight(const RawTensor& x, const RawTensor& grad_out, const ConvParams& p,
                            const RawTensor& grad_w, const RawTensor& grad_bias) override;
  void conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                     const RawTensor& grad_out, const ConvParams& p, const RawTensor& grad_in,
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
  void channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                   const RawTensor& k0, const RawTensor& out) override;

  void adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                 const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq, const AdamParams& p,
                 const RawTensor& param_out, const RawTensor& exp_avg_out,
                 const RawTensor& exp_avg_sq_out, const RawTensor& max_exp_avg_sq_out) override;
};

}  // namespace ember::libtorch
