// The Vulkan backend's convolution and pooling (OpFamily::Conv, OpFamily::Pool) of every float
// dtype: conv.comp and pool.comp (float32, or the others in double), direct loops that gather,
// so results do not depend on scheduling. The spatial sizes go right-aligned into three slots, as
// the Cpu's geometry.
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "binding.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "ember/core/error.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {
namespace {

struct Spatial {
  uint32_t in[3], out[3], k[3], s[3];
  int32_t pad[3];
  uint32_t d[3];
};

// Slot i of 3 for a dim of `spatial` trailing ones: -1 where the slot is a leading size-1 one.
int slot_dim(int i, int spatial) { return i - (3 - spatial); }

// conv_f32.comp's push constants.
struct ConvPush {
  uint32_t n, c, oc, groups;
  uint32_t mode, flags, a_base, w_base;
  uint32_t b_base, out_base, count, type;
  Spatial g;
};
static_assert(sizeof(ConvPush) <= 128, "Vulkan guarantees 128 bytes of push constants");

// The geometry of conv(x [N, C, *in], w [O, C/g, *k]) -> y [N, O, *out].
ConvPush conv_push(const Shape& x, const Shape& w, const Shape& y, const ConvParams& p) {
  ConvPush q{};
  q.n = static_cast<uint32_t>(x[0]);
  q.c = static_cast<uint32_t>(x[1]);
  q.oc = static_cast<uint32_t>(w[0]);
  q.groups = static_cast<uint32_t>(p.groups);
  for (int i = 0; i < 3; ++i) {
    const int j = slot_dim(i, p.spatial);
    const bool used = j >= 0;
    q.g.in[i] = used ? static_cast<uint32_t>(x[2 + j]) : 1;
    q.g.out[i] = used ? static_cast<uint32_t>(y[2 + j]) : 1;
    q.g.k[i] = used ? static_cast<uint32_t>(w[2 + j]) : 1;
    q.g.s[i] = used ? static_cast<uint32_t>(p.stride[j]) : 1;
    q.g.pad[i] = used ? static_cast<int32_t>(p.padding[j]) : 0;
    q.g.d[i] = used ? static_cast<uint32_t>(p.dilation[j]) : 1;
  }
  return q;
}

void check_conv(const char* op, std::initializer_list<const RawTensor*> ts) {
  for (const RawTensor* t : ts) {
    if (!t->defined()) continue;
    if (!is_floating(t->dtype) || t->dtype != (*ts.begin())->dtype) {
      backend().no_kernel(op, t->dtype);
    }
    EMBER_CHECK(t->is_contiguous(), "[", op, "] the Vulkan kernels take contiguous operands");
    check_indexable(*t, op);
  }
}

// Records conv_f32.comp in `mode` with a (binding 0), w (1), bias (2, may be undefined) and out.
void dispatch_conv(ConvPush q, const RawTensor& a, const RawTensor& w, const RawTensor& bias,
                   const RawTensor& out, uint32_t groups) {
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool f32 = out.dtype == DType::f32;  // else conv.comp's ANY variant, in double
  if (!f32) check_wide(c, "conv", out.dtype);
  const Bound ba = bind_bytes(c, a), bw = bind_bytes(c, w), bo = bind_bytes(c, out);
  const Bound bb = bias.defined() ? bind_bytes(c, bias) : bo;  // unread without flags & 1
  q.type = static_cast<uint32_t>(convert_code(out.dtype));
  q.a_base = ba.base;
  q.w_base = bw.base;
  q.b_base = bb.base;
  q.out_base = bo.base;
  q.flags |= bias.defined() ? 1u : 0u;
  const Binding bs[] = {ba.binding, bw.binding, bb.binding, bo.binding};
  c.dispatch(f32 ? c.pipeline("conv_f32", shaders::conv_f32, 4, sizeof q)
                 : c.pipeline("conv_any", shaders::conv_any, 4, sizeof q),
             bs, &q, sizeof q, groups);
}

// Whether conv_tiled.comp's gathers divide with the plain division (a GPU) or fastdiv.glsl's
// multiply-high (a CPU device); EMBER_VULKAN_CONV_DIVISION=plain or =fast overrides. On an H100
// the multipliers' registers cost more than the divisions save: 244 registers an invocation
// against 75 (the driver's statistics), one workgroup an SM against three, and the CNN's step
// 2.1-2.2 ms against 1.84. llvmpipe divides lane by lane (539 against 480 ms for the conv
// bench). The lanes kernel (a CPU device) always multiplies.
bool plain_division(const DeviceContext& c) {
  const bool cpu = c.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  return env_word("EMBER_VULKAN_CONV_DIVISION", "conv", {"fast", "plain"},
                  cpu ? "fast" : "plain") == "plain";
}

// Records conv_tiled.comp (float32), or conv_coop.comp (float16), with x (binding 0; grad_out
// in mode 1), w or grad_out (1), bias (2, may be undefined) and out: an implicit GEMM of an m x n
// output per group, its k in `splits` parts written apart (out [splits, ...]).
void dispatch_conv_tiled(ConvPush q, const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                         const RawTensor& out, int64_t m, int64_t n, int64_t k, const Tiles& t,
                         int64_t splits) {
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const int64_t tiles =
      int64_t{q.groups} * splits * ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn);
  EMBER_CHECK(tiles < (int64_t{1} << 32), "[conv] ", out.shape,
              " has more tiles than the Vulkan kernel counts");
  check_tile_steps(c, "conv", tiles, (k + splits - 1) / splits, t);
  const Bound bx = bind_bytes(c, x), bw = bind_bytes(c, w), bo = bind_bytes(c, out);
  const Bound bb = bias.defined() ? bind_bytes(c, bias) : bo;  // unread without flags & 1
  q.a_base = bx.base;
  q.w_base = bw.base;
  q.b_base = bb.base;
  q.out_base = bo.base;
  q.flags |= bias.defined() ? 1u : 0u;
  q.count = static_cast<uint32_t>(tiles);
  q.type = static_cast<uint32_t>(splits);  // conv_tiled.comp's `splits`
  const Binding bs[] = {bx.binding, bw.binding, bb.binding, bo.binding};
  constexpr int64_t kMaxGroups = 65535;
  const Pipeline& pipeline =
      x.dtype != DType::f16
          ? (plain_division(c) ? gemm_pipeline(c, "conv_plaindiv", shaders::conv_tiled_plain,
                                               shaders::conv_lanes, 4, sizeof q, t)
                               : gemm_pipeline(c, "conv", shaders::conv_tiled, shaders::conv_lanes,
                                               4, sizeof q, t))
          : coop_pipeline(c, "conv",
                          {shaders::conv_coop, shaders::conv_coop_khr, shaders::conv_coop_emulated},
                          4, sizeof q, t);
  c.dispatch(pipeline, bs, &q, sizeof q, static_cast<uint32_t>(std::min(tiles, kMaxGroups)));
}

// Whether a float16 convolution runs on cooperative matrices (conv_coop.comp, the same implicit
// GEMMs as conv_tiled.comp's on gemm_coop.glsl), or on their emulation.
bool coop_conv(const RawTensor& t) {
  const DeviceContext& c = ctx_of(t);
  return t.dtype == DType::f16 && (c.cooperative() || c.emulated_cooperative());
}

// grad_w = parts [splits, grad_w.numel()] summed over the parts in order, in one dispatch (a
// chain of additions took a command per part, 255 of them for conv1 of the Fashion-MNIST CNN;
// a reduction over the parts' dim a workgroup per weight, 260 ms of conv2's on lavapipe).
// float32 parts; grad_w float32, or float16 rounded once.
void sum_parts(const RawTensor& parts, int64_t splits, const RawTensor& grad_w) {
  DeviceContext& c = ctx_of(grad_w);
  std::lock_guard lock(c.mu);
  const Bound bp = bind_bytes(c, parts), bo = bind_bytes(c, grad_w);
  const struct {
    uint32_t count, splits, parts_base, out_base;
  } q{static_cast<uint32_t>(grad_w.numel()), static_cast<uint32_t>(splits), bp.base, bo.base};
  const Binding bs[] = {bp.binding, bo.binding};
  c.dispatch(grad_w.dtype == DType::f16
                 ? c.pipeline("sum_parts_f16", shaders::sum_parts_f16, 2, sizeof q)
                 : c.pipeline("sum_parts", shaders::sum_parts, 2, sizeof q),
             bs, &q, sizeof q, groups_for(grad_w.numel()));
}

// Whether the data gradient takes the implicit GEMM (mode 1) rather than conv.comp's direct
// loops: on GPUs, where the tiles' register blocking wins, and on a CPU device through
// gemm_lanes.glsl, or through gemm_tiled.glsl where EMBER_VULKAN_GEMM=tiled asks for a GPU's
// kernels; not on a CPU device without gemm_lanes.glsl's subgroups, where gemm_tiled.glsl's
// gathers cost more than the direct loops (lavapipe: 2.9 s against 0.83 s for conv2 of the
// Fashion-MNIST CNN at batch 256). EMBER_VULKAN_CONV_DATA=tiled or =direct overrides the choice,
// so that CI's lavapipe tests both.
bool tiled_data_gradient(const DeviceContext& c) {
  const std::string_view want =
      env_word("EMBER_VULKAN_CONV_DATA", "conv_backward_data", {"tiled", "direct"}, "");
  if (!want.empty()) return want == "tiled";
  return c.properties().deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU || use_lanes(c) ||
         gemm_choice() == "tiled";
}

}  // namespace

