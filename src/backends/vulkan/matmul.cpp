// The Vulkan backend's batched matmul (OpFamily::Matmul): float32 through matmul_tiled.comp,
// register-blocked tiles whose sizes are chosen per device; float16 on tensor cores through
// matmul_coop.comp where the device has VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix; the
// other dtypes through matmul.comp's ANY variant (16x16 tiles, summing in double or int64).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "binding.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "ember/core/error.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

std::string_view env_word(const char* name, const char* op,
                          std::initializer_list<std::string_view> words,
                          std::string_view fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  std::string listed;
  for (std::string_view w : words) {
    if (w == env) return w;
    listed += std::string(listed.empty() ? "" : " or ") + std::string(w);
  }
  EMBER_FAIL("[", op, "] ", name, "=\"", env, "\" is not ", listed);
}

uint32_t env_count(const char* name, const char* op, uint32_t lo, uint32_t hi, uint32_t fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  unsigned long long v = 0;
  int end = 0;
  EMBER_CHECK(std::sscanf(env, "%llu%n", &v, &end) == 1 && env[end] == '\0' && env[0] != '-' &&
                  v >= lo && v <= hi,
              "[", op, "] ", name, "=\"", env, "\" is not a whole number from ", lo, " to ", hi);
  return static_cast<uint32_t>(v);
}

