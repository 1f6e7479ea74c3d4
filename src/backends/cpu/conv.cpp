// Convolution: forward, backward data (the transposed convolution) and backward weight, over 1 to
// 3 spatial dims with stride, padding, dilation and groups. f32 runs through oneDNN's
// convolution primitives when it is present; f64, builds without oneDNN (embedded) and shapes
// oneDNN rejects use im2col + the backend's GEMM (OpenBLAS or the blocked kernel). f16 and bf16
// are computed in f32 and rounded once, as PyTorch's CPU kernels do.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "allocator.hpp"
#include "conv_direct.hpp"
#include "cpu_backend.hpp"
#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"
#include "parallel.hpp"

#if defined(EMBER_HAVE_DNNL)
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>
#endif

namespace ember::cpu {
namespace {

// The geometry with the spatial dims right-aligned in three slots (leading slots have size 1),
// so one loop nest serves 1-d, 2-d and 3-d.
struct Geo {
  int64_t n, c, o, g, cg, og;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  int64_t in_size = 1, out_size = 1, k_size = 1;  // products over the spatial dims
};

Geo geometry(const Shape& x, const Shape& w, const Shape& y, const ConvParams& p) {
  Geo g{};
  g.n = x[0];
  g.c = x[1];
  g.o = y[1];
  g.g = p.groups;
  g.cg = g.c / g.g;
  g.og = g.o / g.g;
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - p.spatial);  // index into the op's spatial dims, < 0 for padding slots
    const bool used = j >= 0;
    g.in[i] = used ? x[2 + j] : 1;
    g.out[i] = used ? y[2 + j] : 1;
    g.k[i] = used ? w[2 + j] : 1;
    g.s[i] = used ? p.stride[j] : 1;
    g.p[i] = used ? p.padding[j] : 0;
    g.d[i] = used ? p.dilation[j] : 1;
    g.in_size *= g.in[i];
    g.out_size *= g.out[i];
    g.k_size *= g.k[i];
  }
  return g;
}

// A 1x1 kernel with stride 1 and no padding reads x itself as its im2col matrix.
bool is_pointwise(const Geo& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.k[i] != 1 || g.s[i] != 1 || g.p[i] != 0) return false;
  }
  return true;
}

// col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] (0 outside) for `channels`
// planes of one image. Parallel over (channel, kernel offset) rows.
template <class T>
void im2col(const T* x, const Geo& g, int64_t channels, T* col) {
  const int64_t rows = channels * g.k_size;
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.out_size)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   const int64_t c = r / g.k_size, kk = r % g.k_size;
                   const int64_t kd = kk / (g.k[1] * g.k[2]), kh = (kk / g.k[2]) % g.k[1],
                                 kw = kk % g.k[2];
                   const T* plane = x + c * g.in_size;
                   T* dst = col + r * g.out_size;
                   for (int64_t od = 0; od < g.out[0]; ++od) {
                     const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
                     for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                       const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
                       T* row = dst + (od * g.out[1] + oh) * g.out[2];
                       if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                         std::fill(row, row + g.out[2], T(0));
                         continue;
                       }
                       const T* src = plane + (id * g.in[1] + ih) * g.in[2];
                       const int64_t w0 = kw * g.d[2] - g.p[2];
                       for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                         const int64_t iw = ow * g.s[2] + w0;
                         row[ow] = iw >= 0 && iw < g.in[2] ? src[iw] : T(0);
                       }
                     }
                   }
                 }
               });
}

// The adjoint of im2col: x[c, ...] += col[(c, k...), (o...)], x zeroed first. Parallel over
// channels, each of which owns its plane.
template <class T>
void col2im(const T* col, const Geo& g, int64_t channels, T* x) {
  parallel_for(0, channels,
               std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.k_size * g.out_size)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) {
                   T* plane = x + c * g.in_size;
                   std::fill(plane, plane + g.in_size, T(0));
                   for (int64_t kk = 0; kk < g.k_size; ++kk) {
                     const int64_t kd = kk / (g.k[1] * g.k[2]), kh = (kk / g.k[2]) % g.k[1],
                                   kw = kk % g.k[2];
                     const T* src = col + (c * g.k_size + kk) * g.out_size;
                     for (int64_t od = 0; od < g.out[0]; ++od) {
                       const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
                       if (id < 0 || id >= g.in[0]) continue;
                       for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                         const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
                         if (ih < 0 || ih >= g.in[1]) continue;
                         T* dst = plane + (id * g.in[1] + ih) * g.in[2];
                         const T* row = src + (od * g.out[1] + oh) * g.out[2];
                         const int64_t w0 = kw * g.d[2] - g.p[2];
                         for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                           const int64_t iw = ow * g.s[2] + w0;
                           if (iw >= 0 && iw < g.in[2]) dst[iw] += row[ow];
                         }
                       }
                     }
                   }
                 }
               });
}