namespace {

// Samples [first, first + count) of a batch-first tensor (an undefined one stays undefined).
RawTensor samples(const RawTensor& t, int64_t first, int64_t count) {
  return t.defined() ? narrowed(t, 0, first, count) : t;
}

// Runs f(first, count) on the two halves of a batch of n samples.
template <class F>
void batch_halves(int64_t n, const F& f) {
  f(int64_t{0}, n / 2);
  f(n / 2, n - n / 2);
}

// A convolution's bias gradient: grad_out summed over every dim but 1.
void bias_gradient(Backend& be, const RawTensor& grad_out, const RawTensor& grad_bias) {
  uint32_t mask = 0;
  for (int d = 0; d < grad_out.rank(); ++d) mask |= d == 1 ? 0u : 1u << d;
  be.reduce(ReduceOp::Sum, grad_out, mask, grad_bias);
}

// Whether a convolution's or pooling's batch-first operands are too wide to bind (past
// maxStorageBufferRange), and there are samples to halve; w (a convolution's weight) must bind.
bool halve_batch(const RawTensor& a, const RawTensor& b, const RawTensor& w,
                 const RawTensor& indices = RawTensor()) {
  const DeviceContext& c = ctx_of(a);
  if (indices.defined() && !binds(c, indices) && a.rank() > 0 && a.shape[0] > 1) return true;
  EMBER_CHECK(!w.defined() || binds(c, w), "[conv] the weight spans ", span_bytes(w),
              " bytes, more than the ", c.max_binding(), " a shader binds on ",
              c.properties().deviceName, " (maxStorageBufferRange)");
  return a.rank() > 0 && a.shape[0] > 1 && !all_bind(c, {&a, &b});
}

}  // namespace

