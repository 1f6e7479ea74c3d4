// The Vulkan backend's linalg.svd (OpFamily::Svd) of float32 and float64: the Cpu's one-sided
// Jacobi in double (svd.comp), a workgroup per matrix.
#include <algorithm>

#include "binding.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

// linalg.svd (svd.comp): a workgroup per matrix, in double in a scratch buffer.
void VulkanBackend::svd(const RawTensor& a, const RawTensor& u, const RawTensor& s,
                        const RawTensor& vh) {
  const char* op = "linalg.svd";
  if (a.dtype != DType::f32 && a.dtype != DType::f64) no_kernel(op, a.dtype);
  const int64_t batch = a.shape[0], m = a.shape[1], n = a.shape[2], k = std::min(m, n);
  const bool vectors = u.defined();
  const int64_t ku = vectors ? u.shape[2] : 0, kv = vectors ? vh.shape[1] : 0;
  const int64_t rows = std::max(m, n), kl = m >= n ? ku : kv;
  // Nothing to compute, unless full matrices of an empty side: then the long side's basis is the
  // completion of nothing (the identity, as on the Cpu).
  if (batch == 0 || (k == 0 && kl == 0)) return;
  const int64_t per = rows * k + k * k + rows * kl + 2 * k + 1;  // svd.comp's scratch, doubles
  check_indexable(a, op);
  EMBER_CHECK(batch * per < (int64_t{1} << 31), "[", op, "] ", a.shape,
              " needs more scratch than the Vulkan kernel indexes");
  const RawTensor scratch{allocate(static_cast<size_t>(batch * per) * 8, a.device()),
                          Shape{batch * per}, Strides{1}, 0, DType::f64};
  DeviceContext& c = ctx_of(a);
  std::lock_guard lock(c.mu);
  check_wide(c, op, a.dtype);
  struct {
    uint32_t batch, m, n, type;
    uint32_t ku, kv, vectors, a_base;
    uint32_t s_base, u_base, vh_base, mode;
  } p{};
  // An empty operand (or none) binds the scratch in its place: the shader never touches it.
  const Bound bw = bind(c, scratch);
  auto bound = [&](const RawTensor& t) {
    return t.defined() && t.numel() > 0 ? bind_bytes(c, t) : bw;
  };
  const Bound ba = bound(a), bs = bound(s), bu = bound(u), bv = bound(vh);
  p.batch = static_cast<uint32_t>(batch);
  p.m = static_cast<uint32_t>(m);
  p.n = static_cast<uint32_t>(n);
  p.type = static_cast<uint32_t>(convert_code(a.dtype));
  p.ku = static_cast<uint32_t>(ku);
  p.kv = static_cast<uint32_t>(kv);
  p.vectors = vectors ? 1u : 0u;
  p.a_base = ba.base;
  p.s_base = bs.base;
  p.u_base = bu.base;
  p.vh_base = bv.base;
  const Binding bindings[] = {ba.binding, bw.binding, bs.binding, bu.binding, bv.binding};
  // The values (and the valid vectors), then the completion of the bases, then the vectors out:
  // three dispatches, so that each reads what the one before wrote.
  const Pipeline& pipeline = c.pipeline("svd", shaders::svd, 5, sizeof p);
  const auto groups = static_cast<uint32_t>(std::min<int64_t>(batch, 65535));
  for (uint32_t mode = 0; mode < (vectors ? 3u : 1u); ++mode) {
    p.mode = mode;
    c.dispatch(pipeline, bindings, &p, sizeof p, groups);
  }
}

}  // namespace ember::vulkan