namespace {

// The name keys the pipeline, so it names the tiles (the overrides may change between calls).
std::string tiled_name(const std::string& shader, const Tiles& t) {
  return shader + "_" + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" +
         std::to_string(t.bk) + "_" + std::to_string(t.tm) + "x" + std::to_string(t.tn) + "_" +
         std::to_string(t.band) + (t.unroll > 0 ? "_u" + std::to_string(t.unroll) : "") +
         (t.stages > 1 ? "_s" + std::to_string(t.stages) : "") +
         (t.ahead > 1 ? "_a" + std::to_string(t.ahead) : "");
}

// The k steps an iteration of gemm_tiled.glsl's k loop (over one staged slice) takes: 2 on a
// GPU and where EMBER_VULKAN_GEMM=tiled asks a CPU device for a GPU's kernels (CI's `tiled.`
// runs on lavapipe), the whole slice (0) on a CPU device otherwise, or EMBER_VULKAN_K_UNROLL, at
// most the slice (for tuning). Unrolled whole, NVIDIA's compiler (driver
// 580, an H100) took 37 s to build a 128x128 tile of 8x8 (6 s 8 deep, 0.6 s not unrolled): a
// minute and more before a model's first step, and tests past their time limits. llvmpipe
// counts every loop step against its cap (k_parts), so a CPU device keeps one loop.
uint32_t k_unroll(const VkPhysicalDeviceProperties& props, uint32_t bk) {
  const bool cpu = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && gemm_choice() != "tiled";
  const uint32_t u = env_count("EMBER_VULKAN_K_UNROLL", "matmul", 1, UINT32_MAX, cpu ? bk : 2);
  return u < bk ? u : 0;  // 0: the slice unrolled whole
}

// Loop steps a slice takes: one of the loop over slices, and the k loop's where it is not
// unrolled whole.
int64_t slice_steps(const Tiles& t) {
  return 1 + (t.unroll > 0 ? (int64_t{t.bk} + t.unroll - 1) / t.unroll : 0);
}

// Bands of 8 rows of tiles, or EMBER_VULKAN_TILE_BAND (1: row by row), for tuning.
uint32_t tile_band() { return env_count("EMBER_VULKAN_TILE_BAND", "matmul", 1, 65536, 8); }

// An override of the tiles, "BM,BN,BK,TM,TN" in the variable `name`, into t where it is set:
// positive sizes, TM dividing BM and TN dividing BN, and each a multiple of `multiple` (BM and
// BN for gemm_tiled.glsl's vec4 slices; TM, TN and BK for gemm_coop.glsl's 16x16x16 fragments);
// anything else is an error naming the variable and saying why.
void env_tiles(const char* name, const char* op, bool fragments, Tiles& t) {
  const char* env = std::getenv(name);
  if (env == nullptr) return;
  Tiles e{};
  const bool parsed = std::sscanf(env, "%u,%u,%u,%u,%u", &e.bm, &e.bn, &e.bk, &e.tm, &e.tn) == 5 &&
                      e.tm > 0 && e.tn > 0 && e.bk > 0 && e.bm >= e.tm && e.bn >= e.tn &&
                      e.bm % e.tm == 0 && e.bn % e.tn == 0;
  const bool aligned = fragments ? e.tm % 16 == 0 && e.tn % 16 == 0 && e.bk % 16 == 0
                                 : e.bm % 4 == 0 && e.bn % 4 == 0;
  EMBER_CHECK(parsed && aligned, "[", op, "] ", name, "=\"", env,
              "\" is not BM,BN,BK,TM,TN with TM dividing BM, TN dividing BN, and ",
              fragments ? "TM, TN and BK multiples of 16 (the fragments are 16x16x16)"
                        : "BM and BN multiples of 4 (the shared slices are vec4s)");
  t = e;
}

// Tiles for gemm_tiled.glsl. A discrete GPU (measured on an H100 beside cuBLAS, docs/VULKAN.md):
// a matmul of at least 256 tiles of 128x128 gets those, 8 deep, 8x8 outputs an invocation (the
// usual shape of a fast SGEMM); a smaller one 64x64 tiles of 4x4, four times the workgroups to
// spread over the GPU. A convolution always gets 64x64 of 4x4: with 8x8 an invocation NVIDIA's
// compiler spilled the gathers' index arithmetic to memory (256-656 bytes a thread), six times
// slower. A CPU device (lavapipe), where barriers and invocations cost most, 16x8 an invocation
// (6.2 GFLOPS at 512^3 against 4.9 with 8x8 and 0.95 with matmul.comp's 16x16 tiles); other
// devices (integrated GPUs) 64x64 with 4x4. EMBER_VULKAN_MATMUL_TILES="BM,BN,BK,TM,TN" (and
// EMBER_VULKAN_CONV_TILES for convolutions) overrides the choice, for tuning on a new device.
Tiles tiled_tiles(const VkPhysicalDeviceProperties& props, int64_t batch, int64_t m, int64_t n,
                  bool conv) {
  const char* op = conv ? "conv" : "matmul";
  Tiles t{0, 64, 64, 16, 4, 4};
  if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU && !conv) {
    const int64_t big = batch * ((m + 127) / 128) * ((n + 127) / 128);
    if (big >= 256) t = Tiles{0, 128, 128, 8, 8, 8};
  } else if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    t = Tiles{0, 128, 128, 16, 16, 8};
  }
  env_tiles(conv ? "EMBER_VULKAN_CONV_TILES" : "EMBER_VULKAN_MATMUL_TILES", op, false, t);
  // An output of one small tile (a batch of tiny products) takes 16x16 tiles of an output an
  // invocation; big tiles would leave most of their invocations idle.
  if (m * n <= 256) t = Tiles{0, 16, 16, 16, 1, 1};
  // A tile no taller or wider than the output than it must be (a few output channels, a vector),
  // keeping 64 invocations: with fewer, llvmpipe gave wrong sums on long ks (32x6760x16 with 4).
  auto threads = [&](uint32_t bm, uint32_t bn) { return (bm / t.tm) * (bn / t.tn); };
  auto halves = [](uint32_t b, uint32_t per) { return (b / 2) % per == 0 && (b / 2) % 4 == 0; };
  while (t.bm / 2 >= m && halves(t.bm, t.tm) && threads(t.bm / 2, t.bn) >= 64) t.bm /= 2;
  while (t.bn / 2 >= n && halves(t.bn, t.tn) && threads(t.bm, t.bn / 2) >= 64) t.bn /= 2;
  t.threads = (t.bm / t.tm) * (t.bn / t.tn);
  t.band = tile_band();
  t.unroll = k_unroll(props, t.bk);
  // Two slices staged at once (EMBER_VULKAN_STAGES=2): one barrier a slice instead of two, for
  // twice the shared memory. For measuring on a GPU; one by default.
  t.stages = env_count("EMBER_VULKAN_STAGES", op, 1, 2, 1);
  const auto& l = props.limits;
  const uint64_t shared =
      uint64_t{t.stages} * t.bk * (t.bm + t.bn + 8) * sizeof(float);  // rows padded by 4
  EMBER_CHECK(t.threads <= l.maxComputeWorkGroupInvocations &&
                  t.threads <= l.maxComputeWorkGroupSize[0] &&
                  shared <= l.maxComputeSharedMemorySize,
              "[", op, "] tiles ", t.bm, "x", t.bn, "x", t.bk, " of ", t.tm, "x", t.tn, " in ",
              t.stages, t.stages == 1 ? " stage" : " stages", " need ", t.threads,
              " invocations and ", shared, " bytes of shared memory; ", props.deviceName, " has ",
              l.maxComputeWorkGroupInvocations, " and ", l.maxComputeSharedMemorySize);
  return t;
}