// A [rows, cols] matrix at `offset` elements into t's storage, with row stride `ld`, as the
// 3-D operand the backend's matmul takes; `trans` views it transposed.
RawTensor mat(const RawTensor& t, int64_t offset, int64_t rows, int64_t cols, int64_t ld,
              bool trans = false) {
  if (trans) return t.view(Shape{1, cols, rows}, Strides{0, 1, ld}, t.offset + offset);
  return t.view(Shape{1, rows, cols}, Strides{0, ld, 1}, t.offset + offset);
}

// out[n, g] = w[g] @ col[n, g] (+ bias, then relu when asked), one GEMM per (image, group); the
// GEMM is threaded.
template <class T>
void conv_gemm(Backend& be, const RawTensor& x, const RawTensor& w, const RawTensor& bias,
               bool relu, const Geo& g, const RawTensor& out) {
  const bool pointwise = is_pointwise(g);
  const int64_t ck = g.cg * g.k_size;
  RawTensor col;
  if (!pointwise) col = empty_raw(Shape{g.c * g.k_size, g.out_size}, x.dtype);
  for (int64_t n = 0; n < g.n; ++n) {
    RawTensor src = x;  // this image's columns: x itself when pointwise
    int64_t src_off = n * g.c * g.in_size;
    if (!pointwise) {
      im2col(x.data_as<T>() + n * g.c * g.in_size, g, g.c, col.data_as<T>());
      src = col;
      src_off = 0;
    }
    for (int64_t gi = 0; gi < g.g; ++gi) {
      be.matmul(mat(w, gi * g.og * ck, g.og, ck, ck),
                mat(src, src_off + gi * ck * g.out_size, ck, g.out_size, g.out_size),
                mat(out, (n * g.o + gi * g.og) * g.out_size, g.og, g.out_size, g.out_size));
    }
  }
  if (!bias.defined() && !relu) return;
  T* y = out.data_as<T>();
  const T* b = bias.defined() ? bias.data_as<T>() : nullptr;
  parallel_for(0, g.n * g.o, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.out_size)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   const T bv = b ? b[r % g.o] : T(0);
                   T* row = y + r * g.out_size;
                   for (int64_t j = 0; j < g.out_size; ++j) {
                     const T v = row[j] + bv;
                     row[j] = relu && v < T(0) ? T(0) : v;  // NaN stays, as relu()
                   }
                 }
               });
}

template <class T>
void relu_in_place(const RawTensor& t) {
  T* y = t.data_as<T>();
  parallel_for(0, t.numel(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = y[i] < T(0) ? T(0) : y[i];  // NaN stays, as relu()
  });
}

// grad_bias[o] = the sum of grad_out over the images and positions of channel o, in double.
template <class T>
void conv_backward_bias(const RawTensor& gy, const Geo& g, const RawTensor& gb) {
  const T* src = gy.data_as<T>();
  T* dst = gb.data_as<T>();
  parallel_for(0, g.o, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.n * g.out_size)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t o = lo; o < hi; ++o) {
                   double acc = 0;
                   for (int64_t n = 0; n < g.n; ++n) {
                     acc += run_sum(src + (n * g.o + o) * g.out_size, g.out_size,
                                    [](T v, int64_t) { return static_cast<double>(v); });
                   }
                   dst[o] = static_cast<T>(acc);
                 }
               });
}

// grad_in[n] = col2im(w[g]^T @ grad_out[n, g]).
template <class T>
void conv_backward_data_gemm(Backend& be, const RawTensor& gy, const RawTensor& w, const Geo& g,
                             const RawTensor& gx) {
  const int64_t ck = g.cg * g.k_size;
  const bool pointwise = is_pointwise(g);
  RawTensor col;
  if (!pointwise) col = empty_raw(Shape{g.c * g.k_size, g.out_size}, gx.dtype);
  for (int64_t n = 0; n < g.n; ++n) {
    // Pointwise: the columns are grad_in itself.
    const RawTensor& dst = pointwise ? gx : col;
    const int64_t dst_off = pointwise ? n * g.c * g.in_size : 0;
    for (int64_t gi = 0; gi < g.g; ++gi) {
      be.matmul(mat(w, gi * g.og * ck, g.og, ck, ck, /*trans=*/true),
                mat(gy, (n * g.o + gi * g.og) * g.out_size, g.og, g.out_size, g.out_size),
                mat(dst, dst_off + gi * ck * g.out_size, ck, g.out_size, g.out_size));
    }
    if (!pointwise) col2im(col.data_as<T>(), g, g.c, gx.data_as<T>() + n * g.c * g.in_size);
  }
}

