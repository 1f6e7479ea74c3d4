// Times one float16 cooperative-matrix shader on the discrete GPU with GPU timestamps, apart
// from Ember (scripts/vulkan_coop_ceiling.sh builds and runs it; docs/PERFORMANCE.md has what
// it measured): how fast NVIDIA's Vulkan driver runs a multiply-add with no memory traffic
// (registers.comp), the tile loop with its fragments from shared memory (shared.comp), and the
// backend's matmul_coop.comp at any tiling.
//
// usage: probe file.spv n groups flop check spec0 spec1 ...
//   a and b are n x n random float16, out n x n x 4 bytes; the push constants are
//   matmul_coop.comp's for a row-major n^3 product of `groups` tiles (PROBE_TILES overrides the
//   tile count). flop: the work of one dispatch. check=1 compares 64 outputs, read as float16,
//   with double sums. PROBE_DUMP=file writes the driver's pipeline cache there (to look
//   for the compiled binary in it). Settings: PROBE_KHR=1 enables
//   VK_KHR_cooperative_matrix (SPIR-V 1.6 shaders) instead of VK_NV_cooperative_matrix; PROBE_ANY=1
//   takes the first device without either (lavapipe, for matmul_coop.comp's EMULATE variant);
//   PROBE_NO_STATS=1 builds the pipeline without capturing the driver's statistics;
//   PROBE_NO_ROBUST=1 turns robust buffer access off, as the backend has it (the probe otherwise
//   enables every feature listed).
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                             \
  do {                                                    \
    VkResult r_ = (x);                                    \
    if (r_) {                                             \
      std::printf("probe: %s failed: %d\n", #x, int(r_)); \
      std::exit(1);                                       \
    }                                                     \
  } while (0)

namespace {

uint16_t to_half(float f) {  // round to nearest even; inputs in [-1, 1], tiny ones flushed
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, m = x & 0x7fffffu;
  const int e = int((x >> 23) & 0xff) - 127 + 15;
  if (e <= 0) return uint16_t(sign);
  uint32_t h = (uint32_t(e) << 10) | (m >> 13);
  const uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

double from_half(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1 : 1;
  if (e == 0) return s * m * std::ldexp(1.0, -24);
  return s * (1 + m / 1024.0) * std::ldexp(1.0, e - 15);
}

struct CoopKhrFeatures {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR (headers 1.3.239 lack it)
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix, robustBufferAccess;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::puts("usage: probe file.spv n groups flop check spec...");
    return 2;
  }
  const uint32_t n = std::atoi(argv[2]), groups = std::atoi(argv[3]);
  const double flop = std::atof(argv[4]);
  const bool check = std::atoi(argv[5]) != 0;
  std::vector<uint32_t> spec;
  for (int i = 6; i < argc; ++i) spec.push_back(std::atoi(argv[i]));
  std::ifstream file(argv[1], std::ios::binary);
  const std::vector<char> code((std::istreambuf_iterator<char>(file)), {});
  const bool khr = std::getenv("PROBE_KHR") != nullptr, any = std::getenv("PROBE_ANY") != nullptr;

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = khr ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkInstance inst;
  CK(vkCreateInstance(&ii, nullptr, &inst));
  uint32_t count = 8;
  VkPhysicalDevice all[8];
  vkEnumeratePhysicalDevices(inst, &count, all);
  VkPhysicalDevice pd = VK_NULL_HANDLE;
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(all[i], &p);
    if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) pd = all[i];
  }
  if (!pd && any && count > 0) pd = all[0];
  if (!pd) {
    std::puts("probe: no discrete GPU");
    return 1;
  }

  // Every feature the device has, the cooperative matrices' among them.
  VkPhysicalDeviceCooperativeMatrixFeaturesNV nv{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  CoopKhrFeatures kf{VkStructureType(1000506000)};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &v11;
  v11.pNext = &v12;
  if (khr) {
    v12.pNext = &v13;
    v13.pNext = &kf;
  } else if (!any) {
    v12.pNext = &nv;
  }
  // The driver's statistics of the pipeline (registers, stack), where it gives them.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  uint32_t extension_count = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &extension_count, nullptr);
  std::vector<VkExtensionProperties> listed(extension_count);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &extension_count, listed.data());
  const char* stats_name = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  const bool has_stats = std::getenv("PROBE_NO_STATS") == nullptr &&
                         std::any_of(listed.begin(), listed.end(), [&](const auto& e) {
                           return std::strcmp(e.extensionName, stats_name) == 0;
                         });
  if (has_stats) {
    stats.pNext = features.pNext;
    features.pNext = &stats;
  }
  vkGetPhysicalDeviceFeatures2(pd, &features);
  // The backend leaves robust buffer access off (its bounds checks are the shaders' own).
  if (std::getenv("PROBE_NO_ROBUST")) features.features.robustBufferAccess = VK_FALSE;
  float priority = 1;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  std::vector<const char*> extensions;
  if (!any) extensions.push_back(khr ? "VK_KHR_cooperative_matrix" : "VK_NV_cooperative_matrix");
  if (has_stats) extensions.push_back(stats_name);
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &features;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = uint32_t(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  VkDevice dev;
  CK(vkCreateDevice(pd, &di, nullptr, &dev));
  VkQueue queue;
  vkGetDeviceQueue(dev, 0, 0, &queue);

  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  const VkDeviceSize bytes = VkDeviceSize(n) * n * 2;
  auto make = [&](VkDeviceSize size, VkMemoryPropertyFlags want, VkBuffer& b, VkDeviceMemory& m) {
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    CK(vkCreateBuffer(dev, &bi, nullptr, &b));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(dev, b, &mr);
    uint32_t type = ~0u;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == ~0u; ++i) {
      if ((mr.memoryTypeBits >> i & 1) && (mp.memoryTypes[i].propertyFlags & want) == want)
        type = i;
    }
    if (type == ~0u) {
      std::puts("probe: no memory type");
      std::exit(1);
    }
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = mr.size;
    ai.memoryTypeIndex = type;
    CK(vkAllocateMemory(dev, &ai, nullptr, &m));
    CK(vkBindBufferMemory(dev, b, m, 0));
  };
  VkBuffer bufs[3], stage;
  VkDeviceMemory mems[3], stage_mem;
  for (int i = 0; i < 3; ++i) {  // a, b, out (out also holds the ceilings' float32 fragments)
    make(i == 2 ? 2 * bytes : bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, bufs[i], mems[i]);
  }
  make(bytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, stage,
       stage_mem);

  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool cp;
  CK(vkCreateCommandPool(dev, &cpi, nullptr, &cp));
  VkCommandBufferAllocateInfo cba{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cba.commandPool = cp;
  cba.commandBufferCount = 1;
  VkCommandBuffer cb;
  CK(vkAllocateCommandBuffers(dev, &cba, &cb));
  auto begin = [&] {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CK(vkBeginCommandBuffer(cb, &bi));
  };
  auto submit = [&] {
    CK(vkEndCommandBuffer(cb));
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    CK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    CK(vkQueueWaitIdle(queue));
  };
  auto copy = [&](VkBuffer from, VkBuffer to) {
    begin();
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb, from, to, 1, &region);
    submit();
  };
  std::vector<uint16_t> ha(size_t(n) * n), hb(size_t(n) * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : ha) v = to_half(u(rng));
  for (auto& v : hb) v = to_half(u(rng));
  void* mapped;
  CK(vkMapMemory(dev, stage_mem, 0, bytes, 0, &mapped));
  std::memcpy(mapped, ha.data(), bytes);
  copy(stage, bufs[0]);
  std::memcpy(mapped, hb.data(), bytes);
  copy(stage, bufs[1]);

  VkDescriptorSetLayoutBinding lb[3];
  for (uint32_t i = 0; i < 3; ++i) {
    lb[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = 3;
  dl.pBindings = lb;
  VkDescriptorSetLayout set_layout;
  CK(vkCreateDescriptorSetLayout(dev, &dl, nullptr, &set_layout));
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 64u};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &range;
  VkPipelineLayout layout;
  CK(vkCreatePipelineLayout(dev, &pli, nullptr, &layout));
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = code.size();
  smi.pCode = reinterpret_cast<const uint32_t*>(code.data());
  VkShaderModule module;
  CK(vkCreateShaderModule(dev, &smi, nullptr, &module));
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, 4 * i, 4};
  VkSpecializationInfo si{uint32_t(spec.size()), entries.data(), 4 * spec.size(), spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
              nullptr,
              0,
              VK_SHADER_STAGE_COMPUTE_BIT,
              module,
              "main",
              &si};
  ci.layout = layout;
  if (has_stats) ci.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  const char* dump = std::getenv("PROBE_DUMP");
  VkPipelineCache cache = VK_NULL_HANDLE;
  if (dump) {
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    CK(vkCreatePipelineCache(dev, &pci, nullptr, &cache));
  }
  VkPipeline pipeline;
  CK(vkCreateComputePipelines(dev, cache, 1, &ci, nullptr, &pipeline));
  if (dump) {
    size_t size = 0;
    CK(vkGetPipelineCacheData(dev, cache, &size, nullptr));
    std::vector<char> data(size);
    CK(vkGetPipelineCacheData(dev, cache, &size, data.data()));
    std::ofstream(dump, std::ios::binary).write(data.data(), std::streamsize(size));
  }
  std::string statistics;
  if (has_stats) {
    auto get = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
        vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    uint32_t ns = 0;
    get(dev, &ei, &ns, nullptr);
    std::vector<VkPipelineExecutableStatisticKHR> st(
        ns, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    get(dev, &ei, &ns, st.data());
    for (const auto& x : st) {
      if (x.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR &&
          std::strstr(x.name, "Binary") == nullptr && std::strstr(x.name, "Local") == nullptr) {
        statistics += std::string("; ") + x.name + " " + std::to_string(x.value.u64);
      }
    }
  }

  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  VkDescriptorPool pool;
  CK(vkCreateDescriptorPool(dev, &dpi, nullptr, &pool));
  VkDescriptorSetAllocateInfo dsa{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsa.descriptorPool = pool;
  dsa.descriptorSetCount = 1;
  dsa.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  CK(vkAllocateDescriptorSets(dev, &dsa, &set));
  VkDescriptorBufferInfo dbi[3];
  VkWriteDescriptorSet writes[3];
  for (uint32_t i = 0; i < 3; ++i) {
    dbi[i] = {bufs[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set,     i,      0, 1,
                 VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,      nullptr, &dbi[i], nullptr};
  }
  vkUpdateDescriptorSets(dev, 3, writes, 0, nullptr);
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2;
  VkQueryPool queries;
  CK(vkCreateQueryPool(dev, &qpi, nullptr, &queries));

  // m n k tiles, the bases and type, a's strides, flags 7 (128-bit rows throughout), b's strides
  const char* tiles_env = std::getenv("PROBE_TILES");
  const uint32_t tiles = tiles_env ? std::atoi(tiles_env) : groups;
  const uint32_t push[16] = {n, n, n, tiles, 0, 0, 0, 0, 0, n, 1, 7, 0, n, 1, 0};
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  const int reps = 10;
  double best = 1e30;
  for (int round = 0; round < 4; ++round) {  // the first warms up
    begin();
    vkCmdResetQueryPool(cb, queries, 0, 2);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
    vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 64, push);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0);
    for (int r = 0; r < reps; ++r) vkCmdDispatch(cb, groups, 1, 1);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1);
    submit();
    uint64_t ts[2];
    CK(vkGetQueryPoolResults(dev, queries, 0, 2, sizeof ts, ts, 8,
                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    const double ms = double(ts[1] - ts[0]) * props.limits.timestampPeriod * 1e-6 / reps;
    if (round > 0) best = std::min(best, ms);
  }
  std::printf("%s", argv[1]);
  for (uint32_t s : spec) std::printf(" %u", s);
  std::printf(": %.3f ms, %.1f TFLOPS", best, flop / best * 1e-9);
  if (check) {
    std::vector<uint16_t> out(size_t(n) * n);
    copy(bufs[2], stage);
    std::memcpy(out.data(), mapped, bytes);
    double worst = 0;
    for (int s = 0; s < 64; ++s) {
      const size_t i = rng() % n, j = rng() % n;
      double want = 0;
      for (size_t kk = 0; kk < n; ++kk)
        want += from_half(ha[i * n + kk]) * from_half(hb[kk * n + j]);
      worst = std::max(worst, std::fabs(from_half(out[i * n + j]) - want) / (std::fabs(want) + 1));
    }
    std::printf(", worst error %.1e (%s)", worst, worst < 2e-2 ? "ok" : "WRONG");
  }
  std::printf("%s\n", statistics.c_str());
  return 0;
}
