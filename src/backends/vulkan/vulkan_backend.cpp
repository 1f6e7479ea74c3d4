// The Vulkan backend's memory, transfers and elementwise kernels: fill, copy and casts, binary
// arithmetic and comparisons, where, unary ops, reductions, scans and matmul, each a compute
// shader from shaders/ (embedded SPIR-V, shaders.hpp). Convolution and pooling are in
// conv_pool.cpp, indexing in index.cpp, range checks in range.cpp.
#include "vulkan_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "../../core/convert.hpp"
#include "binding.hpp"
#include "context.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "ember/core/error.hpp"
#include "shaders.hpp"

namespace ember::vulkan {
namespace {

struct Range {
  DeviceContext* ctx;
  size_t nbytes;
};

void release_range(void* context, void* data, size_t) {
  auto* r = static_cast<Range*>(context);
  {
    std::lock_guard lock(r->ctx->mu);
    r->ctx->release(reinterpret_cast<uintptr_t>(data), r->nbytes);
  }
  delete r;
}

// Ember's BinaryOp as binary.comp numbers it; -1: not there yet.
int binary_code(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return 0;
    case BinaryOp::Sub:
      return 1;
    case BinaryOp::Mul:
      return 2;
    case BinaryOp::Div:
      return 3;
    case BinaryOp::Maximum:
      return 4;
    case BinaryOp::Minimum:
      return 5;
    case BinaryOp::ReluBackward:  // float only, as the ones below
      return 6;
    case BinaryOp::Copysign:
      return 7;
    case BinaryOp::Pow:  // those below in binary.comp's ANY variant only
      return 8;
    case BinaryOp::Atan2:
      return 9;
    case BinaryOp::Hypot:
      return 10;
    case BinaryOp::Remainder:
      return 11;
    case BinaryOp::Fmod:
      return 12;
    case BinaryOp::FloorDivide:
      return 13;
    case BinaryOp::BitwiseAnd:
      return 14;
    case BinaryOp::BitwiseOr:
      return 15;
    case BinaryOp::BitwiseXor:
      return 16;
    case BinaryOp::BitwiseShl:
      return 17;
    case BinaryOp::BitwiseShr:
      return 18;
    default:
      return -1;
  }
}

// compare.comp's numbering of Ember's comparisons and logical ops; -1: not one of them.
int compare_code(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq:
      return 0;
    case BinaryOp::Ne:
      return 1;
    case BinaryOp::Lt:
      return 2;
    case BinaryOp::Le:
      return 3;
    case BinaryOp::Gt:
      return 4;
    case BinaryOp::Ge:
      return 5;
    case BinaryOp::LogicalAnd:
      return 9;
    case BinaryOp::LogicalOr:
      return 10;
    case BinaryOp::LogicalXor:
      return 11;
    default:
      return -1;
  }
}

// The float UnaryOps unary.comp has (its float32 variant, and its ANY one on float16 and
// bfloat16), in its numbering (the index here); erfinv, lgamma, digamma and polygamma are not
// there yet, and the integer and Bool-valued ops take codes 36 to 39 (unary_any_code).
constexpr UnaryOp kUnaryOps[] = {
    UnaryOp::Neg,      UnaryOp::Abs,   UnaryOp::Sign,     UnaryOp::Square, UnaryOp::Relu,
    UnaryOp::Exp,      UnaryOp::Exp2,  UnaryOp::Log,      UnaryOp::Log2,   UnaryOp::Log10,
    UnaryOp::Log1p,    UnaryOp::Expm1, UnaryOp::Sqrt,     UnaryOp::Rsqrt,  UnaryOp::Reciprocal,
    UnaryOp::Sin,      UnaryOp::Cos,   UnaryOp::Tan,      UnaryOp::Asin,   UnaryOp::Acos,
    UnaryOp::Atan,     UnaryOp::Sinh,  UnaryOp::Cosh,     UnaryOp::Tanh,   UnaryOp::Erf,
    UnaryOp::Sigmoid,  UnaryOp::Gelu,  UnaryOp::GeluTanh, UnaryOp::Silu,   UnaryOp::Softplus,
    UnaryOp::Floor,    UnaryOp::Ceil,  UnaryOp::Round,    UnaryOp::Trunc,  UnaryOp::Clamp,
    UnaryOp::PowScalar};

int unary_code(UnaryOp op) {
  for (size_t i = 0; i < std::size(kUnaryOps); ++i) {
    if (kUnaryOps[i] == op) return static_cast<int>(i);
  }
  return -1;
}

// A fill value's bits in T, converted as the Cpu's fill converts it (core/convert.hpp).
template <class T>
uint64_t fill_bits(const Scalar& value) {
  const T v =
      value.kind() == KindId::Float ? convert<T>(value.to_double()) : convert<T>(value.to_int());
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}

// dst = src (strided) converted (convert.comp): into a contiguous dst an invocation writes whole
// words, so sub-word outputs are packed, never shared, and a view's edge words keep their other
// bytes; into a strided one an invocation writes an element.
// With `iota` (start, step), src is dst itself, unread: element i gets start + i * step (i
// counted from `first` in a piece of a tensor wider than a binding).
void convert_fitting(DeviceContext& c, const RawTensor& src, const RawTensor& dst, int from, int to,
                     const char* op, const double* iota, int64_t first);

void convert(DeviceContext& c, const RawTensor& src_in, const RawTensor& dst_in, int from, int to,
             const char* op, const double* iota = nullptr) {
  RawTensor src = src_in;
  RawTensor dst = dst_in;
  collapse_dims({&src, &dst});
  if (src.rank() > kMaxRank) {
    // A view that no collapse brings down to the shaders' 6 dims: a dispatch per index of its
    // leading dim (each a view of one dim less), so that any strided view can be packed.
    for (int64_t i = 0; i < src.shape[0]; ++i) {
      RawTensor s = src, d = dst;
      for (RawTensor* t : {&s, &d}) {
        t->offset += i * t->strides[0];
        t->shape.erase(0);
        t->strides.erase(0);
      }
      convert(c, s, d, from, to, op, nullptr);
    }
    return;
  }
  // A piece of arange's (contiguous) output counts its elements from its own first one.
  within_binding(c, {src, dst}, [&](const std::vector<RawTensor>& v) {
    convert_fitting(c, v[0], v[1], from, to, op, iota, v[1].offset - dst.offset);
  });
}