// grad_w[g] = sum over n of grad_out[n, g] @ col[n, g]^T.
template <class T>
void conv_backward_weight_gemm(Backend& be, const RawTensor& x, const RawTensor& gy, const Geo& g,
                               const RawTensor& gw) {
  const int64_t ck = g.cg * g.k_size;
  const bool pointwise = is_pointwise(g);
  RawTensor col, part = empty_raw(Shape{g.o, ck}, gw.dtype);
  if (!pointwise) col = empty_raw(Shape{g.c * g.k_size, g.out_size}, x.dtype);
  T* acc = gw.data_as<T>();
  const T* pp = part.data_as<T>();
  std::fill(acc, acc + gw.numel(), T(0));
  for (int64_t n = 0; n < g.n; ++n) {
    RawTensor src = x;
    int64_t src_off = n * g.c * g.in_size;
    if (!pointwise) {
      im2col(x.data_as<T>() + n * g.c * g.in_size, g, g.c, col.data_as<T>());
      src = col;
      src_off = 0;
    }
    for (int64_t gi = 0; gi < g.g; ++gi) {
      be.matmul(mat(gy, (n * g.o + gi * g.og) * g.out_size, g.og, g.out_size, g.out_size),
                mat(src, src_off + gi * ck * g.out_size, ck, g.out_size, g.out_size, true),
                mat(part, gi * g.og * ck, g.og, ck, ck));
    }
    for (int64_t i = 0; i < gw.numel(); ++i) acc[i] += pp[i];
  }
}

#if defined(EMBER_HAVE_DNNL)
// ---- oneDNN (f32) -------------------------------------------------------------------------------
// Primitives are cached by geometry: building a primitive descriptor walks oneDNN's
// implementation list and costs more than a small convolution (see docs/ARCHITECTURE.md).

enum class DnnlOp : uint8_t { Forward, BackwardData, BackwardWeight };

using Key = std::tuple<DnnlOp, int, bool, std::vector<int64_t>>;

struct Cached {
  dnnl::primitive prim;
  dnnl::memory::desc src, wei, dst;  // the layouts the primitive wants (src/dst: plain)
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory::dims dims_of(std::initializer_list<int64_t> lead, const int64_t* sp, int spatial) {
  dnnl::memory::dims d(lead);
  for (int i = 0; i < spatial; ++i) d.push_back(sp[3 - spatial + i]);
  return d;
}

dnnl::memory::format_tag plain_tag(int spatial) {
  using tag = dnnl::memory::format_tag;
  return spatial == 1 ? tag::ncw : spatial == 2 ? tag::nchw : tag::ncdhw;
}
dnnl::memory::format_tag weight_tag(int spatial, bool grouped) {
  using tag = dnnl::memory::format_tag;
  if (grouped) return spatial == 1 ? tag::goiw : spatial == 2 ? tag::goihw : tag::goidhw;
  return spatial == 1 ? tag::oiw : spatial == 2 ? tag::oihw : tag::oidhw;
}

// A first layer (under 8 input channels, not grouped): see descs().
bool plain_layouts(const Geo& g) { return g.g == 1 && g.c < 8; }

struct DnnlDescs {
  dnnl::memory::desc src, wei, bias, dst;  // with format `any` for the primitive to choose
  dnnl::memory::desc src_plain, wei_plain, dst_plain;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

DnnlDescs descs(const Geo& g, int spatial) {
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  DnnlDescs d;
  const bool grouped = g.g > 1;
  const auto src = dims_of({g.n, g.c}, g.in, spatial), dst = dims_of({g.n, g.o}, g.out, spatial);
  const auto wei =
      grouped ? dims_of({g.g, g.og, g.cg}, g.k, spatial) : dims_of({g.o, g.cg}, g.k, spatial);
  // A first layer (under 8 input channels, not grouped) stays in plain NCHW: with `any`,
  // oneDNN writes its output in 8-channel blocks that must be reordered back, which cost as much
  // as the convolution (Fashion-MNIST CNN, a fixed-batch step: 1.0 ms less on 1 thread, 0.8 on
  // 2; PERFORMANCE.md). Depthwise convolutions (grouped, 1 channel each) keep their blocked
  // kernels.
  const bool plain = plain_layouts(g);
  d.src = md(src, dt::f32, plain ? plain_tag(spatial) : tag::any);
  d.dst = md(dst, dt::f32, plain ? plain_tag(spatial) : tag::any);
  d.wei = md(wei, dt::f32, tag::any);
  d.bias = md({g.o}, dt::f32, tag::x);
  d.src_plain = md(src, dt::f32, plain_tag(spatial));
  d.dst_plain = md(dst, dt::f32, plain_tag(spatial));
  d.wei_plain = md(wei, dt::f32, weight_tag(spatial, grouped));
  for (int i = 3 - spatial; i < 3; ++i) {
    d.strides.push_back(g.s[i]);
    d.dilates.push_back(g.d[i] - 1);  // oneDNN counts the gaps: 0 is a dense kernel
    d.pad_l.push_back(g.p[i]);
    // The right padding that makes the sizes consistent (it may be below the left one).
    d.pad_r.push_back((g.out[i] - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] + 1 - g.in[i] - g.p[i]);
  }
  return d;
}

dnnl::convolution_forward::desc forward_desc(const DnnlDescs& d, bool bias, dnnl::prop_kind pk) {
  using namespace dnnl;
  if (bias) {
    return convolution_forward::desc(pk, algorithm::convolution_direct, d.src, d.wei, d.bias, d.dst,
                                     d.strides, d.dilates, d.pad_l, d.pad_r);
  }
  return convolution_forward::desc(pk, algorithm::convolution_direct, d.src, d.wei, d.dst,
                                   d.strides, d.dilates, d.pad_l, d.pad_r);
}

// A copy (handles are shared), so a concurrent clear() cannot pull it from under the caller.
// `bias`: forward with a bias, or backward weights that also writes the bias gradient; `relu`:
// forward with relu fused as a post-op.
Cached primitive_for(DnnlOp op, const Geo& g, int spatial, bool bias, bool relu) {
  using namespace dnnl;
  static std::mutex mu;
  static std::map<Key, Cached> cache;
  // oneDNN fixes a primitive's thread count when it is created: one made on 1 thread runs on 1
  // thread ever after, so the count is part of the key.
  std::vector<int64_t> k = {g.n, g.c, g.o, g.g, num_threads(), relu ? 1 : 0};
  for (int i = 0; i < 3; ++i) {
    k.insert(k.end(), {g.in[i], g.out[i], g.k[i], g.s[i], g.p[i], g.d[i]});
  }
  Key key{op, spatial, bias, std::move(k)};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 512) cache.clear();  // a bound for programs that sweep shapes

