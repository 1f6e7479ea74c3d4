// The Vulkan backend's indexing along a dim (OpFamily::Gather, IndexSelect, Scatter) on every
// dtype: index.comp, which gathers for all three (scatter too, per output element),
// so results do not depend on scheduling and bad indices (a failed queued range check) are
// skipped rather than followed.
#include <algorithm>
#include <bit>
#include <optional>

#include "binding.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {
namespace {

struct IndexPush {
  uint32_t count, rank, dim, mode;
  uint32_t a_base, i_word, o_base, bound;
  uint32_t shape[kMaxRank];
  int32_t i_stride[kMaxRank];
  int32_t a_stride[kMaxRank];
  uint32_t i_shape[kMaxRank];
};
static_assert(sizeof(IndexPush) <= 128, "Vulkan guarantees 128 bytes of push constants");

bool is_int(DType t) { return t == DType::i32 || t == DType::i64; }

// Records index.comp over out's elements: a (binding 0), the int64 index (1), out (2).
void dispatch_index(IndexPush q, const RawTensor& a, const RawTensor& index, const RawTensor& out,
                    const char* op) {
  const size_t size = dtype_size(out.dtype);
  const int type = convert_code(out.dtype);
  if (type < 0 || a.dtype != out.dtype) backend().no_kernel(op, out.dtype);
  EMBER_CHECK(index.dtype == DType::i64, "[", op, "] takes int64 indices, got ", index.dtype);
  EMBER_CHECK(out.is_contiguous(), "[", op, "] the Vulkan backend writes contiguous outputs");
  for (const RawTensor* t : {&a, &index, &out}) check_indexable(*t, op);
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  // 4- and 8-byte elements move as words; smaller ones go through the ANY variant.
  // 8-byte ones on a device without WIDE's features as two words: moved, or combined as int64.
  const bool any = size < 4;
  const bool pair =
      size == 8 && !c.wide() && ((q.mode & 255u) <= 2 || int64_in_pairs(c, out.dtype));
  if (size != 4 && !pair) check_wide(c, op, out.dtype);
  // An empty a (a dim of size 0: every index is out of range, so it is never read) binds out's
  // range in its place.
  const Bound bo = bind_bytes(c, out), bi = bind(c, index);
  const Bound ba = a.numel() == 0 ? bo : bind_bytes(c, a);
  q.count = static_cast<uint32_t>(out.numel());
  q.rank = static_cast<uint32_t>(out.rank());
  q.mode |= (is_int(out.dtype) ? 256u : 0u) | static_cast<uint32_t>(type) << 16;
  q.a_base = ba.base;
  q.i_word = bi.base * 2;
  q.o_base = bo.base;
  put_shape(out.shape, q.shape);
  put_strides(a, q.a_stride);
  const Binding bs[] = {ba.binding, bi.binding, bo.binding};
  c.dispatch(any         ? c.pipeline("index_any", shaders::index_any, 3, sizeof q)
             : pair      ? c.pipeline("index_pair", shaders::index_pair, 3, sizeof q)
             : size == 8 ? c.pipeline("index64", shaders::index64, 3, sizeof q)
                         : c.pipeline("index32", shaders::index32, 3, sizeof q),
             bs, &q, sizeof q, groups_for(out.numel()));
}

// scatter's dispatch: q.mode may hold the rounding bits already.
void scatter_into(IndexPush q, ScatterReduce reduce, const RawTensor& dst, int dim,
                  const RawTensor& index, const RawTensor& src) {
  const char* op = scatter_name(reduce);
  q.dim = static_cast<uint32_t>(dim);
  q.mode |= 2 + static_cast<uint32_t>(reduce);
  q.bound = dst.rank() == 0 ? 1u : static_cast<uint32_t>(dst.shape[dim]);
  put_strides(index, q.i_stride);
  put_shape(index.shape, q.i_shape);
  if (dst.rank() == 0) q.i_shape[0] = static_cast<uint32_t>(index.numel());  // 0-d: 0 or [k]
  // Each destination element scans its line of the index along dim: with many entries a line
  // (an embedding's gradient: every token's row into a vocabulary), the lines are sorted first
  // (stably, so that equal entries keep their order) and each element binary-searches its own.
  constexpr int64_t kSortedFrom = 64;
  if (dst.rank() == 0 || index.shape[dim] < kSortedFrom) {
    return dispatch_index(q, src, index, dst, op);
  }
  RawTensor lines = index;  // one line where index_add broadcast it along every other dim
  bool broadcast = true;
  for (int d = 0; d < index.rank(); ++d) {
    broadcast = broadcast && (d == dim || index.strides[d] == 0);
  }
  for (int d = 0; d < index.rank() && broadcast; ++d) {
    lines.shape[d] = d == dim ? index.shape[d] : 1;
  }
  const int64_t m = lines.numel(), len = index.shape[dim];
  // The sorted entries and their positions (16 bytes an entry) and the sort's scratch (its lines
  // padded to a power of two, 8 bytes an entry) must bind: else the scan.
  const auto padded = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(len)));
  const size_t room = ctx_of(dst).max_binding() / 2;
  if (static_cast<size_t>(2 * m) * 8 > room || static_cast<size_t>(m / len * padded) * 8 > room) {
    return dispatch_index(q, src, index, dst, op);
  }
  Backend& be = backend();
  // the sorted entries, then where each came from along dim, in one buffer (index.comp reads both)
  const RawTensor sorted{be.allocate(static_cast<size_t>(2 * m) * 8, dst.device()), Shape{2 * m},
                         Strides{1}, 0, DType::i64};
  const RawTensor keys = sorted.view(lines.shape, contiguous_strides(lines.shape), 0);
  be.sort(lines, dim, false, keys, sorted.view(lines.shape, keys.strides, m));
  for (int d = 0; d < index.rank(); ++d) {
    q.i_stride[d] = lines.shape[d] == 1 && d != dim ? 0 : static_cast<int32_t>(keys.strides[d]);
  }
  q.mode |= 2048u;
  dispatch_index(q, src, sorted, dst, op);
}

