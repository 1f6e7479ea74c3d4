// The defaults of the Backend interface: every entry a backend does not override raises the one
// "no kernel" error, named as the front end names the op, so a new backend can grow family by
// family and a missing kernel is never a crash.
#include "ember/core/backend.hpp"

#include <string>

#include "ember/core/error.hpp"

namespace ember {
namespace {

// "conv2d", "max_pool3d": the front end's names of the spatial ops.
std::string spatial_name(std::string_view kind, int spatial) {
  return detail::cat(kind, spatial, "d");
}

std::string_view random_name(RandomOp op) {
  switch (op) {
    case RandomOp::Uniform:
      return "rand";
    case RandomOp::Normal:
      return "randn";
    case RandomOp::RandInt:
      return "randint";
    case RandomOp::Bernoulli:
      return "bernoulli";
  }
  return "random";
}

}  // namespace

void Backend::no_kernel(std::string_view op, DType dtype) const {
  EMBER_FAIL("[", op, "] no kernel on ", name(), " for ", dtype);
}

bool Backend::supports(OpFamily, DType) const { return false; }
bool Backend::channels_last(OpFamily, DType, int) const { return false; }
bool Backend::has_dtype(Device, DType) const { return true; }

MemoryStats Backend::memory_stats(Device) const { return {}; }
void Backend::reset_peak_memory(Device) {}
void Backend::empty_cache(Device) {}

void Backend::begin_capture(Device device) {
  EMBER_FAIL("[DeviceGraph] ", name(), " cannot capture work on ", device);
}

std::unique_ptr<Backend::CapturedWork> Backend::end_capture(Device device, bool) {
  EMBER_FAIL("[DeviceGraph] ", name(), " has no capture on ", device);
}

std::shared_ptr<Storage> Backend::allocate(size_t nbytes, Device device) {
  EMBER_FAIL("[allocate] no allocator on ", name(), " for ", nbytes, " bytes on ", device);
}
void Backend::copy(const RawTensor& src, const RawTensor& dst) {
  if (src.dtype != dst.dtype) {
    EMBER_FAIL("[copy] no kernel on ", name(), " for ", src.dtype, " to ", dst.dtype);
  }
  no_kernel("copy", dst.dtype);
}
void Backend::write_from_host(const void*, const RawTensor& dst) {
  no_kernel("write_from_host", dst.dtype);
}
void Backend::read_to_host(const RawTensor& src, void*) { no_kernel("read_to_host", src.dtype); }
void Backend::fill(const RawTensor& dst, const Scalar&) { no_kernel("fill", dst.dtype); }
void Backend::iota(const RawTensor& dst, double, double) { no_kernel("arange", dst.dtype); }
void Backend::random(RandomOp op, const RandomParams&, const RawTensor& dst) {
  no_kernel(random_name(op), dst.dtype);
}

void Backend::unary(UnaryOp op, const UnaryParams&, const RawTensor& x, const RawTensor&) {
  no_kernel(op_name(op), x.dtype);
}
void Backend::binary(BinaryOp op, const RawTensor& a, const RawTensor&, const RawTensor&) {
  no_kernel(op_name(op), a.dtype);
}
void Backend::where(const RawTensor&, const RawTensor& a, const RawTensor&, const RawTensor&) {
  no_kernel("where", a.dtype);
}

void Backend::reduce(ReduceOp op, const RawTensor& x, uint32_t, const RawTensor&) {
  no_kernel(op_name(op), x.dtype);
}
void Backend::arg_reduce(ArgReduceOp op, const RawTensor& x, int, const RawTensor&,
                         const RawTensor&) {
  no_kernel(op_name(op), x.dtype);
}
void Backend::scan(ScanOp op, const RawTensor& x, int, const RawTensor&) {
  no_kernel(op_name(op), x.dtype);
}
void Backend::sort(const RawTensor& x, int, bool, const RawTensor&, const RawTensor&) {
  no_kernel("sort", x.dtype);
}
void Backend::topk(const RawTensor& x, int64_t, int, bool, const RawTensor&, const RawTensor&) {
  no_kernel("topk", x.dtype);
}

void Backend::matmul(const RawTensor& a, const RawTensor&, const RawTensor&) {
  no_kernel("matmul", a.dtype);
}
void Backend::matmul_int8(const RawTensor& a, const RawTensor&, const RawTensor&) {
  no_kernel("matmul_int8", a.dtype);
}
void Backend::svd(const RawTensor& a, const RawTensor&, const RawTensor&, const RawTensor&) {
  no_kernel("linalg.svd", a.dtype);
}

void Backend::gather(const RawTensor& x, int, const RawTensor&, const RawTensor&) {
  no_kernel("gather", x.dtype);
}
void Backend::scatter(ScatterReduce reduce, const RawTensor& dst, int, const RawTensor&,
                      const RawTensor&) {
  no_kernel(scatter_name(reduce), dst.dtype);
}
void Backend::index_select(const RawTensor& x, int, const RawTensor&, const RawTensor&) {
  no_kernel("index_select", x.dtype);
}
RawTensor Backend::nonzero(const RawTensor& x) { no_kernel("nonzero", x.dtype); }

void Backend::conv(const RawTensor& x, const RawTensor&, const RawTensor&, const ConvParams& p,
                   const RawTensor&) {
  no_kernel(spatial_name("conv", p.spatial), x.dtype);
}
void Backend::conv_backward_data(const RawTensor& grad_out, const RawTensor&, const ConvParams& p,
                                 const RawTensor&) {
  no_kernel(spatial_name("conv_transpose", p.spatial), grad_out.dtype);
}
void Backend::conv_backward(const RawTensor& x, const RawTensor&, const RawTensor&,
                            const RawTensor&, const ConvParams&, const RawTensor&, const RawTensor&,
                            const RawTensor&) {
  no_kernel("conv_backward", x.dtype);
}
void Backend::conv_backward_weight(const RawTensor& x, const RawTensor&, const ConvParams&,
                                   const RawTensor&, const RawTensor&) {
  no_kernel("conv_backward_weight", x.dtype);
}

void Backend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor&,
                       const RawTensor&) {
  no_kernel(spatial_name("max_pool", p.spatial), x.dtype);
}
void Backend::max_pool_backward(const RawTensor& grad_out, const RawTensor&, const PoolParams&,
                                const RawTensor&) {
  no_kernel("max_pool_backward", grad_out.dtype);
}
void Backend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor&) {
  no_kernel(spatial_name(p.adaptive ? "adaptive_avg_pool" : "avg_pool", p.spatial), x.dtype);
}
void Backend::avg_pool_backward(const RawTensor& grad_out, const PoolParams&, const RawTensor&) {
  no_kernel("avg_pool_backward", grad_out.dtype);
}

