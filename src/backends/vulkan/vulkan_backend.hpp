// The Vulkan backend (Device::vulkan(i)): compute shaders in GLSL, compiled to SPIR-V at build
// time and embedded; tensors are ranges of large device allocations; work is recorded into
// command buffers and submitted in batches, and the host waits only to read data back
// (docs/VULKAN.md). Internal: public headers include no Vulkan header.
#pragma once

#include "ember/core/backend.hpp"

namespace ember::vulkan {

class VulkanBackend final : public Backend {
 public:
  std::string_view name() const override { return "vulkan"; }
  bool supports(OpFamily family, DType dtype) const override;
  bool has_dtype(Device device, DType dtype) const override;

  MemoryStats memory_stats(Device device) const override;
  void reset_peak_memory(Device device) override;
  void empty_cache(Device device) override;
  std::shared_ptr<Storage> allocate(size_t nbytes, Device device) override;
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
  void adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                 const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq, const AdamParams& p,
                 const RawTensor& param_out, const RawTensor& exp_avg_out,
                 const RawTensor& exp_avg_sq_out, const RawTensor& max_exp_avg_sq_out) override;
  void adam_step_multi(const std::vector<AdamStepItem>& items) override;
  RangeError check_range(const RawTensor& x, const RangeCheck& check) override;
  RangeError synchronize(Device device) override;

 private:
  // One reduce.comp dispatch (reduce_f32.comp with f32): each output folded whole (parts 1)
  // or in `parts` ranges written apart to out [outputs, parts].
  void reduce_pass(ReduceOp op, const RawTensor& x, uint32_t dims_mask, const RawTensor& out,
                   int64_t parts, bool f32);
  // matmul of operands wider than a binding, in blocks that bind (matmul.cpp).
  void matmul_in_blocks(const RawTensor& a, const RawTensor& b, const RawTensor& out);
};

}  // namespace ember::vulkan