// t (of 1- or 2-byte elements) as int32 words where its last dim is contiguous, not `dim`, and
// packs into whole words from a word boundary; nullopt where it does not.
std::optional<RawTensor> as_words(const RawTensor& t, int dim) {
  const int last = t.rank() - 1;
  const int64_t k = 4 / static_cast<int64_t>(dtype_size(t.dtype));
  if (last < 1 || dim == last || t.strides[last] != 1 || t.shape[last] % k != 0 ||
      t.offset % k != 0) {
    return std::nullopt;
  }
  RawTensor w = t;
  for (int d = 0; d < last; ++d) {
    if (t.strides[d] % k != 0) return std::nullopt;
    w.strides[d] = t.strides[d] / k;
  }
  w.shape[last] = t.shape[last] / k;
  w.offset = t.offset / k;
  w.dtype = DType::i32;
  return w;
}

// scatter_into on a contiguous dst, or on halves of the dims other than `dim` where an operand
// is wider than a binding (those read packed where their elements fit).
void scatter_in_pieces(Backend& be, const IndexPush& q, ScatterReduce reduce, const RawTensor& dst,
                       int dim, const RawTensor& index, const RawTensor& src) {
  const DeviceContext& c = ctx_of(dst);
  if (dst.rank() > 0 && !all_bind(c, {&dst, &index, &src})) {
    return in_halves(
        c, {index, src, dst}, dim, scatter_name(reduce), [&](const std::vector<RawTensor>& v) {
          const RawTensor is = bound_or_packed(be, c, v[0]), ss = bound_or_packed(be, c, v[1]);
          through_contiguous(be, v[2],
                             [&](const RawTensor& d) { scatter_into(q, reduce, d, dim, is, ss); });
        });
  }
  through_contiguous(be, dst,
                     [&](const RawTensor& d) { scatter_into(q, reduce, d, dim, index, src); });
}

}  // namespace