void convert_fitting(DeviceContext& c, const RawTensor& src, const RawTensor& dst, int from, int to,
                     const char* op, const double* iota, int64_t first) {
  check_indexable(src, op);
  check_indexable(dst, op);
  struct {
    uint32_t count, rank, src_base, dst_byte;
    uint32_t src_type, dst_type, strided, iota;
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
    int32_t dst_stride[kMaxRank];
    uint32_t first, pad1;
    uint64_t start, step;  // arange's: doubles (WIDE), or convert_pair.comp's
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  const bool wide = dtype_size(src.dtype) == 8 || dtype_size(dst.dtype) == 8 || iota != nullptr;
  // int64 and arange on a device without the WIDE variant: convert_pair.comp, an element an
  // invocation.
  const bool pair = wide && !c.wide() && src.dtype != DType::f64 && dst.dtype != DType::f64;
  if (wide && !pair) check_wide(c, op, dtype_size(dst.dtype) == 8 ? dst.dtype : src.dtype);
  if (iota != nullptr) {
    p.iota = 1;
    p.first = static_cast<uint32_t>(first);
    std::memcpy(&p.start, &iota[0], sizeof p.start);
    std::memcpy(&p.step, &iota[1], sizeof p.step);
    // convert_pair.comp: integral start and step as int64 where every value is below 2^53 (exact,
    // as the Cpu's double sums are there), others in float32.
    constexpr double kExact = 9007199254740992.0;  // 2^53
    const auto integral = [&](double v) { return std::floor(v) == v && std::abs(v) < kExact; };
    const double last = static_cast<double>(first + dst.numel());
    if (pair && integral(iota[0]) && integral(iota[1]) &&
        std::abs(iota[0]) + std::abs(iota[1]) * last < kExact) {
      p.start = static_cast<uint64_t>(static_cast<int64_t>(iota[0]));
      p.step = static_cast<uint64_t>(static_cast<int64_t>(iota[1]));
    } else if (pair) {
      p.iota = 2;
      const float start = static_cast<float>(iota[0]), step = static_cast<float>(iota[1]);
      uint32_t bits[2];
      std::memcpy(&bits[0], &start, sizeof start);
      std::memcpy(&bits[1], &step, sizeof step);
      p.start = bits[0];
      p.step = bits[1];
    }
  }
  const Bound s = bind_bytes(c, src), d = bind_bytes(c, dst);
  const uint32_t size = static_cast<uint32_t>(dtype_size(dst.dtype));
  p.count = static_cast<uint32_t>(dst.numel());
  p.rank = static_cast<uint32_t>(src.rank());
  p.src_base = s.base;
  p.dst_byte = d.base * size;
  p.src_type = static_cast<uint32_t>(from);
  p.dst_type = static_cast<uint32_t>(to);
  p.strided = dst.is_contiguous() ? 0u : 1u;
  put_shape(src.shape, p.shape);
  put_strides(src, p.stride);
  put_strides(dst, p.dst_stride);
  const Binding b[] = {s.binding, d.binding};
  const int64_t words = p.strided != 0u
                            ? dst.numel()  // an element an invocation
                            : (p.dst_byte + dst.numel() * size + 3) / 4 - p.dst_byte / 4;
  // The 32-bit variant's push constants end before arange's values.
  const uint32_t size_of_p = wide ? sizeof p : offsetof(decltype(p), first);
  c.dispatch(pair   ? c.pipeline("convert_pair", shaders::convert_pair, 2, size_of_p)
             : wide ? c.pipeline("convert64", shaders::convert64, 2, size_of_p)
                    : c.pipeline("convert", shaders::convert, 2, size_of_p),
             b, &p, size_of_p, groups_for(pair ? dst.numel() : words));
}

}  // namespace

// float64 needs the WIDE variants; int64 takes the PAIR variants without them, and the 16-bit
// floats float32's.
bool VulkanBackend::has_dtype(Device device, DType dtype) const {
  return dtype != DType::f64 || context(device.index).wide();
}

bool VulkanBackend::supports(OpFamily family, DType dtype) const {
  switch (family) {
    case OpFamily::Copy:  // casts between all nine dtypes (convert.comp)
    case OpFamily::Fill:
      return true;
    case OpFamily::Iota:  // in double (convert.comp's WIDE variant)
      return convert_code(dtype) >= 0;
    case OpFamily::Binary:  // every dtype; comparisons write Bool (compare.comp)
      return convert_code(dtype) >= 0;
    case OpFamily::Gather:  // every dtype (index.comp, nonzero.comp)
    case OpFamily::IndexSelect:
    case OpFamily::Scatter:
    case OpFamily::NonZero:
      return convert_code(dtype) >= 0;
    case OpFamily::Where:  // every dtype (where.comp)
      return convert_code(dtype) >= 0;
    case OpFamily::Reduce:  // float32 (reduce_f32.comp), the others in double or int64
      return convert_code(dtype) >= 0;
    case OpFamily::Unary:  // float32; some ops of the others (unary_any_code)
      return convert_code(dtype) >= 0;
    case OpFamily::Scan:  // float32, the others in double or int64
      return convert_code(dtype) >= 0;
    case OpFamily::ArgReduce:  // float32, the others in double or int64
      return convert_code(dtype) >= 0;
    case OpFamily::Svd:  // float32 and float64, in double (svd.comp)
      return dtype == DType::f32 || dtype == DType::f64;
    case OpFamily::Sort:  // every dtype (sort.comp)
    case OpFamily::TopK:
    case OpFamily::Matmul:  // float32, the others in double or int64
      return convert_code(dtype) >= 0;
    case OpFamily::Optim:  // Adam in float32 (adam.comp)
      return dtype == DType::f32;
    case OpFamily::Conv:      // float32 tiled (conv_tiled.comp), the others' direct loops in double
    case OpFamily::ConvRelu:  // in the tiled kernel's epilogue, or after the direct loops
    case OpFamily::Pool:
      return is_floating(dtype);
    default:
      return false;
  }
}

MemoryStats VulkanBackend::memory_stats(Device device) const {
  DeviceContext& c = context(device.index);
  std::lock_guard lock(c.mu);
  MemoryStats s;
  s.in_use = c.in_use();
  s.peak = c.peak();
  s.cached = c.reserved() - c.in_use();
  return s;
}

void VulkanBackend::reset_peak_memory(Device device) {
  DeviceContext& c = context(device.index);
  std::lock_guard lock(c.mu);
  c.reset_peak();
}

void VulkanBackend::empty_cache(Device device) {
  DeviceContext& c = context(device.index);
  std::lock_guard lock(c.mu);
  c.empty_cache();
}

std::shared_ptr<Storage> VulkanBackend::allocate(size_t nbytes, Device device) {
  DeviceContext& c = context(device.index);
  std::lock_guard lock(c.mu);
  const uintptr_t a = c.allocate(nbytes, false);
  return std::make_shared<Storage>(reinterpret_cast<void*>(a), nbytes, device, release_range,
                                   new Range{&c, nbytes});
}

void VulkanBackend::write_from_host(const void* host, const RawTensor& dst) {
  const size_t n = dst.nbytes();
  if (n == 0) return;
  DeviceContext& c = ctx_of(dst);
  std::lock_guard lock(c.mu);
  // Into an idle staging range, then a queued copy: the caller's buffer is free on return and
  // work queued before still sees dst's old bytes. A tensor wider than a binding (staging
  // ranges are bound too) goes in pieces.
  auto [db, dat] = c.locate(reinterpret_cast<uintptr_t>(dst.data()));
  for (size_t done = 0; done < n;) {
    const size_t piece = std::min(n - done, c.max_binding() / 2);
    const uintptr_t s = c.allocate(piece, true);
    auto [sb, sat] = c.locate(s);
    std::memcpy(static_cast<char*>(sb->mapped) + sat, static_cast<const char*>(host) + done, piece);
    c.copy_buffer(sb->buffer, sat, db->buffer, dat + done, piece);
    c.release(s, piece);
    done += piece;
    if (done < n) c.submit();  // so that later pieces reuse this one's staging once it is done
  }
}

void VulkanBackend::read_to_host(const RawTensor& src, void* host) {
  const size_t n = src.nbytes();
  if (n == 0) return;
  DeviceContext& c = ctx_of(src);
  std::lock_guard lock(c.mu);
  auto [b, at] = c.locate(reinterpret_cast<uintptr_t>(src.data()));
  for (size_t done = 0; done < n;) {  // in pieces a binding holds, as write_from_host
    const size_t piece = std::min(n - done, c.max_binding() / 2);
    const uintptr_t s = c.allocate(piece, true);
    auto [sb, sat] = c.locate(s);
    c.copy_buffer(b->buffer, at + done, sb->buffer, sat, piece);
    c.finish();
    std::memcpy(static_cast<char*>(host) + done, static_cast<const char*>(sb->mapped) + sat, piece);
    c.release(s, piece);
    done += piece;
  }
}