// gemm_lanes.glsl's tiles: TM rows (32; the subgroup where m is no more) by subgroup x TN (8)
// columns; EMBER_VULKAN_LANE_TILES="TM,TN[,BK]" overrides. As few steps of k a loop iteration as
// llvmpipe's 65,535-step cap allows (1 up to a k of 32,768, at most 16): it compiles each
// pipeline in each process, and unrolled steps cost more compile time there than they save.
Tiles lane_tiles(const DeviceContext& c, int64_t m, int64_t k) {
  const uint32_t lanes = c.lanes();
  uint32_t tm = 32, tn = 8, bk = 1;
  while (bk < 16 && k > int64_t{bk} * 32768) bk *= 2;
  if (const char* env = std::getenv("EMBER_VULKAN_LANE_TILES")) {
    unsigned e_tm = 0, e_tn = 0, e_bk = bk;
    int end = 0;
    const int got = std::sscanf(env, "%u,%u%n,%u%n", &e_tm, &e_tn, &end, &e_bk, &end);
    EMBER_CHECK(
        got >= 2 && env[end] == '\0' && e_tm > 0 && e_tm <= 1024 && e_tm % lanes == 0 && e_tn > 0 &&
            e_tn <= 1024 && uint64_t{e_tm} * e_tn <= 1024 && e_bk > 0 && e_bk <= 64,
        "[matmul] EMBER_VULKAN_LANE_TILES=\"", env, "\" is not TM,TN[,BK] with TM a multiple of ",
        lanes, " (the subgroup), TM * TN at most 1024 and BK at most 64");
    tm = e_tm;
    tn = e_tn;
    bk = e_bk;
  }
  if (m <= lanes) tm = lanes;  // a row or a few (a vector times a matrix): one pipeline more
  Tiles t{lanes, tm, lanes * tn, bk, tm, tn};
  t.band = tile_band();
  t.lanes = true;
  return t;
}

}  // namespace

// Whether float32 GEMMs take gemm_lanes.glsl: by default on a CPU device (lavapipe, where the
// staged tiles cost 50 cycles a multiply-add), or as EMBER_VULKAN_GEMM=lanes or =tiled says
// (CI runs the tables on lavapipe through both). Only a CPU device: the kernel takes a workgroup
// for one whole subgroup, which a GPU need not make it without VK_EXT_subgroup_size_control.
std::string_view gemm_choice() {
  return env_word("EMBER_VULKAN_GEMM", "matmul", {"lanes", "tiled"}, "");
}

bool use_lanes(const DeviceContext& c) {
  const std::string_view want = gemm_choice();
  const bool can = c.lanes() > 0 && c.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  EMBER_CHECK(want != "lanes" || can,
              "[matmul] EMBER_VULKAN_GEMM=lanes needs a CPU device with subgroups of 4, 8 or 16 "
              "and their broadcasts; ",
              c.properties().deviceName, " is not one");
  return want != "tiled" && can;
}

Tiles gemm_tiles(const DeviceContext& c, int64_t m, int64_t n, int64_t k, int64_t batch,
                 bool conv) {
  return use_lanes(c) ? lane_tiles(c, m, k) : tiled_tiles(c.properties(), batch, m, n, conv);
}