void VulkanBackend::gather(const RawTensor& x, int dim, const RawTensor& index,
                           const RawTensor& out) {
  if (out.numel() == 0) return;
  if (x.rank() > 0 && !all_bind(ctx_of(out), {&x, &index, &out})) {  // a wide x: in halves
    return in_halves(
        ctx_of(out), {index, out, x}, dim, "gather", [&](const std::vector<RawTensor>& v) {
          const DeviceContext& c = ctx_of(out);
          const RawTensor xs = bound_or_packed(*this, c, v[2]),
                          is = bound_or_packed(*this, c, v[0]);
          if (binds(c, v[1])) return gather(xs, dim, is, v[1]);
          into_contiguous(*this, v[1], [&](const RawTensor& o) { gather(xs, dim, is, o); });
        });
  }
  if (!out.is_contiguous()) {
    return into_contiguous(*this, out, [&](const RawTensor& o) { gather(x, dim, index, o); });
  }
  if (const DType to = stand_in(ctx_of(out), out.dtype); to != out.dtype && x.dtype == out.dtype) {
    const RawTensor o4 = widened_like(*this, out, to);
    gather(widened(*this, x, to), dim, index, o4);
    return copy(o4, out);
  }
  IndexPush q{};
  q.dim = static_cast<uint32_t>(dim);
  q.mode = 0;
  q.bound = x.rank() == 0 ? 1u : static_cast<uint32_t>(x.shape[dim]);  // a 0-d x: index 0 only
  put_strides(index, q.i_stride);
  dispatch_index(q, x, index, out, "gather");
}

// index_select from an x wider than a binding (an embedding table past maxStorageBufferRange):
// a window of x's rows at a time, the indices shifted into it (index.comp writes 0 for those
// outside), its rows kept where the index falls inside: 0 <= i - first < count, tested as
// (i - first) * (first + count - 1 - i) >= 0 with the int64 ops every device has.
namespace {
void index_select_in_windows(VulkanBackend& be, const RawTensor& x, int dim, const RawTensor& index,
                             const RawTensor& out) {
  const DeviceContext& c = ctx_of(out);
  const int64_t len = x.shape[dim];
  int64_t rows = len;
  while (rows > 1 && !binds(c, narrowed(x, dim, 0, rows))) rows = (rows + 1) / 2;
  const Device device = out.device();
  auto temp = [&](const Shape& s, DType t) { return fresh(be, s, t, device); };
  const Shape& n = index.shape;
  auto scalar = [&](int64_t v) { return broadcast_scalar(be, Scalar(v), DType::i64, n, device); };
  const RawTensor shifted = temp(n, DType::i64), rest = temp(n, DType::i64),
                  product = temp(n, DType::i64), inside = temp(n, DType::boolean),
                  piece = temp(out.shape, out.dtype);
  RawTensor mask = inside;  // inside along dim, broadcast across the others
  mask.shape = out.shape;
  mask.strides = Shape::filled(out.rank(), 0);
  mask.strides[dim] = 1;
  be.fill(out, Scalar(0.0));
  for (int64_t first = 0; first < len; first += rows) {
    const int64_t count = std::min(rows, len - first);
    be.binary(BinaryOp::Sub, index, scalar(first), shifted);
    be.binary(BinaryOp::Sub, scalar(first + count - 1), index, rest);
    be.binary(BinaryOp::Mul, shifted, rest, product);
    be.binary(BinaryOp::Ge, product, scalar(0), inside);
    be.index_select(narrowed(x, dim, first, count), dim, shifted, piece);
    be.where(mask, piece, out, out);
  }
}
}  // namespace

void VulkanBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                                 const RawTensor& out) {
  if (out.numel() == 0) return;
  if (!out.is_contiguous()) {
    return into_contiguous(*this, out, [&](const RawTensor& o) { index_select(x, dim, index, o); });
  }
  if (dtype_size(out.dtype) < 4 && x.dtype == out.dtype) {
    // Rows whose last dim packs into whole words (an embedding table of float16) move as int32
    // words: no atomics on shared words, and no stand-in widening the whole table.
    if (const auto words = as_words(x, dim), out_words = as_words(out, dim); words && out_words) {
      return index_select(*words, dim, index, *out_words);
    }
  }
  if (const DType to = stand_in(ctx_of(out), out.dtype); to != out.dtype && x.dtype == out.dtype) {
    const RawTensor o4 = widened_like(*this, out, to);
    index_select(widened(*this, x, to), dim, index, o4);
    return copy(o4, out);
  }
  if (!binds(ctx_of(out), x) && index.dtype == DType::i64 && x.shape[dim] > 1) {
    return index_select_in_windows(*this, x, dim, index, out);
  }
  IndexPush q{};
  q.dim = static_cast<uint32_t>(dim);
  q.mode = 1;
  q.bound = static_cast<uint32_t>(x.shape[dim]);
  q.i_stride[dim] = static_cast<int32_t>(index.strides[0]);
  dispatch_index(q, x, index, out, "index_select");
}

void VulkanBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                            const RawTensor& index, const RawTensor& src) {
  if (dst.numel() == 0 || index.numel() == 0) return;
  IndexPush q{};
  // On a device without float64 the 1- and 2-byte dtypes as 4-byte ones (binding.hpp's
  // stand_in), the 16-bit floats rounded to their dtype at each step as the Cpu's.
  const DType to = stand_in(ctx_of(dst), dst.dtype);
  if (to != dst.dtype && src.dtype == dst.dtype) {
    q.mode = dst.dtype == DType::f16 ? 512u : dst.dtype == DType::bf16 ? 1024u : 0u;
    const RawTensor d4 = widened(*this, dst, to);
    scatter_in_pieces(*this, q, reduce, d4, dim, index, widened(*this, src, to));
    return copy(d4, dst);
  }
  scatter_in_pieces(*this, q, reduce, dst, dim, index, src);
}

}  // namespace ember::vulkan

namespace ember::vulkan {

RawTensor VulkanBackend::nonzero(const RawTensor& x) {
  const char* op = "nonzero";
  const int type = convert_code(x.dtype);
  if (type < 0) no_kernel(op, x.dtype);
  check_indexable(x, op);
  const int64_t numel = x.numel(), rank = x.rank();
  const auto empty_result = [&](int64_t rows) {
    const int64_t n = rows * rank;
    return RawTensor{allocate(static_cast<size_t>(std::max<int64_t>(n, 1)) * 8, x.device()),
                     Shape{rows, rank}, Strides{rank, 1}, 0, DType::i64};
  };
  if (numel == 0) return empty_result(0);
  DeviceContext& c = ctx_of(x);
  if (!c.wide() && x.dtype != DType::boolean) {
    // On a device without float64 nonzero.comp reads Bools alone (its BOOL variant): x's truth
    // first, from its bits as the Cpu tests it (NaN and subnormals are nonzero, -0 is not; a
    // float comparison with 0 may flush subnormals).
    const RawTensor set = fresh(*this, x.shape, DType::boolean, x.device());
    binary(BinaryOp::LogicalOr, x, x, set);
    return nonzero(set);
  }
  constexpr int64_t kBlock = 1024;  // nonzero.comp's: 256 invocations, 4 elements each
  const int64_t blocks = (numel + kBlock - 1) / kBlock;
  RawTensor counts{allocate(static_cast<size_t>(blocks + 1) * 4, x.device()), Shape{blocks + 1},
                   Strides{1}, 0, DType::i32};
  struct {
    uint32_t count, rank, mode, type;
    uint32_t x_base, blocks, out_word, pad0;
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
  } p{};
  p.count = static_cast<uint32_t>(numel);
  p.rank = static_cast<uint32_t>(rank);
  p.type = static_cast<uint32_t>(type);
  p.blocks = static_cast<uint32_t>(blocks);
  put_shape(x.shape, p.shape);
  put_strides(x, p.stride);
  const uint32_t groups = static_cast<uint32_t>(std::min<int64_t>(blocks, 65535));
  auto run = [&](uint32_t mode, const RawTensor& out, uint32_t workgroups) {
    std::lock_guard lock(c.mu);
    const bool bytes = !c.wide();  // x is Bool there: the BOOL variant
    const Bound bx = bind_bytes(c, x), bc = bind(c, counts), bo = bind(c, out);
    p.mode = mode;
    p.x_base = bx.base;
    p.out_word = bo.base * 2;
    const Binding bs[] = {bx.binding, bc.binding, bo.binding};
    c.dispatch(bytes ? c.pipeline("nonzero_bool", shaders::nonzero_bool, 3, sizeof p)
                     : c.pipeline("nonzero", shaders::nonzero, 3, sizeof p),
               bs, &p, sizeof p, workgroups);
  };
  run(0, counts, groups);  // the count per block (out unused: counts stands in)
  run(1, counts, 1);       // offsets and the total
  // The output's size is the data's: read the total back (PyTorch's nonzero synchronises too).
  int32_t total = 0;
  RawTensor last = counts;
  last.shape = Shape{1};
  last.offset = blocks;
  read_to_host(last, &total);
  RawTensor out = empty_result(total);
  if (total > 0 && rank > 0) run(2, out, groups);
  return out;
}

}  // namespace ember::vulkan