void VulkanBackend::conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                         const ConvParams& p, const RawTensor& out) {
  const char* op = "conv";
  check_conv(op, {&x, &w, &bias, &out});
  if (out.numel() == 0) return;
  if (halve_batch(x, out, w)) {  // samples are independent: halves of the batch
    return batch_halves(x.shape[0], [&](int64_t first, int64_t count) {
      conv(samples(x, first, count), w, bias, p, samples(out, first, count));
    });
  }
  if (half_in_float32(ctx_of(out), out.dtype) && !coop_conv(out)) {  // binding.hpp's stand_in
    const RawTensor o32 = float32_like(*this, out);
    conv(float32_copy(*this, x), float32_copy(*this, w),
         bias.defined() ? float32_copy(*this, bias) : bias, p, o32);
    return copy(o32, out);
  }
  if (x.numel() == 0 || w.numel() == 0) {  // empty sums: the bias alone
    if (!bias.defined()) return fill(out, Scalar(0.0));
  }
  ConvPush q = conv_push(x.shape, w.shape, out.shape, p);
  q.mode = 0;
  q.flags = p.relu ? 2u : 0u;  // the tiled kernels' epilogue; the direct loops' output after
  const bool coop = coop_conv(out);
  if ((out.dtype == DType::f32 || coop) && x.numel() > 0 && w.numel() > 0) {
    // Per group: [O/g, C/g * taps] x [C/g * taps, N * positions].
    const int64_t m = w.shape[0] / p.groups, n = out.numel() / out.shape[1];
    const VkPhysicalDeviceProperties& props = ctx_of(out).properties();
    const int64_t k = w.numel() / w.shape[0];
    const Tiles t =
        coop ? coop_tiles(ctx_of(out), true) : gemm_tiles(ctx_of(out), m, n, k, p.groups, true);
    EMBER_CHECK(k_parts(props, k, t) == 1, "[conv] ", w.shape, ": each output sums ", k,
                " products, more than ", props.deviceName,
                " sums in one pass (its loops stop after 65,535 steps)");
    return dispatch_conv_tiled(q, x, w, bias, out, m, n, k, t, 1);
  }
  q.flags = 0;
  q.count = static_cast<uint32_t>(out.numel());
  dispatch_conv(q, x.numel() == 0 ? out : x, w.numel() == 0 ? out : w, bias, out,
                groups_for(out.numel()));
  if (p.relu) unary(UnaryOp::Relu, UnaryParams{}, out, out);
}

