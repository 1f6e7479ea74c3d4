// The Vulkan backend's sort and topk (OpFamily::Sort, TopK) on every dtype: a bitonic network
// over each row padded to a power of two (sort.comp), a dispatch per step, in scratch buffers of
// (key, index) pairs; then the first k of each row are written out. Stable and NaN-last as the
// Cpu's, whatever the row length.
#include <algorithm>
#include <bit>

#include "binding.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {
namespace {

void select_sorted(const RawTensor& x, int dim, int64_t kout, bool descending,
                   const RawTensor& values, const RawTensor& indices, const char* op) {
  const int type = convert_code(x.dtype);
  if (type < 0 || values.dtype != x.dtype) backend().no_kernel(op, x.dtype);
  EMBER_CHECK(indices.dtype == DType::i64 && values.is_contiguous() && indices.is_contiguous(), "[",
              op, "] the Vulkan backend writes contiguous values and int64 indices");
  if (const DeviceContext& c = ctx_of(x); x.rank() > 0 && !all_bind(c, {&x, &values, &indices})) {
    // a wide x: rows in halves of the other dims (a row itself must bind)
    Backend& be = backend();
    return in_halves(c, {values, indices, x}, dim, op, [&](const std::vector<RawTensor>& v) {
      const RawTensor xs = bound_or_packed(be, c, v[2]);
      if (v[0].is_contiguous() && v[1].is_contiguous()) {
        return select_sorted(xs, dim, kout, descending, v[0], v[1], op);
      }
      const RawTensor vals = fresh_like(be, v[0]), idx = fresh_like(be, v[1]);
      select_sorted(xs, dim, kout, descending, vals, idx, op);
      be.copy(vals, v[0]);
      be.copy(idx, v[1]);
    });
  }
  check_indexable(x, op);
  const int64_t len = x.rank() == 0 ? 1 : x.shape[dim];
  const int64_t rows = len == 0 ? 0 : x.numel() / len;
  if (rows == 0 || kout == 0) return;
  const int64_t padded = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(len)));
  struct {
    uint32_t rows, len, padded, kout;
    uint32_t mode, k, j, type;
    uint32_t x_base, v_base, i_word, rank;
    int32_t dim_stride;
    uint32_t inner, pad0, pad1;
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  p.rows = static_cast<uint32_t>(rows);
  p.len = static_cast<uint32_t>(len);
  p.padded = static_cast<uint32_t>(padded);
  p.kout = static_cast<uint32_t>(kout);
  p.type = static_cast<uint32_t>(type) | (descending ? 1u << 8 : 0u);
  p.rank = static_cast<uint32_t>(x.rank());
  int64_t inner = 1;
  if (x.rank() > 0) {
    p.dim_stride = static_cast<int32_t>(x.strides[dim]);
    Shape row_shape = x.shape;
    row_shape[dim] = 1;  // the rows are every position but the dim's
    put_shape(row_shape, p.shape);
    put_strides(x, p.stride);
    for (int d = dim + 1; d < x.rank(); ++d) inner *= x.shape[d];
  }
  p.inner = static_cast<uint32_t>(inner);
  Backend& be = backend();
  const RawTensor keys{be.allocate(static_cast<size_t>(rows * padded) * 8, x.device()),
                       Shape{rows * padded}, Strides{1}, 0, DType::i64};
  const RawTensor order{be.allocate(static_cast<size_t>(rows * padded) * 4, x.device()),
                        Shape{rows * padded}, Strides{1}, 0, DType::i32};
  DeviceContext& c = ctx_of(x);
  std::lock_guard lock(c.mu);
  // elements.glsl, or sort.comp's PAIR variant (keys in two 32-bit words) without its features
  const bool pair = !c.wide() && x.dtype != DType::f64;
  if (!pair) check_wide(c, op, x.dtype);
  const Bound bx = bind_bytes(c, x), bk = bind(c, keys), bo = bind(c, order),
              bv = bind_bytes(c, values), bi = bind(c, indices);
  p.x_base = bx.base;
  p.v_base = bv.base;
  p.i_word = bi.base * 2;
  const Binding bs[] = {bx.binding, bk.binding, bo.binding, bv.binding, bi.binding};
  const Pipeline& pipeline = pair ? c.pipeline("sort_pair", shaders::sort_pair, 5, sizeof p)
                                  : c.pipeline("sort", shaders::sort, 5, sizeof p);
  p.mode = 0;
  c.dispatch(pipeline, bs, &p, sizeof p, groups_for(rows * padded));
  p.mode = 1;
  for (int64_t k = 2; k <= padded; k *= 2) {
    for (int64_t j = k / 2; j > 0; j /= 2) {
      p.k = static_cast<uint32_t>(k);
      p.j = static_cast<uint32_t>(j);
      c.dispatch(pipeline, bs, &p, sizeof p, groups_for(rows * padded / 2));
    }
  }
  p.mode = 2;
  c.dispatch(pipeline, bs, &p, sizeof p, groups_for(rows * kout));
}

}  // namespace

void VulkanBackend::sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                         const RawTensor& indices) {
  select_sorted(x, dim, x.rank() == 0 ? 1 : x.shape[dim], descending, values, indices, "sort");
}

void VulkanBackend::topk(const RawTensor& x, int64_t k, int dim, bool largest,
                         const RawTensor& values, const RawTensor& indices) {
  const int64_t len = x.rank() == 0 ? 1 : x.shape[dim];
  EMBER_CHECK(k >= 0 && k <= len, "[topk] k = ", k, " is out of range for dim ", dim, " of shape ",
              x.shape);
  select_sorted(x, dim, k, largest, values, indices, "topk");
}

}  // namespace ember::vulkan