int64_t k_parts(const VkPhysicalDeviceProperties& props, int64_t k, const Tiles& t) {
  if (props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) return 1;
  // llvmpipe ends an invocation's loops, all of them together, after 65,535 iterations,
  // silently: keep each part's slices well below (check_tile_steps counts the tile loop).
  const int64_t slices = 32768 / slice_steps(t);
  return (k + int64_t{t.bk} * slices - 1) / (int64_t{t.bk} * slices);
}

void check_tile_steps(const DeviceContext& c, const char* op, int64_t tiles, int64_t k_part,
                      const Tiles& t) {
  if (c.properties().deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) return;
  // A workgroup runs every 65,535th tile (the dispatch's limit), each k_part / bk slices, after
  // a few hundred steps of set-up (fastdiv.glsl's divisors).
  const int64_t steps =
      (tiles + 65534) / 65535 * ((k_part + t.bk - 1) / t.bk) * slice_steps(t) + 1024;
  EMBER_CHECK(steps < 65535, "[", op, "] ", tiles, " tiles of ", k_part, " products each take ",
              steps, " loop steps an invocation, more than ", c.properties().deviceName,
              " runs (its loops stop after 65,535 steps)");
}

const Pipeline& gemm_pipeline(DeviceContext& c, const char* shader, std::span<const uint32_t> spirv,
                              std::span<const uint32_t> lanes, uint32_t bindings,
                              uint32_t push_size, const Tiles& t) {
  const std::array<uint32_t, 9> constants = {
      t.threads, t.bm, t.bn, t.bk, t.tm, t.tn, t.band, t.unroll == 0 ? t.bk : t.unroll, t.stages};
  return c.pipeline(tiled_name(std::string(shader) + (t.lanes ? "_lanes" : "_tiled"), t),
                    t.lanes ? lanes : spirv, bindings, push_size, constants);
}

// 128x128 tiles, 16 deep, of 8 subgroups of 64x32 each, read two slices ahead; a convolution on
// tensor cores, where 512 invocations fit, 32 deep of 16 subgroups of 32x32, one slice ahead. On
// an H100 (beside each other in one run): matmul 8192^3 6.2 ms against 7.1 with 32-deep slices;
// the conv bench 1.5 ms against 3.5 with the matmul's tiles, and 1.8 two slices ahead. The
// emulation (lavapipe, 32 KiB of shared memory) keeps the matmul's.
// EMBER_VULKAN_COOP_TILES="BM,BN,BK,TM,TN" and EMBER_VULKAN_COOP_AHEAD=1|2 override both, for
// tuning on a new device.
Tiles coop_tiles(const DeviceContext& c, bool conv) {
  Tiles t{0, 128, 128, 16, 64, 32};
  const auto& limits = c.properties().limits;
  if (conv && c.cooperative() && limits.maxComputeWorkGroupInvocations >= 512 &&
      limits.maxComputeWorkGroupSize[0] >= 512) {
    t = Tiles{0, 128, 128, 32, 32, 32};
  }
  const char* op = conv ? "conv" : "matmul";
  env_tiles("EMBER_VULKAN_COOP_TILES", op, true, t);
  t.ahead = env_count("EMBER_VULKAN_COOP_AHEAD", op, 1, 2, conv ? 1 : 2);
  t.threads = 32 * (t.bm / t.tm) * (t.bn / t.tn);
  t.band = tile_band();
  const auto& props = c.properties();
  const uint32_t shared = coop_shared_bytes(t.bm, t.bn, t.bk, t.threads / 32);
  EMBER_CHECK(t.threads <= props.limits.maxComputeWorkGroupInvocations &&
                  t.threads <= props.limits.maxComputeWorkGroupSize[0] &&
                  shared <= props.limits.maxComputeSharedMemorySize,
              "[", op, "] cooperative tiles ", t.bm, "x", t.bn, "x", t.bk, " of ", t.tm, "x", t.tn,
              " need ", t.threads, " invocations and ", shared, " bytes of shared memory; ",
              props.deviceName, " has ", props.limits.maxComputeWorkGroupInvocations, " and ",
              props.limits.maxComputeSharedMemorySize);
  return t;
}