void VulkanBackend::conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                       const ConvParams& p, const RawTensor& grad_in) {
  const char* op = "conv_backward_data";
  check_conv(op, {&grad_out, &w, &grad_in});
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0 || w.numel() == 0) return fill(grad_in, Scalar(0.0));
  if (halve_batch(grad_out, grad_in, w)) {
    return batch_halves(grad_out.shape[0], [&](int64_t first, int64_t count) {
      conv_backward_data(samples(grad_out, first, count), w, p, samples(grad_in, first, count));
    });
  }
  if (half_in_float32(ctx_of(grad_in), grad_in.dtype) && !coop_conv(grad_in)) {  // stand_in
    const RawTensor g32 = float32_like(*this, grad_in);
    conv_backward_data(float32_copy(*this, grad_out), float32_copy(*this, w), p, g32);
    return copy(g32, grad_in);
  }
  ConvPush q = conv_push(grad_in.shape, w.shape, grad_out.shape, p);
  q.mode = 1;
  const bool coop = coop_conv(grad_in);
  if ((grad_in.dtype == DType::f32 && tiled_data_gradient(ctx_of(grad_in))) || coop) {
    // Per group: [C/g, O/g * taps] x [O/g * taps, N * input positions]. On llvmpipe a k too
    // long for one pass takes the direct loops below, whose sums are shorter.
    const int64_t m = grad_in.shape[1] / p.groups, n = grad_in.numel() / grad_in.shape[1];
    const int64_t k = w.numel() / (w.shape[1] * p.groups);  // O/g * taps
    const VkPhysicalDeviceProperties& props = ctx_of(grad_in).properties();
    const Tiles t = coop ? coop_tiles(ctx_of(grad_in), true)
                         : gemm_tiles(ctx_of(grad_in), m, n, k, p.groups, true);
    if (k_parts(props, k, t) == 1) {
      return dispatch_conv_tiled(q, grad_out, w, RawTensor(), grad_in, m, n, k, t, 1);
    }
  }
  q.count = static_cast<uint32_t>(grad_in.numel());
  dispatch_conv(q, grad_out, w, RawTensor(), grad_in, groups_for(grad_in.numel()));
}