void VulkanBackend::copy(const RawTensor& src, const RawTensor& dst) {
  constexpr const char* op = "copy";
  const int from = convert_code(src.dtype), to = convert_code(dst.dtype);
  if (src.dtype != dst.dtype && (from < 0 || to < 0)) no_kernel("cast", src.dtype);
  if (!supports(OpFamily::Copy, dst.dtype)) no_kernel("copy", dst.dtype);
  if (dst.numel() == 0) return;
  DeviceContext& c = ctx_of(dst);
  std::lock_guard lock(c.mu);
  if (src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous()) {
    auto [sb, sat] = c.locate(reinterpret_cast<uintptr_t>(src.data()));
    auto [db, dat] = c.locate(reinterpret_cast<uintptr_t>(dst.data()));
    c.copy_buffer(sb->buffer, sat, db->buffer, dat, dst.nbytes());
    return;
  }
  // Casts, 1- and 2-byte elements and strided destinations: convert.comp.
  if (src.dtype != dst.dtype || dtype_size(dst.dtype) < 4 || !dst.is_contiguous()) {
    return convert(c, src, dst, from, to, src.dtype == dst.dtype ? op : "cast");
  }
  const size_t size = dtype_size(dst.dtype);
  RawTensor from_view = src, to_view = dst;
  collapse_dims({&from_view, &to_view});
  // any rank, and tensors wider than a binding, in pieces
  if (from_view.rank() > kMaxRank || !all_bind(c, {&from_view, &to_view})) {
    return convert(c, src, dst, from, to, op);
  }
  check_indexable(from_view, op);
  const bool pair = size == 8 && !c.wide();  // bits moved as two words
  struct {
    uint32_t count, rank, src_base, dst_base;
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
  } p{};
  const Bound s = bind(c, from_view), d = bind(c, to_view);
  p.count = static_cast<uint32_t>(dst.numel());
  p.rank = static_cast<uint32_t>(from_view.rank());
  p.src_base = s.base;
  p.dst_base = d.base;
  put_shape(from_view.shape, p.shape);
  put_strides(from_view, p.stride);
  const Binding b[] = {s.binding, d.binding};
  c.dispatch(pair        ? c.pipeline("copy_pair", shaders::copy_pair, 2, sizeof p)
             : size == 8 ? c.pipeline("copy64", shaders::copy64, 2, sizeof p)
                         : c.pipeline("copy32", shaders::copy32, 2, sizeof p),
             b, &p, sizeof p, groups_for(dst.numel()));
}

void VulkanBackend::iota(const RawTensor& dst, double start, double step) {
  const int to = convert_code(dst.dtype);
  if (to < 0) no_kernel("arange", dst.dtype);
  if (dst.numel() == 0) return;
  DeviceContext& c = ctx_of(dst);
  std::lock_guard lock(c.mu);
  const double iota[] = {start, step};  // in double, converted as the Cpu's convert()
  convert(c, dst, dst, to, to, "arange", iota);
}

void VulkanBackend::fill(const RawTensor& dst, const Scalar& value) {
  if (!supports(OpFamily::Fill, dst.dtype)) no_kernel("fill", dst.dtype);
  if (dst.numel() == 0) return;
  if (!dst.is_contiguous()) {
    // A strided view (a slice being assigned): the value in one element, copied with stride 0.
    return copy(broadcast_scalar(*this, value, dst.dtype, dst.shape, dst.device()), dst);
  }
  if (!binds(ctx_of(dst), dst)) {  // wider than a binding: in pieces
    RawTensor flat = dst;
    collapse_dims({&flat});
    return within_binding(ctx_of(dst), {flat},
                          [&](const std::vector<RawTensor>& v) { fill(v[0], value); });
  }
  check_indexable(dst, "fill");
  // The value's bits in dst's dtype, converted as the Cpu converts it.
  const uint64_t bits =
      visit_dtype(dst.dtype, [&](auto tag) { return fill_bits<decltype(tag)>(value); });
  const uint32_t size = static_cast<uint32_t>(dtype_size(dst.dtype));
  // A word's pattern: the element's bits repeated (1- and 2-byte elements), or the low half of
  // an 8-byte one (whose high half is `hi`).
  uint32_t word = static_cast<uint32_t>(bits);
  if (size == 1) word = (word & 0xffu) * 0x01010101u;
  if (size == 2) word = (word & 0xffffu) * 0x00010001u;
  DeviceContext& c = ctx_of(dst);
  std::lock_guard lock(c.mu);
  const Bound d = bind_bytes(c, dst);
  struct {
    uint32_t count, first_byte, size, lo, hi;
  } p{static_cast<uint32_t>(dst.numel()), d.base * size, size, word,
      static_cast<uint32_t>(bits >> 32)};
  const int64_t words =
      (p.first_byte + dst.numel() * size + 3) / 4 - p.first_byte / 4;  // the words it touches
  const Binding b[] = {d.binding};
  c.dispatch(c.pipeline("fill", shaders::fill, 1, sizeof p), b, &p, sizeof p, groups_for(words));
}