const Pipeline& coop_pipeline(DeviceContext& c, const char* op, const CoopShaders& shaders,
                              uint32_t bindings, uint32_t push_size, const Tiles& t,
                              uint32_t flags) {
  const uint32_t fc = c.fragment_columns();
  EMBER_CHECK(t.tn % fc == 0, "[", op, "] cooperative tiles ", t.tm, "x", t.tn,
              " a subgroup: its columns are not a multiple of the fragments' ", fc);
  const std::array<uint32_t, 10> constants = {
      t.threads, t.bm / t.tm, t.bn / t.tn, t.tm / 16, t.tn / fc, t.bk, t.band, fc, t.ahead, flags};
  // The variant: emulated (no tensor cores), KHR, or NV.
  const auto [variant, spirv] = !c.cooperative() ? std::pair{"_coop_emulated", shaders.emulated}
                                : c.cooperative_khr() ? std::pair{"_coop_khr", shaders.khr}
                                                      : std::pair{"_coop", shaders.nv};
  const std::string name =
      std::string(op) + variant + "_f" + std::to_string(fc) + "_v" + std::to_string(flags);
  return c.pipeline(tiled_name(name, t), spirv, bindings, push_size, constants);
}

// A matmul whose operand is wider than a binding (the vocabulary projection of a language model
// past maxStorageBufferRange) in halves that bind: by batch, by rows of a and out, or by columns
// of b and out (b's columns are contiguous rows of a transposed weight; a block of out's
// columns goes through a contiguous temporary). Sums stay whole, so the results are unchanged.
void VulkanBackend::matmul_in_blocks(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const DeviceContext& c = ctx_of(out);
  int dim = -1;  // of out: 0 batch, 1 rows, 2 columns
  if (out.shape[0] > 1) {
    dim = 0;
  } else if ((!binds(c, a) || !binds(c, out)) && out.shape[1] > 1) {
    dim = 1;
  } else if (!binds(c, b) && out.shape[2] > 1) {
    dim = 2;
  }
  EMBER_CHECK(dim >= 0, "[matmul] ", a.shape, " x ", b.shape, " spans more than the ",
              c.max_binding(), " bytes a shader binds on ", c.properties().deviceName,
              " (maxStorageBufferRange) in one row or column");
  const int64_t n = out.shape[dim], half = n / 2;
  for (const auto& [first, count] : {std::pair{int64_t{0}, half}, std::pair{half, n - half}}) {
    const RawTensor a_piece = dim == 2 ? a : narrowed(a, dim, first, count);
    const RawTensor b_piece = dim == 1 ? b : narrowed(b, dim, first, count);
    matmul(a_piece, b_piece, narrowed(out, dim, first, count));
  }
}