void VulkanBackend::conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                         const ConvParams& p, const RawTensor& grad_w,
                                         const RawTensor& grad_bias) {
  const char* op = "conv_backward_weight";
  check_conv(op, {&x, &grad_out, &grad_w, &grad_bias});
  const int64_t count = grad_w.numel() + (grad_bias.defined() ? grad_bias.numel() : 0);
  if (count == 0) return;
  if (grad_out.numel() == 0) {  // nothing summed
    if (grad_w.numel() > 0) fill(grad_w, Scalar(0.0));
    if (grad_bias.defined() && grad_bias.numel() > 0) fill(grad_bias, Scalar(0.0));
    return;
  }
  if (grad_w.numel() > 0 && halve_batch(x, grad_out, grad_w)) {
    // Each half's weight gradient, added; the bias gradient over the whole batch (reductions
    // of wide tensors go in pieces of their own). The 16-bit floats' halves in float32, so
    // that the sum is rounded once.
    if (dtype_size(grad_w.dtype) == 2) {
      const RawTensor w32 = float32_like(*this, grad_w);
      conv_backward_weight(float32_copy(*this, x), float32_copy(*this, grad_out), p, w32,
                           RawTensor());
      copy(w32, grad_w);
      if (grad_bias.defined() && grad_bias.numel() > 0) bias_gradient(*this, grad_out, grad_bias);
      return;
    }
    const int64_t half = x.shape[0] / 2, n = x.shape[0];
    const RawTensor rest = fresh_like(*this, grad_w);
    conv_backward_weight(samples(x, 0, half), samples(grad_out, 0, half), p, grad_w, RawTensor());
    conv_backward_weight(samples(x, half, n - half), samples(grad_out, half, n - half), p, rest,
                         RawTensor());
    binary(BinaryOp::Add, grad_w, rest, grad_w);
    if (grad_bias.defined() && grad_bias.numel() > 0) bias_gradient(*this, grad_out, grad_bias);
    return;
  }
  if (half_in_float32(ctx_of(grad_out), grad_out.dtype) && !coop_conv(grad_w)) {  // stand_in
    const RawTensor w32 = float32_like(*this, grad_w);
    const RawTensor b32 = grad_bias.defined() ? float32_like(*this, grad_bias) : grad_bias;
    conv_backward_weight(float32_copy(*this, x), float32_copy(*this, grad_out), p, w32, b32);
    copy(w32, grad_w);
    if (grad_bias.defined()) copy(b32, grad_bias);
    return;
  }
  ConvPush q = conv_push(x.shape, grad_w.shape, grad_out.shape, p);
  q.mode = 2;
  const bool coop = coop_conv(grad_w);
  if ((grad_w.dtype == DType::f32 || coop) && grad_w.numel() > 0 && x.numel() > 0) {
    // Per group: [O/g, N * positions] x [N * positions, C/g * taps]; the bias gradient is
    // grad_out summed over every dim but 1. That k (every sample's positions) is long and the
    // output small: parts of k summed apart keep the device busy, each part at least 512 long,
    // enough of them for 256 workgroups on a GPU and 8 on a CPU device (lavapipe, whose
    // threads are few: conv1 of the Fashion-MNIST CNN at batch 64 took 490 ms in one
    // workgroup, 340 in 64); the parts are then added in order. Float16 always goes through
    // float32 parts, rounded once as they are added.
    const int64_t m = grad_w.shape[0] / p.groups, n = grad_w.numel() / grad_w.shape[0];
    const int64_t k = grad_out.numel() / grad_out.shape[1];
    const Tiles t = coop ? coop_tiles(ctx_of(grad_w), true)
                         : gemm_tiles(ctx_of(grad_w), m, n, k, p.groups, true);
    const int64_t tiles = p.groups * ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn);
    const int64_t want =
        ctx_of(grad_w).properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 8 : 256;
    const int64_t splits = std::max({int64_t{1}, std::min(k / 512, (want + tiles - 1) / tiles),
                                     k_parts(ctx_of(grad_w).properties(), k, t)});
    if (splits == 1 && !coop) {
      dispatch_conv_tiled(q, x, grad_out, RawTensor(), grad_w, m, n, k, t, 1);
    } else {
      const int64_t e = grad_w.numel();
      const RawTensor parts{allocate(static_cast<size_t>(splits * e) * sizeof(float), x.device()),
                            Shape{splits, e}, Strides{e, 1}, 0, DType::f32};
      dispatch_conv_tiled(q, x, grad_out, RawTensor(), parts, m, n, k, t, splits);
      sum_parts(parts, splits, grad_w);
    }
    if (grad_bias.defined() && grad_bias.numel() > 0) bias_gradient(*this, grad_out, grad_bias);
    return;
  }
  q.count = static_cast<uint32_t>(count);
  // Elements of grad_w, then of grad_bias: with enough of them to fill the device an invocation
  // each sums its products alone (workgroup barriers are costly, lavapipe's most of all), else
  // a workgroup each shares them. An empty grad_w binds grad_out's range.
  constexpr int64_t kMaxGroups = 65535, kSerial = 8192;
  const bool serial = count >= kSerial;
  q.flags = serial ? 2u : 0u;
  dispatch_conv(q, x.numel() == 0 ? grad_out : x, grad_out, grad_bias,
                grad_w.numel() == 0 ? grad_out : grad_w,
                serial ? groups_for(count) : static_cast<uint32_t>(std::min(count, kMaxGroups)));
}