void Backend::channel_moments(const RawTensor& x, const RawTensor&) {
  no_kernel("channel_moments", x.dtype);
}
void Backend::channel_dot(const RawTensor& a, const RawTensor&, const RawTensor&,
                          const RawTensor&) {
  no_kernel("channel_dot", a.dtype);
}
void Backend::channel_fma(const RawTensor& a, const RawTensor&, const RawTensor&, const RawTensor&,
                          const RawTensor&, const RawTensor&) {
  no_kernel("channel_fma", a.dtype);
}

void Backend::batch_norm_coefficients(const RawTensor& moments, const RawTensor&, const RawTensor&,
                                      double, const RawTensor&) {
  no_kernel("batch_norm_coefficients", moments.dtype);
}

void Backend::batch_norm_backward_coefficients(const RawTensor& d, const RawTensor&,
                                               const RawTensor&, double, const RawTensor&) {
  no_kernel("batch_norm_backward_coefficients", d.dtype);
}

void Backend::logsumexp_rows(const RawTensor& x, const RawTensor&) {
  no_kernel("logsumexp_rows", x.dtype);
}
void Backend::cross_entropy_backward(const RawTensor& x, const RawTensor&, const RawTensor&,
                                     const RawTensor&, const RawTensor&) {
  no_kernel("cross_entropy_backward", x.dtype);
}
void Backend::softmax_rows(const RawTensor& x, const RawTensor&, bool log, const RawTensor&) {
  no_kernel(log ? "log_softmax" : "softmax", x.dtype);
}
void Backend::softmax_rows_backward(const RawTensor& y, const RawTensor&, bool log,
                                    const RawTensor&) {
  no_kernel(log ? "log_softmax_backward" : "softmax_backward", y.dtype);
}