namespace {

// binary.comp, or compare.comp (to_bool) for the comparisons and the Bool-valued unary
// ops (b = a), whose results are packed four a word: one push-constant layout for both.
// `any`: binary.comp's ANY variant whatever the element size (the ops past the word variants').
void dispatch_binary(bool to_bool, int code, const RawTensor& a_in, const RawTensor& b_in,
                     const RawTensor& out_in, const char* name, bool any = false) {
  RawTensor a = a_in;
  RawTensor b = b_in;
  RawTensor out = out_in;
  collapse_dims({&a, &b, &out});
  within_rank(backend(), {&a, &b, &out});
  if (!all_bind(ctx_of(out), {&a, &b, &out})) {
    return within_binding(ctx_of(out), {a, b, out}, [&](const std::vector<RawTensor>& v) {
      dispatch_binary(to_bool, code, v[0], v[1], v[2], name, any);
    });
  }
  if (to_bool && out.numel() > 0 && reinterpret_cast<uintptr_t>(out.data()) % 4 != 0) {
    // compare.comp writes whole words from its output's first byte: a piece of a Bool output
    // that starts inside a word (a tensor wider than a binding, split) goes through a fresh one.
    Backend& be = backend();
    const RawTensor whole_words = fresh_like(be, out);
    dispatch_binary(to_bool, code, a, b, whole_words, name, any);
    return be.copy(whole_words, out);
  }
  const bool is_int = a.dtype == DType::i32 || a.dtype == DType::i64;
  // 4-byte elements as words, 8-byte ones in the WIDE variants, the others in the ANY ones.
  const size_t size = any ? 1 : dtype_size(a.dtype);
  if (out.numel() == 0) return;
  check_indexable(out, name);
  EMBER_CHECK(out.is_contiguous(), "[", name, "] the Vulkan backend writes contiguous outputs");
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool pair = !any && int64_in_pairs(c, a.dtype);  // binary(): only ops PAIR has
  if (size != 4 && !pair) check_wide(c, name, a.dtype);
  struct {
    uint32_t count, rank, op, out_base;  // compare: out_base in words
    uint32_t a_base, b_base, is_int, type;
    uint32_t shape[kMaxRank];
    int32_t a_stride[kMaxRank];
    int32_t b_stride[kMaxRank];
  } p{};
  const Bound ba = bind_bytes(c, a), bb = bind_bytes(c, b), bo = bind_bytes(c, out);
  // A fresh Bool output starts its 256-byte-aligned range: whole words from its first byte.
  EMBER_CHECK(!to_bool || bo.base % 4 == 0, "[", name,
              "] a Bool output must start on a 4-byte boundary");
  p.count = static_cast<uint32_t>(out.numel());
  p.rank = static_cast<uint32_t>(out.rank());
  p.op = static_cast<uint32_t>(code);
  p.out_base = to_bool ? bo.base / 4 : bo.base;
  p.a_base = ba.base;
  p.b_base = bb.base;
  p.is_int = is_int ? 1u : 0u;
  p.type = static_cast<uint32_t>(convert_code(a.dtype));
  put_shape(out.shape, p.shape);
  put_strides(a, p.a_stride);
  put_strides(b, p.b_stride);
  const Binding bs[] = {ba.binding, bb.binding, bo.binding};
  const uint32_t op_code[] = {p.op};  // binary.comp's specialisation constant
  const Pipeline& pipeline =
      to_bool ? (pair        ? c.pipeline("compare_pair", shaders::compare_pair, 3, sizeof p)
                 : size == 8 ? c.pipeline("compare64", shaders::compare64, 3, sizeof p)
                 : size == 4 ? c.pipeline("compare32", shaders::compare32, 3, sizeof p)
                             : c.pipeline("compare_any", shaders::compare_any, 3, sizeof p))
              : c.pipeline((pair        ? "binary_pair_"
                            : size == 8 ? "binary64_"
                            : size == 4 ? "binary32_"
                                        : "binary_any_") +
                               std::to_string(code),
                           pair        ? shaders::binary_pair
                           : size == 8 ? shaders::binary64
                           : size == 4 ? shaders::binary32
                                       : shaders::binary_any,
                           3, sizeof p, op_code);
  c.dispatch(pipeline, bs, &p, sizeof p, groups_for(to_bool ? (out.numel() + 3) / 4 : out.numel()));
}

}  // namespace

void VulkanBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b,
                           const RawTensor& out) {
  const char* name = op_name(op).data();
  const bool to_bool = compare_code(op) >= 0 && out.dtype == DType::boolean;
  const int code = to_bool ? compare_code(op) : binary_code(op);
  // Floats: every op; integers: all but division (the front end divides them in float),
  // relu_backward, copysign, atan2 and hypot; Bool: the bitwise ops.
  const bool is_float = is_floating(a.dtype);
  const bool word_int = a.dtype == DType::i32 || a.dtype == DType::i64;
  const bool int_op = code < 3 || code == 4 || code == 5 || code == 8 || code >= 11;
  const bool typed = convert_code(a.dtype) >= 0 &&
                     (to_bool || is_float || (a.dtype == DType::boolean ? code >= 14 : int_op)) &&
                     b.dtype == a.dtype && out.dtype == (to_bool ? DType::boolean : a.dtype);
  if (code < 0 || !typed) no_kernel(name, a.dtype);
  if (const DType to = stand_in(ctx_of(out), a.dtype); to != a.dtype && b.dtype == a.dtype) {
    const RawTensor a4 = widened(*this, a, to), b4 = widened(*this, b, to);
    if (to_bool) return binary(op, a4, b4, out);
    const RawTensor o4 = widened_like(*this, out, to);
    binary(op, a4, b4, o4);
    return copy(o4, out);
  }
  // float32's pow, atan2, hypot, remainder, fmod and floor_divide in double where the device has
  // it (binary.comp's ANY variant), in float32 (math32.glsl) where it does not. Division is
  // float32's everywhere: math32.glsl's div_of rounds it correctly on any driver.
  const bool wide = ctx_of(out).wide();
  // int32 and int64 take every op in the word variants (int64 in PAIR on a device without
  // WIDE's features); the 1-byte integers and Bool in the ANY one.
  const bool pair = int64_in_pairs(ctx_of(out), a.dtype);
  const bool any =
      !to_bool && !pair && (is_float ? code > 7 && (wide || a.dtype != DType::f32) : !word_int);
  into_contiguous(*this, out,
                  [&](const RawTensor& o) { dispatch_binary(to_bool, code, a, b, o, name, any); });
}