void VulkanBackend::conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                                  const RawTensor& grad_out, const ConvParams& p,
                                  const RawTensor& grad_in, const RawTensor& grad_w,
                                  const RawTensor& grad_bias) {
  // A fused relu's mask (y is conv's output): grad_out zeroed where y <= 0, once for every
  // gradient.
  RawTensor g = grad_out;
  if (y.defined() && grad_out.numel() > 0) {
    g = RawTensor{allocate(static_cast<size_t>(grad_out.numel()) * dtype_size(grad_out.dtype),
                           grad_out.device()),
                  grad_out.shape, contiguous_strides(grad_out.shape), 0, grad_out.dtype};
    binary(BinaryOp::ReluBackward, grad_out, y, g);
  }
  if (grad_in.defined()) conv_backward_data(g, w, p, grad_in);
  if (grad_w.defined()) {
    conv_backward_weight(x, g, p, grad_w, grad_bias);
  } else if (grad_bias.defined()) {
    bias_gradient(*this, g, grad_bias);  // the bias gradient alone
  }
}

namespace {

// pool_f32.comp's push constants.
struct PoolPush {
  uint32_t planes, mode, flags, count;
  uint32_t a_base, out_base, i_word, type;
  Spatial g;
};
static_assert(sizeof(PoolPush) <= 128, "Vulkan guarantees 128 bytes of push constants");

// The geometry of pooling x [B..., *in] into y [B..., *out].
PoolPush pool_push(const Shape& x, const Shape& y, const PoolParams& p, uint32_t mode) {
  PoolPush q{};
  const int r = x.rank();
  int64_t planes = 1;
  for (int i = 0; i < r - p.spatial; ++i) planes *= x[i];
  q.planes = static_cast<uint32_t>(planes);
  q.mode = mode;
  q.flags = (p.adaptive ? 1u : 0u) | (p.count_include_pad ? 2u : 0u);
  for (int i = 0; i < 3; ++i) {
    const int j = slot_dim(i, p.spatial);
    const bool used = j >= 0;
    q.g.in[i] = used ? static_cast<uint32_t>(x[r - p.spatial + j]) : 1;
    q.g.out[i] = used ? static_cast<uint32_t>(y[r - p.spatial + j]) : 1;
    q.g.k[i] = used ? static_cast<uint32_t>(p.kernel[j]) : 1;
    q.g.s[i] = used ? static_cast<uint32_t>(p.stride[j]) : 1;
    q.g.pad[i] = used ? static_cast<int32_t>(p.padding[j]) : 0;
    q.g.d[i] = used ? static_cast<uint32_t>(p.dilation[j]) : 1;
  }
  return q;
}

// Records pool_f32.comp: a (binding 0), indices (1, may be undefined) and out (2); `count`
// invocations.
void dispatch_pool(PoolPush q, const RawTensor& a, const RawTensor& indices, const RawTensor& out,
                   const char* op) {
  for (const RawTensor* t : {&a, &out}) {
    if (!is_floating(t->dtype) || t->dtype != out.dtype) backend().no_kernel(op, t->dtype);
    EMBER_CHECK(t->is_contiguous(), "[", op, "] the Vulkan kernels take contiguous operands");
    check_indexable(*t, op);
  }
  if (indices.defined()) {
    EMBER_CHECK(
        indices.is_contiguous() && (indices.dtype == DType::i32 || indices.dtype == DType::i64),
        "[", op, "] takes contiguous int32 or int64 indices, got ", indices.dtype);
    q.flags |= indices.dtype == DType::i32 ? 4u : 8u;
  }
  q.count = static_cast<uint32_t>(out.numel());
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool f32 = out.dtype == DType::f32;  // else pool.comp's ANY variant, in double
  if (!f32) check_wide(c, op, out.dtype);
  const Bound ba = bind_bytes(c, a), bo = bind_bytes(c, out);
  q.type = static_cast<uint32_t>(convert_code(out.dtype));
  const Bound bi = indices.defined() ? bind(c, indices) : bo;  // unread and unwritten
  q.a_base = ba.base;
  q.out_base = bo.base;
  q.i_word =
      indices.defined() ? bi.base * static_cast<uint32_t>(dtype_size(indices.dtype) / 4) : 0u;
  const Binding bs[] = {ba.binding, bi.binding, bo.binding};
  // A CPU device (lavapipe) divides through fastdiv.glsl's multipliers (pool_cpu), which each
  // invocation sets up first, so it takes 16 elements an invocation; where an element's loops
  // are short: the window's taps, or backward the outputs whose windows may hold it (llvmpipe
  // stops an invocation's loops, all of them together, after 65,535 steps). Adaptive windows
  // and long loops take pool_f32, an element an invocation.
  int64_t steps = 1;
  for (int j = 0; j < 3; ++j) {
    const int64_t k = q.g.k[j], reach = (k - 1) * q.g.d[j] / q.g.s[j] + 1;
    steps *= q.mode >= 2 ? std::min<int64_t>(reach, q.g.out[j]) : k;
  }
  const bool cpu = f32 && c.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
                   (q.flags & 1u) == 0 && steps <= 16;
  const int64_t per = cpu ? 16 : 1;
  c.dispatch(cpu   ? c.pipeline("pool_cpu", shaders::pool_cpu, 3, sizeof q)
             : f32 ? c.pipeline("pool_f32", shaders::pool_f32, 3, sizeof q)
                   : c.pipeline("pool_any", shaders::pool_any, 3, sizeof q),
             bs, &q, sizeof q, groups_for((out.numel() + per - 1) / per));
}

}  // namespace