  const DnnlDescs d = descs(g, spatial);
  Cached c;
  if (op == DnnlOp::Forward) {
    primitive_attr attr;
    if (relu) {
      post_ops ops;
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const convolution_forward::primitive_desc pd(forward_desc(d, bias, prop_kind::forward_training),
                                                 attr, engine());
    c = {convolution_forward(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc()};
  } else {
    const convolution_forward::primitive_desc hint(
        forward_desc(d, false, prop_kind::forward_training), engine());
    if (op == DnnlOp::BackwardData) {
      const convolution_backward_data::primitive_desc pd(
          convolution_backward_data::desc(algorithm::convolution_direct, d.src, d.wei, d.dst,
                                          d.strides, d.dilates, d.pad_l, d.pad_r),
          engine(), hint);
      c = {convolution_backward_data(pd), pd.diff_src_desc(), pd.weights_desc(),
           pd.diff_dst_desc()};
    } else {
      const auto desc =
          bias ? convolution_backward_weights::desc(algorithm::convolution_direct, d.src, d.wei,
                                                    d.bias, d.dst, d.strides, d.dilates, d.pad_l,
                                                    d.pad_r)
               : convolution_backward_weights::desc(algorithm::convolution_direct, d.src, d.wei,
                                                    d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
      const convolution_backward_weights::primitive_desc pd(desc, engine(), hint);
      c = {convolution_backward_weights(pd), pd.src_desc(), pd.diff_weights_desc(),
           pd.diff_dst_desc()};
    }
  }
  return cache.emplace(std::move(key), std::move(c)).first->second;
}

// A oneDNN memory over `t`'s buffer in the plain layout, reordered to `want` when the primitive
// prefers another one (blocked channels); `write_back` copies results out again.
// The blocked buffer comes from Ember's caching allocator: oneDNN's own allocation was fresh
// pages on every call (page faults were ~8% of a ResNet block's step).
struct Arg {
  dnnl::memory user, used;
  std::shared_ptr<Storage> buffer;  // keeps `used`'s memory alive until the call is done
};

// Reorder primitives, cached like the convolutions: making one per call cost ~50 us each, as
// much as moving a 3x3 weight (3 of the CNN's 7 reorders a step were weights).
dnnl::reorder reorder_for(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  struct Entry {
    dnnl::memory::desc from, to;
    int threads;
    dnnl::reorder prim;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  const int threads = num_threads();
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache) {
    if (e.threads == threads && e.from == from && e.to == to) return e.prim;
  }
  if (cache.size() >= 256) cache.clear();  // a bound for programs that sweep shapes
  dnnl::reorder prim(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  cache.push_back({from, to, threads, prim});
  return prim;
}

Arg bind(const dnnl::memory::desc& plain, const dnnl::memory::desc& want, void* data,
         dnnl::stream& s, bool is_input) {
  dnnl::memory user(plain, engine(), data);
  if (want == plain) return {user, user, nullptr};
  std::shared_ptr<Storage> buffer = allocate_storage(want.get_size());
  dnnl::memory used(want, engine(), buffer->data());
  if (is_input) reorder_for(plain, want).execute(s, user, used);
  return {user, used, std::move(buffer)};
}
void write_back(Arg& a, dnnl::stream& s) {
  if (a.used != a.user) {
    reorder_for(a.used.get_desc(), a.user.get_desc()).execute(s, a.used, a.user);
  }
}

// The blocked copy of the last few forward inputs, for the weight gradient of the same
// convolution, which wants the same layout: its reorder (as long as the forward's) is skipped.
// An entry matches only the very tensor it was made from (the same storage, by ownership, not
// address, so a freed and reused buffer never matches; a convolution's saved input is never
// written in place), and holds the copy (up to 8 MB) until four later inputs push it out.
struct BlockedInput {
  std::weak_ptr<Storage> storage;
  int64_t offset = 0;
  Shape shape;
  dnnl::memory::desc desc;
  std::shared_ptr<Storage> copy;
};
std::mutex blocked_mu;
std::vector<BlockedInput> blocked_inputs;

bool same_input(const BlockedInput& e, const RawTensor& x, const dnnl::memory::desc& want) {
  return !e.storage.owner_before(x.storage) && !x.storage.owner_before(e.storage) &&
         !e.storage.expired() && e.offset == x.offset && e.shape == x.shape && e.desc == want;
}

void remember_blocked_input(const RawTensor& x, const Arg& a) {
  // At most 4 x 8 MB held: inference, which never asks for the copy, keeps little for nothing.
  if (!a.buffer || a.used.get_desc().get_size() > (size_t{8} << 20)) return;
  std::lock_guard<std::mutex> lock(blocked_mu);
  if (blocked_inputs.size() >= 4) blocked_inputs.erase(blocked_inputs.begin());
  blocked_inputs.push_back({x.storage, x.offset, x.shape, a.used.get_desc(), a.buffer});
}

// The input bound in `want`'s layout: the forward's copy when there is one, else a reorder.
Arg bind_input(const RawTensor& x, const dnnl::memory::desc& plain, const dnnl::memory::desc& want,
               dnnl::stream& s) {
  if (want != plain) {
    std::lock_guard<std::mutex> lock(blocked_mu);
    for (const BlockedInput& e : blocked_inputs) {
      if (same_input(e, x, want)) {
        return {dnnl::memory(plain, engine(), x.data()),
                dnnl::memory(want, engine(), e.copy->data()), e.copy};
      }
    }
  }
  return bind(plain, want, x.data(), s, true);
}

// Forward weights in the primitive's blocked layout, kept across calls for weights that nothing
// trains (ConvParams::constant_weight): the reorder read and wrote every weight on every call
// (ResNet-18's 47 MB at batch 1). An entry matches only the storage it was made from (by
// ownership, as BlockedInput: a freed and reused buffer never matches), whose contents never
// change; entries of freed storages go at the next lookup, the oldest past 256 MB in all.
struct KeptWeight {
  std::weak_ptr<Storage> storage;
  int64_t offset = 0;
  Shape shape;
  dnnl::memory::desc desc;
  std::shared_ptr<Storage> copy;
};
std::mutex kept_mu;
std::vector<KeptWeight> kept_weights;  // oldest first

Arg bind_weight(const RawTensor& w, const dnnl::memory::desc& plain, const dnnl::memory::desc& want,
                dnnl::stream& s) {
  if (want == plain) return bind(plain, want, w.data(), s, true);
  std::lock_guard<std::mutex> lock(kept_mu);
  std::erase_if(kept_weights, [](const KeptWeight& e) { return e.storage.expired(); });
  for (const KeptWeight& e : kept_weights) {
    if (!e.storage.owner_before(w.storage) && !w.storage.owner_before(e.storage) &&
        e.offset == w.offset && e.shape == w.shape && e.desc == want) {
      return {dnnl::memory(plain, engine(), w.data()), dnnl::memory(want, engine(), e.copy->data()),
              e.copy};
    }
  }
  Arg a = bind(plain, want, w.data(), s, true);
  constexpr size_t kBudget = size_t{256} << 20;
  size_t held = want.get_size();
  for (const KeptWeight& e : kept_weights) held += e.copy->nbytes();
  while (!kept_weights.empty() && held > kBudget) {
    held -= kept_weights.front().copy->nbytes();
    kept_weights.erase(kept_weights.begin());
  }
  if (held <= kBudget) kept_weights.push_back({w.storage, w.offset, w.shape, want, a.buffer});
  return a;
}

// `bias`: the forward's bias, or the bias gradient backward weights writes (may be undefined).
// `keep_weight`: the forward's weight may be kept in the primitive's layout (bind_weight).
void conv_dnnl(DnnlOp op, const Geo& g, int spatial, const RawTensor& x, const RawTensor& w,
               const RawTensor& bias, bool relu, const RawTensor& y, bool keep_weight = false) {
  const Cached c = primitive_for(op, g, spatial, bias.defined(), relu);
  const DnnlDescs d = descs(g, spatial);
  dnnl::stream s(engine());
  const bool src_in = op != DnnlOp::BackwardData, wei_in = op != DnnlOp::BackwardWeight,
             dst_in = op != DnnlOp::Forward;
  Arg src =
      src_in ? bind_input(x, d.src_plain, c.src, s) : bind(d.src_plain, c.src, x.data(), s, false);
  if (op == DnnlOp::Forward) remember_blocked_input(x, src);
  Arg wei = op == DnnlOp::Forward && keep_weight ? bind_weight(w, d.wei_plain, c.wei, s)
                                                 : bind(d.wei_plain, c.wei, w.data(), s, wei_in);
  Arg dst = bind(d.dst_plain, c.dst, y.data(), s, dst_in);
  std::unordered_map<int, dnnl::memory> args;
  switch (op) {
    case DnnlOp::Forward:
      args = {{DNNL_ARG_SRC, src.used}, {DNNL_ARG_WEIGHTS, wei.used}, {DNNL_ARG_DST, dst.used}};
      if (bias.defined()) {
        args[DNNL_ARG_BIAS] = dnnl::memory(d.bias, engine(), bias.data());
      }
      break;
    case DnnlOp::BackwardData:
      args = {{DNNL_ARG_DIFF_SRC, src.used},
              {DNNL_ARG_WEIGHTS, wei.used},
              {DNNL_ARG_DIFF_DST, dst.used}};
      break;
    case DnnlOp::BackwardWeight:
      args = {{DNNL_ARG_SRC, src.used},
              {DNNL_ARG_DIFF_WEIGHTS, wei.used},
              {DNNL_ARG_DIFF_DST, dst.used}};
      if (bias.defined()) {
        args[DNNL_ARG_DIFF_BIAS] = dnnl::memory(d.bias, engine(), bias.data());
      }
      break;
  }
  c.prim.execute(s, args);
  if (!src_in) write_back(src, s);
  if (!wei_in) write_back(wei, s);
  if (!dst_in) write_back(dst, s);
  s.wait();
}

// Runs oneDNN; false when it rejects the geometry (an output_padding past the right padding),
// so the caller falls back to the portable kernel.
bool try_dnnl(DnnlOp op, const Geo& g, int spatial, const RawTensor& x, const RawTensor& w,
              const RawTensor& bias, bool relu, const RawTensor& y, bool keep_weight = false) {
  try {
    conv_dnnl(op, g, spatial, x, w, bias, relu, y, keep_weight);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

#if defined(__AVX2__)
// An 8x8 transpose: row k of `in` (8 floats at p[k] + i) to column k of the 8 rows at out.
inline void transpose8(const __m256 r[8], float* out) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]),
               t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]),
               t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]),
               t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
               u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
               u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
               u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(out + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(out + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(out + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(out + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(out + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

// dst[n][b][s][k] = grad_out[n][8b + k][s], 0 where y[n][8b + k][s] <= 0 when y is given, and
// for the channels past c: oneDNN's 8-channel blocked layout of relu_backward(grad_out, y),
// made in the one pass the reorder alone would take.
void mask_to_blocked8(const float* g, const float* y, int64_t n, int64_t c, int64_t sp,
                      float* dst) {
  const int64_t blocks = (c + 7) / 8;
  parallel_for(0, n * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 8 * sp)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   const int64_t c0 = (r % blocks) * 8, cn = std::min<int64_t>(8, c - c0);
                   const int64_t first = ((r / blocks) * c + c0) * sp;
                   float* out = dst + r * sp * 8;
                   int64_t i = 0;
#if defined(__AVX2__)
                   if (cn == 8) {  // 8 positions of the 8 channels at a time
                     for (; i + 8 <= sp; i += 8) {
                       __m256 rows[8];
                       for (int k = 0; k < 8; ++k) {
                         rows[k] = _mm256_loadu_ps(g + first + k * sp + i);
                         if (y) {  // keep where y > 0 (NaN y keeps, as relu_backward)
                           const __m256 off = _mm256_cmp_ps(_mm256_loadu_ps(y + first + k * sp + i),
                                                            _mm256_setzero_ps(), _CMP_LE_OQ);
                           rows[k] = _mm256_andnot_ps(off, rows[k]);
                         }
                       }
                       transpose8(rows, out + i * 8);
                     }
                   }
#endif
                   for (; i < sp; ++i) {
                     for (int64_t k = 0; k < 8; ++k) {
                       const int64_t at = first + k * sp + i;
                       out[i * 8 + k] = k >= cn || (y && y[at] <= 0.0f) ? 0.0f : g[at];
                     }
                   }
                 }
               });
}

// Backward data and weights (with the bias) of a oneDNN convolution from one copy of grad_out
// in the layout both primitives take, masked by y > 0 in the same pass when y is given: the
// separate relu_backward and the second reorder are gone. false (nothing written) when oneDNN
// does not take the geometry or the primitives want different layouts.
bool conv_backward_dnnl(Backend& be, const Geo& g, int spatial, const RawTensor& x,
                        const RawTensor& w, const RawTensor& y, const RawTensor& gy,
                        const RawTensor& gx, const RawTensor& gw, const RawTensor& gb) {
  try {
    const bool data = gx.defined(), weights = gw.defined();
    const Cached cd =
        data ? primitive_for(DnnlOp::BackwardData, g, spatial, false, false) : Cached{};
    const Cached cw =
        weights ? primitive_for(DnnlOp::BackwardWeight, g, spatial, gb.defined(), false) : Cached{};
    const dnnl::memory::desc want = data ? cd.dst : cw.dst;
    if (data && weights && cd.dst != cw.dst) return false;
    const DnnlDescs d = descs(g, spatial);
    dnnl::stream s(engine());
    std::shared_ptr<Storage> buffer;
    dnnl::memory diff;
    using tag = dnnl::memory::format_tag;
    const tag blocked8 = spatial == 1 ? tag::nCw8c : spatial == 2 ? tag::nChw8c : tag::nCdhw8c;
    if (want == dnnl::memory::desc(d.dst_plain.dims(), dnnl::memory::data_type::f32, blocked8)) {
      buffer = allocate_storage(want.get_size());
      mask_to_blocked8(gy.data_as<float>(), y.defined() ? y.data_as<float>() : nullptr, g.n, g.o,
                       g.out_size, static_cast<float*>(buffer->data()));
      diff = dnnl::memory(want, engine(), buffer->data());
    } else {
      RawTensor masked = gy;
      if (y.defined()) {
        masked = empty_raw(gy.shape, gy.dtype);
        be.binary(BinaryOp::ReluBackward, gy, y, masked);
      }
      Arg a = bind(d.dst_plain, want, masked.data(), s, true);
      diff = a.used;
      buffer = a.buffer;
      if (!buffer) buffer = masked.storage;  // keeps the masked copy alive
    }
    if (data) {
      Arg src = bind(d.src_plain, cd.src, gx.data(), s, false);
      Arg wei = bind(d.wei_plain, cd.wei, w.data(), s, true);
      cd.prim.execute(
          s,
          {{DNNL_ARG_DIFF_SRC, src.used}, {DNNL_ARG_WEIGHTS, wei.used}, {DNNL_ARG_DIFF_DST, diff}});
      write_back(src, s);
    }
    if (weights) {
      Arg src = bind_input(x, d.src_plain, cw.src, s);
      Arg wei = bind(d.wei_plain, cw.wei, gw.data(), s, false);
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, src.used}, {DNNL_ARG_DIFF_WEIGHTS, wei.used}, {DNNL_ARG_DIFF_DST, diff}};
      if (gb.defined()) args[DNNL_ARG_DIFF_BIAS] = dnnl::memory(d.bias, engine(), gb.data());
      cw.prim.execute(s, args);
      write_back(wei, s);
    }
    s.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}
#endif

RawTensor to_f32(Backend& be, const RawTensor& t) {
  if (!t.defined()) return t;
  RawTensor c = empty_raw(t.shape, DType::f32);
  be.copy(t, c);
  return c;
}

}  // namespace

// Each entry: empty problems first, then f16/bf16 through f32, then oneDNN or the GEMM path.
void CpuBackend::conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                      const ConvParams& p, const RawTensor& out) {
  if (out.numel() == 0) return;
  const Geo g = geometry(x.shape, w.shape, out.shape, p);
  num_threads();  // settles the thread count before oneDNN or BLAS reads it
  switch (out.dtype) {
    case DType::f32:
      if (conv_direct(x, w, bias, p, out)) return;  // a few input channels: conv_direct.hpp
#if defined(EMBER_HAVE_DNNL)
      // oneDNN's relu post-op is free in its blocked kernels but made the plain-layout (GEMM)
      // one 5x slower (1.1 -> 5.4 ms on the CNN's first layer): there relu is a pass after.
      if (try_dnnl(DnnlOp::Forward, g, p.spatial, x, w, bias, p.relu && !plain_layouts(g), out,
                   p.constant_weight)) {
        if (p.relu && plain_layouts(g)) relu_in_place<float>(out);
        return;
      }
#endif
      return conv_gemm<float>(*this, x, w, bias, p.relu, g, out);
    case DType::f64:
      return conv_gemm<double>(*this, x, w, bias, p.relu, g, out);
    case DType::f16:
    case DType::bf16: {
      const RawTensor y32 = empty_raw(out.shape, DType::f32);
      ConvParams q = p;
      q.constant_weight = false;  // the f32 weight is a copy made for this call
      conv(to_f32(*this, x), to_f32(*this, w), to_f32(*this, bias), q, y32);
      return copy(y32, out);
    }
    default:
      break;
  }
  EMBER_FAIL("[conv] has no Cpu kernel for ", out.dtype);
}