void VulkanBackend::where(const RawTensor& cond_in, const RawTensor& a_in, const RawTensor& b_in,
                          const RawTensor& out_in) {
  if (!out_in.is_contiguous()) {
    return into_contiguous(*this, out_in,
                           [&](const RawTensor& o) { where(cond_in, a_in, b_in, o); });
  }
  if (const DType to = stand_in(ctx_of(out_in), out_in.dtype);
      to != out_in.dtype && a_in.dtype == out_in.dtype && b_in.dtype == out_in.dtype &&
      cond_in.dtype == DType::boolean) {
    const RawTensor o4 = widened_like(*this, out_in, to);
    where(cond_in, widened(*this, a_in, to), widened(*this, b_in, to), o4);
    return copy(o4, out_in);
  }
  RawTensor cond = cond_in, a = a_in, b = b_in, out = out_in;
  collapse_dims({&cond, &a, &b, &out});
  within_rank(*this, {&cond, &a, &b, &out});
  if (!all_bind(ctx_of(out), {&cond, &a, &b, &out})) {
    return within_binding(ctx_of(out), {cond, a, b, out},
                          [&](const std::vector<RawTensor>& v) { where(v[0], v[1], v[2], v[3]); });
  }
  const size_t size = dtype_size(out.dtype);
  if (convert_code(out.dtype) < 0 || a.dtype != out.dtype || b.dtype != out.dtype ||
      cond.dtype != DType::boolean) {
    no_kernel("where", a.dtype);
  }
  if (out.numel() == 0) return;
  check_operands("where", cond, out);
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  // 8 bytes: WIDE, or PAIR (bits moved as two words) without it; 1 and 2: ANY
  const bool pair = size == 8 && !c.wide();
  if (size < 4) check_wide(c, "where", out.dtype);
  struct {
    uint32_t count, rank, out_base, c_base;
    uint32_t a_base, b_base, type, pad1;
    uint32_t shape[kMaxRank];
    int32_t c_stride[kMaxRank];
    int32_t a_stride[kMaxRank];
    int32_t b_stride[kMaxRank];
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  const Bound bc = bind_bytes(c, cond), ba = bind_bytes(c, a), bb = bind_bytes(c, b),
              bo = bind_bytes(c, out);
  p.type = static_cast<uint32_t>(convert_code(out.dtype));
  p.count = static_cast<uint32_t>(out.numel());
  p.rank = static_cast<uint32_t>(out.rank());
  p.out_base = bo.base;
  p.c_base = bc.base;
  p.a_base = ba.base;
  p.b_base = bb.base;
  put_shape(out.shape, p.shape);
  put_strides(cond, p.c_stride);
  put_strides(a, p.a_stride);
  put_strides(b, p.b_stride);
  const Binding bs[] = {bc.binding, ba.binding, bb.binding, bo.binding};
  c.dispatch(pair        ? c.pipeline("where_pair", shaders::where_pair, 4, sizeof p)
             : size == 8 ? c.pipeline("where64", shaders::where64, 4, sizeof p)
             : size == 4 ? c.pipeline("where32", shaders::where32, 4, sizeof p)
                         : c.pipeline("where_any", shaders::where_any, 4, sizeof p),
             bs, &p, sizeof p, groups_for(out.numel()));
}

void VulkanBackend::arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                               const RawTensor& indices) {
  const char* name = op_name(op).data();
  if (convert_code(x.dtype) < 0 || values.dtype != x.dtype || indices.dtype != DType::i64) {
    no_kernel(name, x.dtype);
  }
  const bool f32 = x.dtype == DType::f32;  // else argreduce.comp's ANY or PAIR variant
  if (values.numel() == 0) return;
  if (!all_bind(ctx_of(values), {&x, &values, &indices})) {  // a wide x: in halves
    return in_halves(
        ctx_of(values), {values, indices, x}, dim, name, [&](const std::vector<RawTensor>& v) {
          const RawTensor xs = bound_or_packed(*this, ctx_of(values), v[2]);
          if (v[0].is_contiguous() && v[1].is_contiguous()) {
            return arg_reduce(op, xs, dim, v[0], v[1]);
          }
          const RawTensor vals = fresh_like(*this, v[0]), idx = fresh_like(*this, v[1]);
          arg_reduce(op, xs, dim, vals, idx);
          copy(vals, v[0]);
          copy(idx, v[1]);
        });
  }
  if (half_in_float32(ctx_of(values), x.dtype)) {  // binding.hpp's stand_in
    const RawTensor v32 = float32_like(*this, values);
    arg_reduce(op, float32_copy(*this, x), dim, v32, indices);
    return copy(v32, values);
  }
  // Integers and Bool on a device without float64: as int64, in the PAIR variant.
  const bool pair = !ctx_of(values).wide() && !is_floating(x.dtype);
  if (pair && x.dtype != DType::i64) {
    const RawTensor v64 = widened_like(*this, values, DType::i64);
    arg_reduce(op, widened(*this, x, DType::i64), dim, v64, indices);
    return copy(v64, values);
  }
  check_operands(name, x, values);
  EMBER_CHECK(indices.is_contiguous(), "[", name, "] the Vulkan backend writes contiguous outputs");
  DeviceContext& c = ctx_of(values);
  std::lock_guard lock(c.mu);
  if (!f32 && !pair) check_wide(c, name, x.dtype);
  struct {
    uint32_t count, rank, len, op;
    uint32_t x_base, v_base, i_word, type;
    int32_t dim_stride, pad1, pad2, pad3;
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
  } p{};
  const Bound bx = bind_bytes(c, x), bv = bind_bytes(c, values), bi = bind(c, indices);
  p.type = static_cast<uint32_t>(convert_code(x.dtype));
  p.count = static_cast<uint32_t>(values.numel());
  p.rank = static_cast<uint32_t>(x.rank());
  p.len = static_cast<uint32_t>(x.shape[dim]);
  p.op = op == ArgReduceOp::ArgMax ? 0u : 1u;
  p.x_base = bx.base;
  p.v_base = bv.base;
  p.i_word = bi.base * 2;  // an int64 is two 32-bit words
  p.dim_stride = static_cast<int32_t>(x.strides[dim]);
  put_shape(values.shape, p.shape);
  put_strides(x, p.stride);
  const Binding bs[] = {bx.binding, bv.binding, bi.binding};
  constexpr int64_t kMaxGroups = 65535;  // a workgroup an output, looping past this
  c.dispatch(f32    ? c.pipeline("argreduce_f32", shaders::argreduce_f32, 3, sizeof p)
             : pair ? c.pipeline("argreduce_pair", shaders::argreduce_pair, 3, sizeof p)
                    : c.pipeline("argreduce_any", shaders::argreduce_any, 3, sizeof p),
             bs, &p, sizeof p, static_cast<uint32_t>(std::min(values.numel(), kMaxGroups)));
}

void VulkanBackend::scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) {
  const char* name = op_name(op).data();
  // In double or int64 as the Cpu (scan.comp's ANY variant), or on a device without float64
  // float32 in float32 and the integers and Bool as int64 in two words (the PAIR variant).
  if (convert_code(x.dtype) < 0 || convert_code(out.dtype) < 0) no_kernel(name, x.dtype);
  if (out.numel() == 0) return;
  if (const DeviceContext& c = ctx_of(out); !all_bind(c, {&x, &out})) {  // a wide x: in halves
    return in_halves(c, {out, x}, dim, name, [&](const std::vector<RawTensor>& v) {
      const RawTensor xs = bound_or_packed(*this, c, v[1]);
      if (v[0].is_contiguous() && binds(c, v[0])) return scan(op, xs, dim, v[0]);
      const RawTensor o = fresh_like(*this, v[0]);
      scan(op, xs, dim, o);
      copy(o, v[0]);
    });
  }
  if (half_in_float32(ctx_of(out), x.dtype) && out.dtype == x.dtype) {  // binding.hpp's stand_in
    const RawTensor o32 = float32_like(*this, out);
    scan(op, float32_copy(*this, x), dim, o32);
    return copy(o32, out);
  }
  const bool pair = !ctx_of(out).wide() && !is_floating(x.dtype) && !is_floating(out.dtype);
  if (pair && (x.dtype != DType::i64 || out.dtype != DType::i64)) {
    const RawTensor o64 = widened_like(*this, out, DType::i64);
    scan(op, widened(*this, x, DType::i64), dim, o64);
    return copy(o64, out);
  }
  check_operands(name, x, out);
  const int64_t len = x.shape[dim], rows = x.numel() / len;
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool f32 = x.dtype == DType::f32 && out.dtype == DType::f32 && !c.wide();
  if (!f32 && !pair) check_wide(c, name, x.dtype);
  struct {
    uint32_t rows, rank, len, op;
    uint32_t x_base, out_base;
    int32_t x_step, out_step;
    uint32_t shape[kMaxRank];
    int32_t x_stride[kMaxRank];
    int32_t out_stride[kMaxRank];
    uint32_t types, pad0, pad1, pad2;
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  const Bound bx = bind_bytes(c, x), bo = bind_bytes(c, out);
  p.types = static_cast<uint32_t>(convert_code(x.dtype)) |
            static_cast<uint32_t>(convert_code(out.dtype)) << 8;
  p.rows = static_cast<uint32_t>(rows);
  p.rank = static_cast<uint32_t>(x.rank());
  p.len = static_cast<uint32_t>(len);
  p.op = op == ScanOp::CumSum ? 0u : 1u;
  p.x_base = bx.base;
  p.out_base = bo.base;
  p.x_step = static_cast<int32_t>(x.strides[dim]);
  p.out_step = static_cast<int32_t>(out.strides[dim]);
  Shape row_shape = x.shape;
  row_shape[dim] = 1;  // the rows are every position but the dim's
  put_shape(row_shape, p.shape);
  put_strides(x, p.x_stride);
  put_strides(out, p.out_stride);
  const Binding bs[] = {bx.binding, bo.binding};
  constexpr int64_t kMaxGroups = 65535;  // a workgroup a row, looping past this
  c.dispatch(f32    ? c.pipeline("scan_f32", shaders::scan_f32, 2, sizeof p)
             : pair ? c.pipeline("scan_pair", shaders::scan_pair, 2, sizeof p)
                    : c.pipeline("scan_any", shaders::scan_any, 2, sizeof p),
             bs, &p, sizeof p, static_cast<uint32_t>(std::min(rows, kMaxGroups)));
}

namespace {

// unary.comp's code of `op` on x's dtype in its ANY variant (-1: none there): the float ops,
// the integer ones, and the Bool-valued tests of every dtype.
int unary_any_code(UnaryOp op, DType x) {
  if (op == UnaryOp::IsNan) return 37;
  if (op == UnaryOp::IsInf) return 38;
  if (op == UnaryOp::LogicalNot) return 39;
  if (x == DType::boolean) return op == UnaryOp::BitwiseNot ? 36 : -1;
  if (!is_floating(x)) {
    switch (op) {
      case UnaryOp::Neg:
      case UnaryOp::Abs:
      case UnaryOp::Sign:
      case UnaryOp::Square:
      case UnaryOp::Relu:
      case UnaryOp::Floor:
      case UnaryOp::Ceil:
      case UnaryOp::Round:
      case UnaryOp::Trunc:
      case UnaryOp::Clamp:
        return unary_code(op);
      case UnaryOp::BitwiseNot:
        return 36;
      default:
        return -1;
    }
  }
  switch (op) {  // the floats: every op, in double (math64.glsl)
    case UnaryOp::Erfinv:
      return 40;
    case UnaryOp::Lgamma:
      return 41;
    case UnaryOp::Digamma:
      return 42;
    case UnaryOp::Polygamma:
      return 43;
    default:
      return unary_code(op);
  }
}

// A clamp bound converted to an integer dtype as the Cpu converts it (saturating).
int64_t int_bound(DType t, double v) {
  return visit_dtype(t, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(ember::convert<T>(v));
    } else {
      return 0;
    }
  });
}