void VulkanBackend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                             const RawTensor& indices) {
  if (out.numel() == 0) return;
  if (halve_batch(x, out, RawTensor(), indices)) {  // indices are within a plane: halves
    return batch_halves(x.shape[0], [&](int64_t first, int64_t count) {
      max_pool(samples(x, first, count), p, samples(out, first, count),
               samples(indices, first, count));
    });
  }
  if (half_in_float32(ctx_of(out), out.dtype)) {  // binding.hpp's stand_in
    const RawTensor o32 = float32_like(*this, out);
    max_pool(float32_copy(*this, x), p, o32, indices);
    return copy(o32, out);
  }
  dispatch_pool(pool_push(x.shape, out.shape, p, 0), x, indices, out, "max_pool");
}

void VulkanBackend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) {
  if (out.numel() == 0) return;
  if (halve_batch(x, out, RawTensor())) {
    return batch_halves(x.shape[0], [&](int64_t first, int64_t count) {
      avg_pool(samples(x, first, count), p, samples(out, first, count));
    });
  }
  if (half_in_float32(ctx_of(out), out.dtype)) {
    const RawTensor o32 = float32_like(*this, out);
    avg_pool(float32_copy(*this, x), p, o32);
    return copy(o32, out);
  }
  dispatch_pool(pool_push(x.shape, out.shape, p, 1), x, RawTensor(), out, "avg_pool");
}

void VulkanBackend::max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                      const PoolParams& p, const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) return fill(grad_in, Scalar(0.0));
  EMBER_CHECK(indices.defined(), "[max_pool_backward] needs the forward's indices");
  if (halve_batch(grad_out, grad_in, RawTensor(), indices)) {
    return batch_halves(grad_out.shape[0], [&](int64_t first, int64_t count) {
      max_pool_backward(samples(grad_out, first, count), samples(indices, first, count), p,
                        samples(grad_in, first, count));
    });
  }
  if (half_in_float32(ctx_of(grad_in), grad_in.dtype)) {  // binding.hpp's stand_in
    const RawTensor g32 = float32_like(*this, grad_in);
    max_pool_backward(float32_copy(*this, grad_out), indices, p, g32);
    return copy(g32, grad_in);
  }
  dispatch_pool(pool_push(grad_in.shape, grad_out.shape, p, 2), grad_out, indices, grad_in,
                "max_pool_backward");
}

void VulkanBackend::avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                      const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) return fill(grad_in, Scalar(0.0));
  if (halve_batch(grad_out, grad_in, RawTensor())) {
    return batch_halves(grad_out.shape[0], [&](int64_t first, int64_t count) {
      avg_pool_backward(samples(grad_out, first, count), p, samples(grad_in, first, count));
    });
  }
  if (half_in_float32(ctx_of(grad_in), grad_in.dtype)) {
    const RawTensor g32 = float32_like(*this, grad_in);
    avg_pool_backward(float32_copy(*this, grad_out), p, g32);
    return copy(g32, grad_in);
  }
  dispatch_pool(pool_push(grad_in.shape, grad_out.shape, p, 3), grad_out, RawTensor(), grad_in,
                "avg_pool_backward");
}

}  // namespace ember::vulkan
