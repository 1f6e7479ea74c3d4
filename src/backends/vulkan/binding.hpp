// What every Vulkan kernel's host side does: bind a tensor's bytes as a storage buffer, size the
// grid, put shapes and strides in push constants, and check what the shaders can index.
// Internal to src/backends/vulkan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "context.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "ember/core/raw_tensor.hpp"

namespace ember::vulkan {

constexpr uint32_t kThreads = 256;  // every shader's local_size_x
constexpr int kMaxRank = 6;         // the strided shaders' push constants hold 6 dims

inline DeviceContext& ctx_of(const RawTensor& t) { return context(t.device().index); }

// Workgroups for n elements: the shaders loop, so a bounded grid covers any n.
inline uint32_t groups_for(int64_t n) {
  return static_cast<uint32_t>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

// The bytes a strided tensor touches, bound as a storage buffer: its block's buffer from an
// aligned offset at or below the lowest element; `base` is the tensor's first element (index 0)
// counted in elements from the binding's start.
struct Bound {
  Binding binding;
  uint32_t base;
};
inline Bound bind(DeviceContext& c, const RawTensor& t) {
  const int64_t size = static_cast<int64_t>(dtype_size(t.dtype));
  int64_t lo = 0, hi = 0;  // element offsets from element 0
  for (int d = 0; d < t.rank(); ++d) {
    if (t.shape[d] == 0) return {{VK_NULL_HANDLE, 0, 0}, 0};
    const int64_t reach = (t.shape[d] - 1) * t.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  auto [block, at] = c.locate(reinterpret_cast<uintptr_t>(t.data()));
  const int64_t first = static_cast<int64_t>(at) + lo * size;
  EMBER_CHECK(first >= 0, "[vulkan] a view reaches before its storage");
  // At least 8: a binding starts on a whole word of 4- and 8-byte elements (the word-packed
  // shaders count from it), and the padding of bind_bytes stays inside a 256-byte range.
  const size_t align = std::max<size_t>(c.binding_alignment(), 8);
  const size_t start = static_cast<size_t>(first) / align * align;
  const size_t end = at + static_cast<size_t>((hi + 1) * size);
  EMBER_CHECK(end - start <= c.max_binding(), "[vulkan] a view spans ", end - start,
              " bytes, more than the ", c.max_binding(), " a shader binds on ",
              c.properties().deviceName, " (maxStorageBufferRange)");
  EMBER_CHECK((at - start) % static_cast<size_t>(size) == 0,
              "[vulkan] a tensor's data is not aligned to its element size");
  return {{block->buffer, start, end - start},
          static_cast<uint32_t>((at - start) / static_cast<size_t>(size))};
}

// A Bool tensor's binding as the shaders read and write it, in 32-bit words of four bytes: the
// range padded to whole words. The padding stays inside the 256-byte-aligned range the storage
// starts (context.cpp), so it is never another tensor's.
inline Bound bind_bytes(DeviceContext& c, const RawTensor& t) {
  Bound b = bind(c, t);
  b.binding.range = (b.binding.range + 3) / 4 * 4;
  return b;
}

// A shape and an operand's strides as the strided shaders' push constants hold them (bounded by
// check_indexable and by the binding's size, so 32 bits suffice).
inline void put_shape(const Shape& shape, uint32_t* out) {
  for (int d = 0; d < shape.rank(); ++d) out[d] = static_cast<uint32_t>(shape[d]);
}
inline void put_strides(const RawTensor& t, int32_t* out) {
  for (int d = 0; d < t.rank(); ++d) out[d] = static_cast<int32_t>(t.strides[d]);
}

inline void check_indexable(const RawTensor& t, const char* op) {
  EMBER_CHECK(t.rank() <= kMaxRank, "[", op, "] the Vulkan kernels take up to ", kMaxRank,
              " dims, got ", t.shape);
  EMBER_CHECK(t.numel() < (int64_t{1} << 31), "[", op, "] ", t.numel(),
              " elements exceed the 2^31 the Vulkan kernels index");
}

// A dtype's code in the shaders that take several (convert.comp, elements.glsl): float32 0,
// int32 1, uint8 2, int8 3, Bool 4, float16 5, bfloat16 6, int64 7, float64 8.
inline int convert_code(DType t) {
  switch (t) {
    case DType::f32:
      return 0;
    case DType::i32:
      return 1;
    case DType::u8:
      return 2;
    case DType::i8:
      return 3;
    case DType::boolean:
      return 4;
    case DType::f16:
      return 5;
    case DType::bf16:
      return 6;
    case DType::i64:
      return 7;
    case DType::f64:
      return 8;
    default:
      return -1;
  }
}

// A 64-bit dtype's kernels are the WIDE shader variants, which need shaderInt64 and shaderFloat64.
inline void check_wide(const DeviceContext& c, const char* op, DType dtype) {
  EMBER_CHECK(c.wide(), "[", op, "] no kernel for ", dtype, " on ", c.properties().deviceName,
              ": it lacks shaderInt64 or shaderFloat64");
}

// Whether int64 takes the PAIR shader variants (two 32-bit words an element): on a device whose
// WIDE variants cannot run, so that labels, indices and counts work on every device.
inline bool int64_in_pairs(const DeviceContext& c, DType dtype) {
  return dtype == DType::i64 && !c.wide();
}

// Views of tensors of one shape with the same elements in the same order in as few dims as
// possible: size-1 dims dropped, and neighbouring dims merged where every operand steps through
// them as through one. A rank-7 `repeat` fits the shaders' 6 dims this way, and fewer dims are
// less index arithmetic per element.
template <class List>
void collapse_dims(const List& ts) {
  const Shape shape = (*ts.begin())->shape;
  Shape merged;
  std::vector<Strides> strides(ts.size());
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool joins = merged.rank() > 0;
    size_t k = 0;
    for (RawTensor* t : ts) {
      joins = joins && strides[k++][merged.rank() - 1] == t->strides[d] * shape[d];
    }
    k = 0;
    if (joins) {
      merged[merged.rank() - 1] *= shape[d];
      for (RawTensor* t : ts) strides[k++][merged.rank() - 1] = t->strides[d];
    } else {
      merged.push_back(shape[d]);
      for (RawTensor* t : ts) strides[k++].push_back(t->strides[d]);
    }
  }
  size_t k = 0;
  for (RawTensor* t : ts) {
    t->shape = merged;
    t->strides = strides[k++];
  }
}

// A contiguous temporary of that shape and dtype on `device`.
inline RawTensor fresh(Backend& be, const Shape& shape, DType dtype, Device device) {
  return RawTensor{be.allocate(std::max<size_t>(shape.numel() * dtype_size(dtype), 1), device),
                   shape, contiguous_strides(shape), 0, dtype};
}
inline RawTensor fresh_like(Backend& be, const RawTensor& t) {
  return fresh(be, t.shape, t.dtype, t.device());
}

// `value` in `dtype`, one element broadcast (stride 0) to `shape`: a scalar operand.
inline RawTensor broadcast_scalar(Backend& be, const Scalar& value, DType dtype, const Shape& shape,
                                  Device device) {
  RawTensor one = fresh(be, Shape{}, dtype, device);
  be.fill(one, value);
  one.shape = shape;
  one.strides = Shape::filled(shape.rank(), 0);
  return one;
}

// Runs `kernel`, which writes a contiguous output, on `out`, or on a contiguous temporary then
// copied into `out` when that is a strided view (an in-place op on a slice, a transposed
// destination): one pass more, for the rare case.
template <class F>
void into_contiguous(Backend& be, const RawTensor& out, const F& kernel) {
  if (out.is_contiguous()) return kernel(out);
  const RawTensor tmp = fresh_like(be, out);
  kernel(tmp);
  be.copy(tmp, out);
}

// As into_contiguous for a kernel that updates `inout` in place (scatter): the temporary starts
// as a copy of it.
template <class F>
void through_contiguous(Backend& be, const RawTensor& inout, const F& kernel) {
  if (inout.is_contiguous()) return kernel(inout);
  const RawTensor tmp = fresh_like(be, inout);
  be.copy(inout, tmp);
  kernel(tmp);
  be.copy(tmp, inout);
}

inline void collapse_dims(std::initializer_list<RawTensor*> ts) {
  collapse_dims<std::initializer_list<RawTensor*>>(ts);
}

// The bytes a binding of t spans (bind()'s range less the alignment of its start).
inline size_t span_bytes(const RawTensor& t) {
  if (t.numel() == 0) return 0;
  int64_t reach = 0;
  for (int d = 0; d < t.rank(); ++d) reach += (t.shape[d] - 1) * std::abs(t.strides[d]);
  return static_cast<size_t>(reach + 1) * dtype_size(t.dtype);
}

// t with dim narrowed to [first, first + count); a broadcast dim of size 1 stays as it is.
inline RawTensor narrowed(RawTensor t, int dim, int64_t first, int64_t count) {
  if (t.shape[dim] == 1 && t.strides[dim] == 0) return t;
  t.offset += first * t.strides[dim];
  t.shape[dim] = count;
  return t;
}

// Whether a shader can bind t whole (bind() aligns its start down, by less than the margin).
inline bool binds(const DeviceContext& c, const RawTensor& t) {
  return span_bytes(t) <= c.max_binding() - std::max<size_t>(c.binding_alignment(), 8);
}
inline bool all_bind(const DeviceContext& c, std::initializer_list<const RawTensor*> ts) {
  for (const RawTensor* t : ts) {
    if (!binds(c, *t)) return false;
  }
  return true;
}

// Runs `kernel(pieces)` on the operands (one shape, collapsed) or, where one spans more bytes
// than a shader binds (a tensor past maxStorageBufferRange: 128 MiB on lavapipe and on some
// phones), on pieces of their leading dim, halved until each binds: an elementwise kernel's
// pieces are independent. Of 8 or more, a piece starts on a multiple of 4 elements, so that a
// Bool output's mostly starts on a whole word (compare.comp's others go through a fresh one).
template <class F>
void within_binding(const DeviceContext& c, const std::vector<RawTensor>& ts, const F& kernel) {
  bool fits = true;
  size_t widest = 0;
  for (const RawTensor& t : ts) {
    fits = fits && binds(c, t);
    widest = std::max(widest, span_bytes(t));
  }
  if (fits) return kernel(ts);
  const int64_t n = ts[0].rank() == 0 ? 1 : ts[0].shape[0];
  // One element whose view still spans too much: a broadcast or strided operand over a range
  // wider than any binding.
  EMBER_CHECK(n > 1, "[vulkan] a view spans ", widest, " bytes, more than the ", c.max_binding(),
              " a shader binds on ", c.properties().deviceName, " (maxStorageBufferRange)");
  const int64_t half = n >= 8 ? n / 8 * 4 : n / 2;
  for (const auto& [first, count] : {std::pair{int64_t{0}, half}, std::pair{half, n - half}}) {
    std::vector<RawTensor> piece = ts;
    std::vector<RawTensor*> refs;
    for (RawTensor& t : piece) {
      t.offset += first * t.strides[0];
      t.shape[0] = count;
      refs.push_back(&t);
    }
    collapse_dims(refs);
    within_binding(c, piece, kernel);
  }
}

// Whether t's elements, packed, would bind with room to spare.
inline bool packable(const DeviceContext& c, const RawTensor& t) {
  return t.nbytes() <= c.max_binding() / 2;
}
// t itself where it binds, else its elements packed into a fresh contiguous tensor (a view
// whose elements fit but whose strides spread them wider: a column of a wide matrix).
inline RawTensor bound_or_packed(Backend& be, const DeviceContext& c, const RawTensor& t) {
  if (binds(c, t)) return t;
  const RawTensor packed = fresh_like(be, t);
  be.copy(t, packed);
  return packed;
}

// Runs `kernel(pieces)` on operands of one rank whose dims other than `skip` line up (an
// indexing op's index, output and data; an argmax's outputs and operand) or, where one is wider
// than a shader binds, on halves of the dim (not `skip`) along which they span most, each
// narrowed to the same range, until each piece binds or would bind packed (the kernel
// packs those it reads: bound_or_packed): ts[0] gives the extent to halve (its dims are no
// larger than the others'). The pieces are independent: nothing crosses the halved dim.
template <class F>
void in_halves(const DeviceContext& c, const std::vector<RawTensor>& ts, int skip, const char* op,
               const F& kernel) {
  bool fits = true;
  for (const RawTensor& t : ts) fits = fits && (binds(c, t) || packable(c, t));
  if (fits) return kernel(ts);
  int split = -1;
  int64_t widest = -1;
  for (int d = 0; d < ts[0].rank(); ++d) {
    if (d == skip || ts[0].shape[d] < 2) continue;
    int64_t span = 0;
    for (const RawTensor& t : ts) {
      span += (t.shape[d] - 1) * std::abs(t.strides[d]) * static_cast<int64_t>(dtype_size(t.dtype));
    }
    if (span > widest) {
      widest = span;
      split = d;
    }
  }
  size_t bytes = 0;
  for (const RawTensor& t : ts) bytes = std::max(bytes, span_bytes(t));
  EMBER_CHECK(split >= 0, "[", op, "] an operand spans ", bytes, " bytes along dim ", skip,
              ", more than the ", c.max_binding(), " a shader binds on ", c.properties().deviceName,
              " (maxStorageBufferRange)");
  const int64_t n = ts[0].shape[split], half = n / 2;
  for (const auto& [first, count] : {std::pair{int64_t{0}, half}, std::pair{half, n - half}}) {
    std::vector<RawTensor> piece;
    for (const RawTensor& t : ts) piece.push_back(narrowed(t, split, first, count));
    in_halves(c, piece, skip, op, kernel);
  }
}

// Operands of an elementwise kernel, collapsed, that still exceed the shaders' 6 dims (views that
// no collapse brings down: a permuted rank-7 tensor): the strided ones packed into contiguous
// temporaries (copy() takes any rank), after which all collapse to one dim. Called before the
// device's lock is taken (copy takes it).
inline void within_rank(Backend& be, std::initializer_list<RawTensor*> ts) {
  if ((*ts.begin())->rank() <= kMaxRank) return;
  for (RawTensor* t : ts) {
    if (t->is_contiguous()) continue;
    const RawTensor packed = fresh_like(be, *t);
    be.copy(*t, packed);
    *t = packed;
  }
  collapse_dims(ts);
}

// On a device without float64 the 1- and 2-byte dtypes (whose ANY variants compute in double
// and int64) run as a 4-byte one: the 16-bit floats as float32 (operands widened exactly, the
// float32 kernel, the result rounded once to nearest even, as the Cpu computes them in float),
// uint8, int8 and Bool as int32 (the result wrapped to the byte, or "not zero"). Returns t where
// the device needs no stand-in. Callers check the op and dtypes first, so that an op the dtype
// does not have is refused naming it.
inline DType stand_in(const DeviceContext& c, DType t) {
  if (c.wide()) return t;
  if (t == DType::f16 || t == DType::bf16) return DType::f32;
  if (t == DType::u8 || t == DType::i8 || t == DType::boolean) return DType::i32;
  return t;
}
inline bool half_in_float32(const DeviceContext& c, DType t) {
  return stand_in(c, t) == DType::f32 && t != DType::f32;
}
inline RawTensor widened_like(Backend& be, const RawTensor& t, DType to) {
  return fresh(be, t.shape, to, t.device());
}
// t in dtype `to`; its broadcast dims (stride 0: a scalar operand, a bias) widened once and
// broadcast again, not copied out to full size.
inline RawTensor widened(Backend& be, const RawTensor& t, DType to) {
  RawTensor compact = t;
  for (int d = 0; d < t.rank(); ++d) {
    if (t.strides[d] == 0) compact.shape[d] = 1;
  }
  RawTensor wide = widened_like(be, compact, to);
  be.copy(compact, wide);
  for (int d = 0; d < t.rank(); ++d) {
    if (t.strides[d] == 0) {
      wide.shape[d] = t.shape[d];
      wide.strides[d] = 0;
    }
  }
  return wide;
}
inline RawTensor float32_like(Backend& be, const RawTensor& t) {
  return widened_like(be, t, DType::f32);
}
inline RawTensor float32_copy(Backend& be, const RawTensor& t) {
  return widened(be, t, DType::f32);
}

// The checks of a kernel that reads x (strided) and writes out (contiguous).
inline void check_operands(std::string_view op, const RawTensor& x, const RawTensor& out) {
  EMBER_CHECK(out.is_contiguous(), "[", op, "] the Vulkan backend writes contiguous outputs");
  check_indexable(x, std::string(op).c_str());
}

/// The tuning overrides' parsing (EMBER_VULKAN_GEMM, _TILE_BAND, ...): the environment
/// variable's value, which must be one of `words` (`fallback` where unset), or a whole number
/// from lo to hi; anything else is an error naming the variable, its value and `op`.
std::string_view env_word(const char* name, const char* op,
                          std::initializer_list<std::string_view> words, std::string_view fallback);
uint32_t env_count(const char* name, const char* op, uint32_t lo, uint32_t hi, uint32_t fallback);

// A GEMM's tiling: gemm_tiled.glsl's and gemm_lanes.glsl's specialisation constants, mostly in
// constant_id order (gemm_pipeline in matmul.cpp; coop_pipeline derives gemm_coop.glsl's), and
// which of the two runs.
struct Tiles {
  uint32_t threads, bm, bn, bk, tm, tn;
  uint32_t band = 8;    // rows of tiles a band (gemm_tile.glsl); EMBER_VULKAN_TILE_BAND overrides
  uint32_t unroll = 0;  // gemm_tiled.glsl's k steps an iteration within a slice (0: all of bk)
  uint32_t stages = 1;  // gemm_tiled.glsl's slices staged at once (EMBER_VULKAN_STAGES)
  uint32_t ahead = 1;   // gemm_coop.glsl's slices read ahead (EMBER_VULKAN_COOP_AHEAD)
  bool lanes = false;   // gemm_lanes.glsl (a CPU device) rather than gemm_tiled.glsl
};
/// The float32 tiles for `batch` m x n outputs summing k products on this device (a convolution's
/// where `conv`): gemm_lanes.glsl's on a CPU device (EMBER_VULKAN_LANE_TILES), else
/// gemm_tiled.glsl's default or EMBER_VULKAN_MATMUL_TILES (EMBER_VULKAN_CONV_TILES), narrowed
/// where the output is smaller; EMBER_VULKAN_GEMM=tiled or =lanes picks the kernel.
Tiles gemm_tiles(const DeviceContext& c, int64_t m, int64_t n, int64_t k, int64_t batch = 1,
                 bool conv = false);
/// EMBER_VULKAN_GEMM: "lanes", "tiled", or "" where unset (an error for anything else).
std::string_view gemm_choice();
/// Whether this device's float32 GEMMs (matmul, convolution) take gemm_lanes.glsl.
bool use_lanes(const DeviceContext& c);
/// gemm_coop.glsl's tiles (matmul_coop.comp, or conv_coop.comp where `conv`): bm x bn, each
/// subgroup of 32 a tm x tn part of it, bk-deep slices; or EMBER_VULKAN_COOP_TILES.
Tiles coop_tiles(const DeviceContext& c, bool conv);
/// gemm_coop.glsl's includer compiled three ways: for VK_NV_cooperative_matrix, rewritten for
/// VK_KHR_cooperative_matrix, and its EMULATE variant.
struct CoopShaders {
  std::span<const uint32_t> nv, khr, emulated;
};
/// The pipeline of `op`'s shader built on gemm_coop.glsl with these tiles, in the variant the
/// device takes (DeviceContext::cooperative_khr, emulated_cooperative); `flags` is the shader's
/// own specialisation constant 9 (matmul_coop.comp's FLAGS).
const Pipeline& coop_pipeline(DeviceContext& c, const char* op, const CoopShaders& shaders,
                              uint32_t bindings, uint32_t push_size, const Tiles& t,
                              uint32_t flags = 0);
/// The fewest parts a k must be split into on this device (1 but on llvmpipe, which caps an
/// invocation's loop iterations).
int64_t k_parts(const VkPhysicalDeviceProperties& props, int64_t k, const Tiles& t);
/// Refuses, on a CPU device, a dispatch of `tiles` tiles summing k_part products each whose
/// invocations would loop past llvmpipe's 65,535 steps (which it ends silently).
void check_tile_steps(const DeviceContext& c, const char* op, int64_t tiles, int64_t k_part,
                      const Tiles& t);
/// The pipeline of a shader built on gemm_tiled.glsl, or on gemm_lanes.glsl where t.lanes (its
/// LANES variant `lanes`), with these tiles.
const Pipeline& gemm_pipeline(DeviceContext& c, const char* shader, std::span<const uint32_t> spirv,
                              std::span<const uint32_t> lanes, uint32_t bindings,
                              uint32_t push_size, const Tiles& t);

}  // namespace ember::vulkan