// Integer unary ops on a device without the WIDE variants (unary.comp's integers are in its ANY
// variant, which needs them), composed from the binary ops, comparisons, casts and where that
// int32 and int64 (PAIR) have there: neg, abs, sign, square, relu and clamp, wrapping as the
// Cpu's, and logical_not. x is int32 or int64, out x's dtype (Bool for logical_not); clamp's
// bounds are converted to `bounds`, the dtype x stands in for.
bool int_unary_composed(VulkanBackend& be, UnaryOp op, const UnaryParams& params,
                        const RawTensor& x, const RawTensor& out, DType bounds) {
  auto temp = [&](DType t) { return fresh(be, x.shape, t, x.device()); };
  auto scalar = [&](int64_t v) {  // in x's dtype
    return broadcast_scalar(be, Scalar(v), x.dtype, x.shape, x.device());
  };
  if (op == UnaryOp::LogicalNot) {
    be.binary(BinaryOp::Eq, x, scalar(0), out);
    return true;
  }
  if (op == UnaryOp::IsNan || op == UnaryOp::IsInf) {  // never, for an integer
    be.fill(out, Scalar(false));
    return true;
  }
  switch (op) {
    case UnaryOp::BitwiseNot:  // ~x = -1 - x; a Bool's is its logical not
      if (bounds == DType::boolean) {
        be.binary(BinaryOp::Eq, x, scalar(0), out);
      } else {
        be.binary(BinaryOp::Sub, scalar(-1), x, out);
      }
      return true;
    case UnaryOp::Floor:  // an integer rounds to itself
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      be.copy(x, out);
      return true;
    case UnaryOp::Neg:
      be.binary(BinaryOp::Sub, scalar(0), x, out);
      return true;
    case UnaryOp::Square:
      be.binary(BinaryOp::Mul, x, x, out);
      return true;
    case UnaryOp::Relu:
      be.binary(BinaryOp::Maximum, x, scalar(0), out);
      return true;
    case UnaryOp::Abs: {
      const RawTensor negated = temp(x.dtype), below = temp(DType::boolean);
      be.binary(BinaryOp::Sub, scalar(0), x, negated);
      be.binary(BinaryOp::Lt, x, scalar(0), below);
      be.where(below, negated, x, out);
      return true;
    }
    case UnaryOp::Sign: {  // (x > 0) - (x < 0)
      const RawTensor above = temp(DType::boolean), below = temp(DType::boolean);
      const RawTensor up = temp(x.dtype), down = temp(x.dtype);
      be.binary(BinaryOp::Gt, x, scalar(0), above);
      be.binary(BinaryOp::Lt, x, scalar(0), below);
      be.copy(above, up);
      be.copy(below, down);
      be.binary(BinaryOp::Sub, up, down, out);
      return true;
    }
    case UnaryOp::Clamp: {
      RawTensor from = x;
      if (params.has_a) {
        const RawTensor lifted = params.has_b ? temp(x.dtype) : out;
        be.binary(BinaryOp::Maximum, x, scalar(int_bound(bounds, params.a)), lifted);
        from = lifted;
      }
      if (params.has_b)
        be.binary(BinaryOp::Minimum, from, scalar(int_bound(bounds, params.b)), out);
      if (!params.has_a && !params.has_b) be.copy(x, out);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

void VulkanBackend::unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
                          const RawTensor& out) {
  if (!out.is_contiguous()) {
    return into_contiguous(*this, out, [&](const RawTensor& o) { unary(op, params, x, o); });
  }
  if (half_in_float32(ctx_of(out), x.dtype) && out.numel() > 0) {
    const RawTensor x32 = float32_copy(*this, x);
    if (out.dtype != x.dtype) return unary(op, params, x32, out);  // the Bool-valued tests
    const RawTensor o32 = float32_like(*this, out);
    unary(op, params, x32, o32);
    return copy(o32, out);
  }
  if (!ctx_of(out).wide() && out.numel() > 0 && !is_floating(x.dtype) &&
      (out.dtype == x.dtype || (returns_bool(op) && out.dtype == DType::boolean))) {
    // Integers and Bool, composed; the 1-byte ones as int32 (binding.hpp's stand_in).
    const DType to = stand_in(ctx_of(out), x.dtype);
    const RawTensor x4 = to == x.dtype ? x : widened(*this, x, to);
    if (out.dtype == DType::boolean && (returns_bool(op) || op == UnaryOp::BitwiseNot)) {
      if (int_unary_composed(*this, op, params, x4, out, x.dtype)) return;  // written as Bool
    } else if (to == x.dtype) {
      if (int_unary_composed(*this, op, params, x4, out, x.dtype)) return;
    } else {
      const RawTensor o4 = widened_like(*this, out, to);
      if (int_unary_composed(*this, op, params, x4, o4, x.dtype)) return copy(o4, out);
    }
  }
  if (returns_bool(op) && (x.dtype == DType::f32 || x.dtype == DType::f64) &&
      out.dtype == DType::boolean) {
    // compare.comp's one-operand tests: isnan, isinf, logical_not (x == 0).
    const int code = op == UnaryOp::IsNan ? 6 : (op == UnaryOp::IsInf ? 7 : 8);
    return into_contiguous(*this, out, [&](const RawTensor& o) {
      dispatch_binary(true, code, x, x, o, op_name(op).data());
    });
  }
  // unary.comp's ANY variant (floats in double, rounded to their type as the Cpu's results
  // round), or its float32 variant with the driver's float functions on a device without float64
  // (the special functions there in float32 by the ANY variant's codes, math32.glsl).
  const bool f32 =
      x.dtype == DType::f32 && out.dtype == DType::f32 && !context(x.device().index).wide();
  const int code = f32 && unary_code(op) >= 0 ? unary_code(op) : unary_any_code(op, x.dtype);
  const DType out_dtype = returns_bool(op) ? DType::boolean : x.dtype;
  if (code < 0 || out.dtype != out_dtype || convert_code(x.dtype) < 0) {
    no_kernel(op_name(op), x.dtype);
  }
  if (out.numel() == 0) return;
  RawTensor xs = x, os = out;
  collapse_dims({&xs, &os});
  within_rank(*this, {&xs, &os});
  if (!all_bind(ctx_of(out), {&xs, &os})) {
    return within_binding(ctx_of(out), {xs, os},
                          [&](const std::vector<RawTensor>& v) { unary(op, params, v[0], v[1]); });
  }
  check_operands(op_name(op), xs, os);
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  if (!f32) check_wide(c, op_name(op).data(), x.dtype);
  struct {
    uint32_t count, rank, op, out_base;
    uint32_t x_base, flags, types, pad1;
    float a, b, pad2, pad3;
    uint32_t shape[kMaxRank];
    int32_t x_stride[kMaxRank];
    double da, db;     // ANY only
    int64_t ilo, ihi;  // ANY only
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  const Bound bx = bind_bytes(c, xs), bo = bind_bytes(c, os);
  p.count = static_cast<uint32_t>(out.numel());
  p.rank = static_cast<uint32_t>(xs.rank());
  p.op = static_cast<uint32_t>(code);
  p.out_base = bo.base;
  p.x_base = bx.base;
  p.flags = (params.has_a ? 1u : 0u) | (params.has_b ? 2u : 0u);
  p.types = static_cast<uint32_t>(convert_code(x.dtype)) |
            static_cast<uint32_t>(convert_code(out.dtype)) << 8;
  p.a = static_cast<float>(params.a);
  p.b = static_cast<float>(params.b);
  p.da = params.a;
  p.db = params.b;
  p.ilo = int_bound(x.dtype, params.a);
  p.ihi = int_bound(x.dtype, params.b);
  put_shape(xs.shape, p.shape);
  put_strides(xs, p.x_stride);
  const Binding bs[] = {bx.binding, bo.binding};
  // The float32 variant's push constants end before da.
  const uint32_t size = f32 ? offsetof(decltype(p), da) : sizeof p;
  const uint32_t op_code[] = {p.op};
  const std::string name = (f32 ? "unary_f32_" : "unary_any_") + std::to_string(code);
  c.dispatch(c.pipeline(name, f32 ? shaders::unary_f32 : shaders::unary_any, 2, size, op_code), bs,
             &p, size, groups_for(out.numel()));
}

namespace {

// A reduction whose operand or output spans more than a shader binds (past
// maxStorageBufferRange), in halves of the operand's widest dim: halves of a kept dim reduce
// into their halves of the output; halves of a reduced one into two partial results, then
// folded, in double (or int64) where the device has it, as reduce.comp's parts are. A mean is a
// sum so folded, then divided by its count.
void reduce_in_pieces(VulkanBackend& be, ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                      const RawTensor& out) {
  const DeviceContext& c = ctx_of(out);
  const int rank = x.rank();
  // out (contiguous, its elements in the kept dims' order) as x's shape with the reduced dims 1
  Shape kept = x.shape;
  for (int d = 0; d < rank; ++d) kept[d] = (dims_mask >> d) & 1u ? 1 : x.shape[d];
  RawTensor o = out;
  o.shape = kept;
  o.strides = contiguous_strides(kept);
  int split = -1;  // x's dim of the widest span, among those an output too wide must split
  int64_t widest = 0;
  // A reduced dim is halved only where the two partial results would bind (so that their fold
  // does not come back here), and while x binds only the output needs halving.
  const bool fold =
      is_floating(x.dtype) && (op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Mean);
  const size_t part_size = fold && c.wide() ? 8 : std::max<size_t>(dtype_size(out.dtype), 4);
  const bool kept_only =
      binds(c, x) || static_cast<size_t>(2 * out.numel()) * part_size > c.max_binding() / 2;
  for (int d = 0; d < rank; ++d) {
    const int64_t span = (x.shape[d] - 1) * std::abs(x.strides[d]);
    const bool reduced = (dims_mask >> d) & 1u;
    if (x.shape[d] > 1 && span >= widest && !(kept_only && reduced)) {
      widest = span;
      split = d;
    }
  }
  EMBER_CHECK(split >= 0, "[", op_name(op), "] a view spans ", span_bytes(x),
              " bytes, more than the ", c.max_binding(), " a shader binds on ",
              c.properties().deviceName, " (maxStorageBufferRange)");
  const int64_t n = x.shape[split], half = n / 2;
  const std::pair<int64_t, int64_t> halves[] = {{0, half}, {half, n - half}};
  if (!((dims_mask >> split) & 1u)) {
    for (const auto& [first, count] : halves) {
      be.reduce(op, narrowed(x, split, first, count), dims_mask, narrowed(o, split, first, count));
    }
    return;
  }
  if (op == ReduceOp::Mean) {
    const DType t = c.wide() ? DType::f64 : DType::f32;
    const RawTensor total = fresh(be, kept, t, out.device());
    reduce_in_pieces(be, ReduceOp::Sum, x, dims_mask, total);
    int64_t count = 1;
    for (int d = 0; d < rank; ++d) count *= (dims_mask >> d) & 1u ? x.shape[d] : 1;
    be.binary(BinaryOp::Div, total,
              broadcast_scalar(be, Scalar(static_cast<double>(count)), t, kept, out.device()),
              total);
    return be.copy(total, o);
  }
  // The partials: extremes and all/any exactly in out's dtype, float sums and products in double
  // where the device has it, integers' in out's (int64).
  const DType part = fold && c.wide() ? DType::f64 : out.dtype;
  Shape parts_shape = kept;
  parts_shape[split] = 2;
  const RawTensor parts = fresh(be, parts_shape, part, out.device());
  for (int i = 0; i < 2; ++i) {
    be.reduce(op, narrowed(x, split, halves[i].first, halves[i].second), dims_mask,
              narrowed(parts, split, i, 1));
  }
  be.reduce(op, parts, 1u << split, o);
}

}  // namespace

void VulkanBackend::reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                           const RawTensor& out) {
  if (!out.is_contiguous()) {
    return into_contiguous(*this, out, [&](const RawTensor& o) { reduce(op, x, dims_mask, o); });
  }
  if (half_in_float32(ctx_of(out), x.dtype) && out.numel() > 0) {
    const RawTensor x32 = float32_copy(*this, x);
    if (out.dtype != x.dtype) return reduce(op, x32, dims_mask, out);  // all, any
    const RawTensor o32 = float32_like(*this, out);
    reduce(op, x32, dims_mask, o32);
    return copy(o32, out);
  }
  if (!ctx_of(out).wide() && is_floating(x.dtype) && out.dtype == DType::boolean &&
      (op == ReduceOp::All || op == ReduceOp::Any) && out.numel() > 0) {
    // all and any of floats on a device without float64: of x's truth from its bits (NaN and
    // subnormals are true, -0 is not), a Bool.
    const RawTensor set = fresh(*this, x.shape, DType::boolean, x.device());
    binary(BinaryOp::LogicalOr, x, x, set);
    return reduce(op, set, dims_mask, out);
  }
  // reduce.comp, in double and int64 for every dtype, or reduce_f32.comp for float32 amax and
  // amin (exact in float32) and, on a device without float64, float32 sums (which then lose the
  // Cpu's double accumulation) and reduce_pair.comp the integer ones; all number the ops as
  // ReduceOp does.
  const int xt = convert_code(x.dtype), ot = convert_code(out.dtype);
  if (xt < 0 || ot < 0) no_kernel(op_name(op), x.dtype);
  if (out.numel() == 0) return;
  if (const DeviceContext& c = ctx_of(out); !all_bind(c, {&x, &out})) {
    // a view whose elements fit, spread wider (a column of a wide matrix): packed; else pieces
    if (binds(c, out) && packable(c, x)) {
      return reduce(op, bound_or_packed(*this, c, x), dims_mask, out);
    }
    return reduce_in_pieces(*this, op, x, dims_mask, out);
  }
  EMBER_CHECK(x.numel() < (int64_t{1} << 31), "[", op_name(op), "] ", x.numel(),
              " elements exceed the 2^31 the Vulkan kernels index");
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool f32 = x.dtype == DType::f32 && out.dtype == DType::f32 &&
                   (op == ReduceOp::Amax || op == ReduceOp::Amin ||
                    (!c.wide() && static_cast<int>(op) <= static_cast<int>(ReduceOp::Amin)));
  // Integers and Bool on a device without float64: reduce_pair.comp, in int64 as two words.
  const bool pair =
      !c.wide() && !is_floating(x.dtype) && !is_floating(out.dtype) && op != ReduceOp::Mean;
  if (!f32 && !pair) check_wide(c, op_name(op).data(), x.dtype);
  int64_t red_count = 1;
  for (int d = 0; d < x.rank(); ++d) red_count *= (dims_mask >> d) & 1u ? x.shape[d] : 1;
  // A few outputs of long reductions (a bias gradient: 32 sums of 173,056 values for conv1 of
  // the Fashion-MNIST CNN at batch 256) would leave a GPU mostly idle at a workgroup an output:
  // their reduced elements are cut into parts of at least 16,384, folded apart in double or
  // int64 into [outputs, parts], then the parts folded in order (a mean divides by the whole
  // count, so it is not cut).
  const int64_t outs = out.numel();
  const int64_t parts = f32 || op == ReduceOp::Mean || outs > 64
                            ? 1
                            : std::clamp<int64_t>(std::min(red_count / 16384, 256 / outs), 1, 256);
  if (parts > 1) {
    const bool floating_fold = is_floating(x.dtype) && op != ReduceOp::All && op != ReduceOp::Any;
    const DType part_dtype = floating_fold ? DType::f64 : DType::i64;
    const RawTensor partial{allocate(static_cast<size_t>(outs * parts) * 8, out.device()),
                            Shape{outs, parts}, Strides{parts, 1}, 0, part_dtype};
    reduce_pass(op, x, dims_mask, partial, parts, false);
    return reduce(op, partial, 2u, out);  // the parts, in order
  }
  reduce_pass(op, x, dims_mask, out, 1, f32);
}

void VulkanBackend::reduce_pass(ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                                const RawTensor& out, int64_t parts, bool f32) {
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const int64_t outs = out.numel() / parts;
  const int xt = convert_code(x.dtype), ot = convert_code(out.dtype);
  struct {
    uint32_t out_count, red_count, op, x_base;
    uint32_t out_base, kept_rank, red_rank, types;
    uint32_t kept_shape[kMaxRank];
    int32_t kept_stride[kMaxRank];
    uint32_t red_shape[kMaxRank];
    int32_t red_stride[kMaxRank];
  } p{};
  // The kept dims (the output's, in its order) and the reduced ones, each a list of shapes and
  // strides iterated in row-major order: size-1 dims dropped and neighbours in a list merged
  // where they step as one, so that any rank fits the shader's 6 dims a list when it can.
  int64_t red_count = 1;
  Shape kept_shape, red_shape;
  Strides kept_strides, red_strides;
  for (int d = 0; d < x.rank(); ++d) {
    const bool reduced = (dims_mask >> d) & 1u;
    if (reduced) red_count *= x.shape[d];
    if (x.shape[d] == 1) continue;
    Shape& shape = reduced ? red_shape : kept_shape;
    Strides& strides = reduced ? red_strides : kept_strides;
    const int last = shape.rank() - 1;
    if (last >= 0 && strides[last] == x.strides[d] * x.shape[d]) {
      shape[last] *= x.shape[d];
      strides[last] = x.strides[d];
    } else {
      shape.push_back(x.shape[d]);
      strides.push_back(x.strides[d]);
    }
  }
  EMBER_CHECK(kept_shape.rank() <= kMaxRank && red_shape.rank() <= kMaxRank, "[", op_name(op),
              "] the Vulkan kernels take up to ", kMaxRank, " kept and ", kMaxRank,
              " reduced dims, got ", x.shape);
  p.kept_rank = static_cast<uint32_t>(kept_shape.rank());
  p.red_rank = static_cast<uint32_t>(red_shape.rank());
  put_shape(kept_shape, p.kept_shape);
  put_shape(red_shape, p.red_shape);
  for (int d = 0; d < kept_shape.rank(); ++d) {
    p.kept_stride[d] = static_cast<int32_t>(kept_strides[d]);
  }
  for (int d = 0; d < red_shape.rank(); ++d) p.red_stride[d] = static_cast<int32_t>(red_strides[d]);
  const Bound bx = bind_bytes(c, x), bo = bind_bytes(c, out);
  p.out_count = static_cast<uint32_t>(outs);
  p.red_count = static_cast<uint32_t>(red_count);
  // Short reductions (each output's or part's 64 elements or fewer) an invocation each, in
  // order; the others a workgroup each. reduce_f32.comp is never cut into parts.
  const bool serial = (red_count + parts - 1) / parts <= 64;
  p.op = static_cast<uint32_t>(op) | (parts > 1 ? static_cast<uint32_t>(parts) << 8 : 0u) |
         (serial ? 1u << 24 : 0u);
  p.x_base = x.numel() == 0 ? 0 : bx.base;
  p.out_base = bo.base;
  p.types = static_cast<uint32_t>(xt) | static_cast<uint32_t>(ot) << 8;
  // An empty x is never read (nothing to fold): out's range stands in for its binding.
  const Binding bs[] = {x.numel() == 0 ? bo.binding : bx.binding, bo.binding};
  c.dispatch(f32        ? c.pipeline("reduce_f32", shaders::reduce_f32, 2, sizeof p)
             : c.wide() ? c.pipeline("reduce", shaders::reduce, 2, sizeof p)
                        : c.pipeline("reduce_pair", shaders::reduce_pair, 2, sizeof p),
             bs, &p, sizeof p,
             serial ? groups_for(outs * parts)
                    : static_cast<uint32_t>(std::clamp<int64_t>(outs * parts, 1, 65535)));
}

int device_count() { return count_devices(); }

Backend& backend() {
  static VulkanBackend b;
  return b;
}

std::string device_name(int index) { return context(index).properties().deviceName; }
bool cooperative_matrix(int index) { return context(index).cooperative(); }
size_t max_binding(int index) { return context(index).max_binding(); }
bool cooperative_matrix_emulated(int index) { return context(index).emulated_cooperative(); }

bool profiling(int index) { return context(index).profiling(); }

std::string profile(int index, bool reset) {
  DeviceContext& c = context(index);
  std::lock_guard lock(c.mu);
  EMBER_CHECK(c.profiling(), "[profile] vulkan:", index,
              " is not timing its commands: set EMBER_VULKAN_PROFILE=1 before its first use (a "
              "queue without timestamps cannot time them; the device said so on stderr then)");
  return c.profile(reset);
}

}  // namespace ember::vulkan