void CpuBackend::conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                    const ConvParams& p, const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) return fill(grad_in, Scalar(0));
  const Geo g = geometry(grad_in.shape, w.shape, grad_out.shape, p);
  num_threads();
  switch (grad_in.dtype) {
    case DType::f32:
#if defined(EMBER_HAVE_DNNL)
      if (try_dnnl(DnnlOp::BackwardData, g, p.spatial, grad_in, w, RawTensor{}, false, grad_out)) {
        return;
      }
#endif
      return conv_backward_data_gemm<float>(*this, grad_out, w, g, grad_in);
    case DType::f64:
      return conv_backward_data_gemm<double>(*this, grad_out, w, g, grad_in);
    case DType::f16:
    case DType::bf16: {
      const RawTensor gx32 = empty_raw(grad_in.shape, DType::f32);
      conv_backward_data(to_f32(*this, grad_out), to_f32(*this, w), p, gx32);
      return copy(gx32, grad_in);
    }
    default:
      break;
  }
  EMBER_FAIL("[conv_transpose] has no Cpu kernel for ", grad_in.dtype);
}

void CpuBackend::conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                      const ConvParams& p, const RawTensor& grad_w,
                                      const RawTensor& grad_bias) {
  if (grad_w.numel() == 0 && !grad_bias.defined()) return;
  if (grad_out.numel() == 0) {
    fill(grad_w, Scalar(0));
    if (grad_bias.defined()) fill(grad_bias, Scalar(0));
    return;
  }
  const Geo g = geometry(x.shape, grad_w.shape, grad_out.shape, p);
  num_threads();
  switch (grad_w.dtype) {
    case DType::f32:
#if defined(EMBER_HAVE_DNNL)
      // Under 8 input channels per group oneDNN pads them to its 8-channel blocks: the first
      // layer of an image CNN (1 channel) took 6.8 ms of a 57 ms training step on the weight
      // gradient alone; im2col + GEMM takes about 4 ms.
      // Grouped convolutions (depthwise: one channel per group) keep oneDNN's own kernels.
      if ((g.g > 1 || g.cg >= 8) && grad_w.numel() > 0 &&
          try_dnnl(DnnlOp::BackwardWeight, g, p.spatial, x, grad_w, grad_bias, false, grad_out)) {
        return;
      }
#endif
      if (grad_w.numel() > 0 && conv_direct_backward_weight(x, grad_out, p, grad_w, grad_bias)) {
        return;
      }
      if (grad_w.numel() > 0) conv_backward_weight_gemm<float>(*this, x, grad_out, g, grad_w);
      if (grad_bias.defined()) conv_backward_bias<float>(grad_out, g, grad_bias);
      return;
    case DType::f64:
      if (grad_w.numel() > 0) conv_backward_weight_gemm<double>(*this, x, grad_out, g, grad_w);
      if (grad_bias.defined()) conv_backward_bias<double>(grad_out, g, grad_bias);
      return;
    case DType::f16:
    case DType::bf16: {
      const RawTensor gw32 = empty_raw(grad_w.shape, DType::f32);
      const RawTensor gb32 =
          grad_bias.defined() ? empty_raw(grad_bias.shape, DType::f32) : RawTensor{};
      conv_backward_weight(to_f32(*this, x), to_f32(*this, grad_out), p, gw32, gb32);
      copy(gw32, grad_w);
      if (grad_bias.defined()) copy(gb32, grad_bias);
      return;
    }
    default:
      break;
  }
  EMBER_FAIL("[conv_backward_weight] has no Cpu kernel for ", grad_w.dtype);
}

}  // namespace ember::cpu