void Backend::layer_norm(const RawTensor& x, const RawTensor&, const RawTensor&, double,
                         const RawTensor&, const RawTensor&, const RawTensor&) {
  no_kernel("layer_norm", x.dtype);
}
void Backend::layer_norm_backward(const RawTensor& dy, const RawTensor&, const RawTensor&,
                                  const RawTensor&, const RawTensor&, const RawTensor&,
                                  const RawTensor&, const RawTensor&) {
  no_kernel("layer_norm_backward", dy.dtype);
}
void Backend::rms_norm(const RawTensor& x, const RawTensor&, double, const RawTensor&,
                       const RawTensor&) {
  no_kernel("rms_norm", x.dtype);
}
void Backend::rms_norm_backward(const RawTensor& dy, const RawTensor&, const RawTensor&,
                                const RawTensor&, const RawTensor&, const RawTensor&) {
  no_kernel("rms_norm_backward", dy.dtype);
}

void Backend::activation_grad(UnaryOp op, const RawTensor& gy, const RawTensor&, const RawTensor&) {
  no_kernel(std::string(op_name(op)) + "_backward", gy.dtype);
}

bool Backend::attention_supports(const RawTensor&, const RawTensor&, const RawTensor&,
                                 const RawTensor&) const {
  return false;
}
void Backend::attention(const RawTensor& q, const RawTensor&, const RawTensor&, const RawTensor&,
                        const AttentionParams&, const RawTensor&, const RawTensor&) {
  no_kernel("scaled_dot_product_attention", q.dtype);
}
void Backend::attention_backward(const RawTensor& q, const RawTensor&, const RawTensor&,
                                 const RawTensor&, const RawTensor&, const RawTensor&,
                                 const RawTensor&, const AttentionParams&, const RawTensor&,
                                 const RawTensor&, const RawTensor&) {
  no_kernel("scaled_dot_product_attention_backward", q.dtype);
}

void Backend::linear(const RawTensor& x, const RawTensor&, const RawTensor&, const RawTensor&) {
  no_kernel("linear", x.dtype);
}
void Backend::linear_backward_weight(const RawTensor& grad, const RawTensor&, const RawTensor&,
                                     const RawTensor&) {
  no_kernel("linear_backward", grad.dtype);
}

void Backend::adam_step(const RawTensor& param, const RawTensor&, const RawTensor&,
                        const RawTensor&, const RawTensor&, const AdamParams&, const RawTensor&,
                        const RawTensor&, const RawTensor&, const RawTensor&) {
  no_kernel("adam_step", param.dtype);
}

void Backend::adam_step_multi(const std::vector<AdamStepItem>& items) {
  for (const AdamStepItem& it : items) {
    const bool ams = it.params.amsgrad;
    auto scratch = [&](const RawTensor& like) {
      return RawTensor{allocate(like.nbytes(), like.device()), like.shape, like.strides, 0,
                       like.dtype};
    };
    const RawTensor p = scratch(it.param), m = scratch(it.exp_avg), v = scratch(it.exp_avg_sq),
                    x = ams ? scratch(it.max_exp_avg_sq) : RawTensor();
    adam_step(it.param, it.grad, it.exp_avg, it.exp_avg_sq, it.max_exp_avg_sq, it.params, p, m, v,
              x);
    copy(p, it.param);
    copy(m, it.exp_avg);
    copy(v, it.exp_avg_sq);
    if (ams) copy(x, it.max_exp_avg_sq);
  }
}

bool Backend::sgd_step_multi(const std::vector<SgdStepItem>&) { return false; }

// No silent default: a backend that cannot check indices must say so, not skip the check.
RangeError Backend::check_range(const RawTensor& x, const RangeCheck& check) {
  no_kernel(*check.op ? check.op : "check_range", x.dtype);
}

}  // namespace ember