void VulkanBackend::matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if (!out.is_contiguous()) {
    return into_contiguous(*this, out, [&](const RawTensor& o) { matmul(a, b, o); });
  }
  const DeviceContext& dc = ctx_of(out);
  const bool tensor_cores =
      out.dtype == DType::f16 && (dc.cooperative() || dc.emulated_cooperative());
  if (half_in_float32(dc, out.dtype) && !tensor_cores && out.numel() > 0 && a.dtype == out.dtype &&
      b.dtype == out.dtype) {
    const RawTensor o32 = float32_like(*this, out);
    matmul(float32_copy(*this, a), float32_copy(*this, b), o32);
    return copy(o32, out);
  }
  if (out.numel() > 0 && a.shape[2] > 0 && !all_bind(ctx_of(out), {&a, &b, &out})) {
    return matmul_in_blocks(a, b, out);
  }
  if (convert_code(out.dtype) < 0 || a.dtype != out.dtype || b.dtype != out.dtype) {
    no_kernel("matmul", a.dtype);
  }
  if (out.numel() == 0) return;
  check_operands("matmul", a, out);
  check_indexable(b, "matmul");
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (k == 0) return fill(out, Scalar(0.0));  // empty sums; an empty operand binds no buffer
  DeviceContext& c = ctx_of(out);
  std::lock_guard lock(c.mu);
  const bool f32 = out.dtype == DType::f32;
  // int32 (int8 weights' products) through gemm_lanes.glsl too where float32 takes it.
  const bool int32_lanes = out.dtype == DType::i32 && use_lanes(c) &&
                           k_parts(c.properties(), k, gemm_tiles(c, m, n, k, batch)) == 1;
  const bool gemm = f32 || int32_lanes;
  const bool coop = out.dtype == DType::f16 && (c.cooperative() || c.emulated_cooperative());
  if (!gemm && !coop) check_wide(c, "matmul", out.dtype);  // matmul.comp's ANY variant
  constexpr Tiles kAny{256, 16, 16, 16, 1, 1};             // matmul.comp's
  const Tiles t = coop ? coop_tiles(c, false) : gemm ? gemm_tiles(c, m, n, k, batch) : kAny;
  EMBER_CHECK((!gemm && !coop) || k_parts(c.properties(), k, t) == 1, "[matmul] k = ", k,
              " is longer than ", c.properties().deviceName,
              " sums in one pass (its loops stop after 65,535 steps)");
  const int64_t tiles = batch * ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn);
  EMBER_CHECK(tiles < (int64_t{1} << 32), "[matmul] ", out.shape,
              " has more tiles than the Vulkan kernel counts");
  if (gemm || coop) check_tile_steps(c, "matmul", tiles, k, t);
  struct {
    uint32_t m, n, k, tiles;
    uint32_t a_base, b_base, out_base, type;
    int32_t a_batch, a_row, a_col;
    uint32_t flags;  // 128-bit reads of a (1) and b (2), writes of out (4, float16): rows_by
    int32_t b_batch, b_row, b_col, pad2;
  } p{};
  const Bound ba = bind_bytes(c, a), bb = bind_bytes(c, b), bo = bind_bytes(c, out);
  p.type = static_cast<uint32_t>(convert_code(out.dtype));
  p.m = static_cast<uint32_t>(m);
  p.n = static_cast<uint32_t>(n);
  p.k = static_cast<uint32_t>(k);
  p.tiles = static_cast<uint32_t>(tiles);
  p.a_base = ba.base;
  p.b_base = bb.base;
  p.out_base = bo.base;
  int32_t a_strides[kMaxRank], b_strides[kMaxRank];
  put_strides(a, a_strides);
  put_strides(b, b_strides);
  p.a_batch = a_strides[0];
  p.a_row = a_strides[1];
  p.a_col = a_strides[2];
  p.b_batch = b_strides[0];
  p.b_row = b_strides[1];
  p.b_col = b_strides[2];
  // 128-bit reads (8 halves, 4 floats: `w` elements) of the operands whose rows are unit-stride
  // and all start w-aligned, flags 1 (a) and 2 (b); 4: out's rows written so (float16).
  auto rows_by = [&](int64_t w) {
    auto aligned = [w](int64_t v) { return v % w == 0; };
    const bool vec_a =
        p.a_col == 1 && aligned(k) && aligned(p.a_row) && aligned(p.a_batch) && aligned(p.a_base);
    const bool vec_b =
        p.b_col == 1 && aligned(n) && aligned(p.b_row) && aligned(p.b_batch) && aligned(p.b_base);
    const bool vec_out = aligned(n) && aligned(p.out_base);
    return (vec_a ? 1u : 0u) | (vec_b ? 2u : 0u) | (vec_out && coop ? 4u : 0u);
  };
  if (coop || f32) p.flags = rows_by(coop ? 8 : 4);
  const Binding bs[] = {ba.binding, bb.binding, bo.binding};
  constexpr int64_t kMaxGroups = 65535;  // maxComputeWorkGroupCount[0]'s guaranteed minimum
  const Pipeline& pipeline =
      coop ? coop_pipeline(
                 c, "matmul",
                 {shaders::matmul_coop, shaders::matmul_coop_khr, shaders::matmul_coop_emulated}, 3,
                 sizeof p, t, p.flags)
      : f32
          ? gemm_pipeline(c, "matmul", shaders::matmul_tiled, shaders::matmul_lanes, 3, sizeof p, t)
      : int32_lanes ? gemm_pipeline(c, "matmul_i32", shaders::matmul_lanes_i32,
                                    shaders::matmul_lanes_i32, 3, sizeof p, t)
                    : c.pipeline("matmul_any", shaders::matmul_any, 3, sizeof p);
  c.dispatch(pipeline, bs, &p, sizeof p, static_cast<uint32_t>(std::min(tiles, kMaxGroups)));
}

}  // namespace ember::vulkan