namespace ember::cpu {

void CpuBackend::conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                               const RawTensor& grad_out, const ConvParams& p,
                               const RawTensor& grad_in, const RawTensor& grad_w,
                               const RawTensor& grad_bias) {
  num_threads();
#if defined(EMBER_HAVE_DNNL)
  const Geo g = geometry(x.shape, w.shape, grad_out.shape, p);
  // Both gradients through oneDNN (the weight gradient's small-channel fallback aside).
  const bool dnnl_weights = !grad_w.defined() || g.g > 1 || g.cg >= 8;
  if (grad_out.dtype == DType::f32 && grad_out.numel() > 0 && x.numel() > 0 &&
      (grad_in.defined() || grad_w.defined()) && dnnl_weights &&
      (grad_w.defined() || !grad_bias.defined()) &&
      conv_backward_dnnl(*this, g, p.spatial, x, w, y, grad_out, grad_in, grad_w, grad_bias)) {
    return;
  }
#endif
  // The first layer's direct kernel reads the relu mask itself (a pass over the gradient less).
  if (!grad_in.defined() && grad_w.defined() && grad_out.dtype == DType::f32 &&
      conv_direct_backward_weight(x, grad_out, p, grad_w, grad_bias, y)) {
    return;
  }
  RawTensor gy = grad_out;
  if (y.defined()) {
    gy = empty_raw(grad_out.shape, grad_out.dtype);
    binary(BinaryOp::ReluBackward, grad_out, y, gy);
  }
  if (grad_in.defined()) conv_backward_data(gy, w, p, grad_in);
  if (grad_w.defined()) return conv_backward_weight(x, gy, p, grad_w, grad_bias);
  if (!grad_bias.defined()) return;
  // The bias alone (a frozen weight): a weight-shaped scratch keeps one code path.
  conv_backward_weight(x, gy, p, empty_raw(w.shape, w.dtype), grad_bias);
}

}  // namespace ember::cpu
