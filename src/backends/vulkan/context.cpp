// The Vulkan instance (one per process, with Khronos's validation layer when
// EMBER_VULKAN_VALIDATION=1), the devices with a compute queue, and each device's allocator,
// command recording and pipelines (context.hpp).
#include "context.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

#include "ember/backends/vulkan/vulkan.hpp"
#include "ember/core/error.hpp"
#include "ember/core/text.hpp"

namespace ember::vulkan {
namespace {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    default:
      return "a Vulkan error";
  }
}

// Validation messages of error severity: counted, and the first kept for the test's message.
std::atomic<size_t> g_validation_errors{0};
std::mutex g_first_mu;
std::string g_first_error;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    if (g_validation_errors++ == 0) {
      std::lock_guard lock(g_first_mu);
      g_first_error = data && data->pMessage ? data->pMessage : "(no message)";
    }
  }
  return VK_FALSE;
}

bool validation_wanted() {
  const char* v = std::getenv("EMBER_VULKAN_VALIDATION");
  return v && std::strcmp(v, "0") != 0 && *v != '\0';
}

// The process's instance and its devices that have a compute queue. A machine without a Vulkan
// driver has none (device_count() == 0), not an error.
struct Instance {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> devices;
  std::vector<std::unique_ptr<DeviceContext>> contexts;
  std::mutex mu;
  uint32_t validation_version = 0;  // the validation layer's Vulkan version, where it is on

  Instance() {
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "ember";
    app.pEngineName = "ember";
    app.apiVersion = VK_API_VERSION_1_1;
    auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    const bool validate = validation_wanted();
    if (validate) {
      info.enabledLayerCount = 1;
      info.ppEnabledLayerNames = &layer;
      info.enabledExtensionCount = 1;
      info.ppEnabledExtensionNames = &ext;
    }
    if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
      // With validation asked for, a missing layer is an error worth stating; without a driver
      // there are simply no devices.
      EMBER_CHECK(!validate,
                  "[vulkan] EMBER_VULKAN_VALIDATION is set but the instance with "
                  "VK_LAYER_KHRONOS_validation could not be made (install "
                  "vulkan-validationlayers)");
      instance = VK_NULL_HANDLE;
      return;
    }
    if (validate) {
      uint32_t count = 0;
      vkEnumerateInstanceLayerProperties(&count, nullptr);
      std::vector<VkLayerProperties> layers(count);
      vkEnumerateInstanceLayerProperties(&count, layers.data());
      for (const VkLayerProperties& l : layers) {
        if (std::strcmp(l.layerName, layer) == 0) validation_version = l.specVersion;
      }
      auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
      auto m = make<VkDebugUtilsMessengerCreateInfoEXT>(
          VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
      m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
      m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      m.pfnUserCallback = on_message;
      if (create_messenger) (void)create_messenger(instance, &m, nullptr, &messenger);
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    vkEnumeratePhysicalDevices(instance, &n, all.data());
    for (VkPhysicalDevice d : all) {
      uint32_t families = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(d, &families, nullptr);
      std::vector<VkQueueFamilyProperties> props(families);
      vkGetPhysicalDeviceQueueFamilyProperties(d, &families, props.data());
      const bool compute = std::any_of(props.begin(), props.end(), [](const auto& p) {
        return (p.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
      });
      if (compute) devices.push_back(d);
    }
    contexts.resize(devices.size());
  }
  // Deliberately never destroyed: tensors in static objects may outlive any destructor order.
};

Instance& instance() {
  static Instance* i = new Instance();
  return *i;
}

uint32_t find_memory_type(VkPhysicalDevice physical, VkMemoryPropertyFlags want,
                          VkMemoryPropertyFlags avoid, bool* found) {
  VkPhysicalDeviceMemoryProperties m;
  vkGetPhysicalDeviceMemoryProperties(physical, &m);
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
    // Never protected memory, which only protected queues may touch.
    if ((f & want) == want && (f & (avoid | VK_MEMORY_PROPERTY_PROTECTED_BIT)) == 0) {
      *found = true;
      return i;
    }
  }
  *found = false;
  return 0;
}

// VK_KHR_cooperative_matrix, declared here as the Vulkan registry defines it: Vulkan's headers
// have it from 1.3.255, Debian bookworm's are 1.3.239.
namespace khr {
constexpr auto kFeaturesType = static_cast<VkStructureType>(1000506000);
constexpr auto kShapeType = static_cast<VkStructureType>(1000506001);
constexpr auto kPropertiesType = static_cast<VkStructureType>(1000506002);
constexpr const char* kExtension = "VK_KHR_cooperative_matrix";
constexpr uint32_t kFloat16 = 0, kFloat32 = 1, kScopeSubgroup = 3;
struct Features {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
};
struct Properties {  // VkPhysicalDeviceCooperativeMatrixPropertiesKHR
  VkStructureType sType;
  void* pNext;
  VkShaderStageFlags cooperativeMatrixSupportedStages;
};
struct Shape {  // VkCooperativeMatrixPropertiesKHR
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize, AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  uint32_t scope;
};
using ListShapes = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, Shape*);
}  // namespace khr

// What float16 matmul on tensor cores (matmul_coop.comp) needs: VK_KHR_cooperative_matrix, or
// else VK_NV_cooperative_matrix, with 16x8x16 or 16x16x16 float16 fragments summed in float32
// for subgroups of 32, and what the shader's SPIR-V declares besides: 16-bit storage buffers,
// float16 arithmetic and the Vulkan memory model (with its device scope, which the other
// shaders' atomics use once the model is on). KHR first: on an H100 its 16x8x16 products ran at
// the card's mma.sync speed, NV's at two thirds of it (docs/VULKAN.md).
// EMBER_VULKAN_COOPERATIVE=0 leaves them off (float16 matmul then takes the ANY variant); =nv or
// =khr takes that extension only; =emulate, on a device without them, runs the shader's EMULATE
// variant (for CI).
// gemm_coop.glsl's default tiles' shared memory, the larger of coop_tiles' (a convolution's
// 128x128, 32 deep, as much as 8 subgroups need; a matmul's 16 deep), and the EMULATE variant's.
constexpr uint32_t kCoopSharedBytes = coop_shared_bytes(128, 128, 32, 8);
constexpr uint32_t kEmulatedCoopSharedBytes = coop_shared_bytes(128, 128, 16, 8);

std::string_view cooperative_choice() {
  const char* env = std::getenv("EMBER_VULKAN_COOPERATIVE");
  return env != nullptr ? env : "";
}

struct CooperativeFeatures {
  khr::Features khr_matrix{};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV nv_matrix{};
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model{};
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16{};
  VkPhysicalDevice16BitStorageFeatures storage16{};
  bool khr = false;                // which extension find() took
  uint32_t fragment_columns = 16;  // and the fragments' columns (gemm_coop.glsl's FC)

  // The four, cleared and linked: the matrix's -> memory_model -> float16 -> storage16.
  void* chain() {
    khr_matrix = khr::Features{khr::kFeaturesType, nullptr, VK_FALSE, VK_FALSE};
    nv_matrix = make<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    memory_model = make<VkPhysicalDeviceVulkanMemoryModelFeaturesKHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR);
    float16 = make<VkPhysicalDeviceShaderFloat16Int8FeaturesKHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR);
    storage16 = make<VkPhysicalDevice16BitStorageFeatures>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
    memory_model.pNext = &float16;
    float16.pNext = &storage16;
    if (khr) {
      khr_matrix.pNext = &memory_model;
      return &khr_matrix;
    }
    nv_matrix.pNext = &memory_model;
    return &nv_matrix;
  }

  static constexpr const char* kExtensions[] = {VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME,
                                                VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME,
                                                VK_KHR_16BIT_STORAGE_EXTENSION_NAME};
  const char* matrix_extension() const {
    return khr ? khr::kExtension : VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  }

  bool find(VkPhysicalDevice physical, const VkPhysicalDeviceProperties& props) {
    const std::string_view choice = cooperative_choice();
    if (choice == "0") return false;
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> offered(n);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, offered.data());
    const auto has = [&](const char* want) {
      return std::any_of(offered.begin(), offered.end(),
                         [&](const auto& e) { return std::strcmp(e.extensionName, want) == 0; });
    };
    if (!std::all_of(std::begin(kExtensions), std::end(kExtensions), has)) return false;
    // vkGetPhysicalDeviceFeatures2 and Properties2 are Vulkan 1.1's, which the instance asks for.
    if (props.apiVersion < VK_API_VERSION_1_1) return false;
    if (props.limits.maxComputeSharedMemorySize < kCoopSharedBytes ||
        props.limits.maxComputeWorkGroupInvocations < 256) {
      return false;  // gemm_coop.glsl's workgroups: 8 subgroups of 32
    }
    // A validation layer older than the KHR extension (Vulkan 1.3.255; Debian bookworm's is
    // 1.3.239) reports its structures and SPIR-V as errors: NV then, which it knows.
    const uint32_t layer = instance().validation_version;
    const bool layer_knows_khr = layer == 0 || layer >= VK_MAKE_API_VERSION(0, 1, 3, 255);
    for (const bool k : {true, false}) {
      if (choice == (k ? "nv" : "khr") || (k && !layer_knows_khr)) continue;
      khr = k;
      if (has(matrix_extension()) && usable(physical)) return true;
    }
    return false;
  }

  // Whether the extension `khr` says has the features, the compute stage, subgroups of 32 and
  // a fragment shape gemm_coop.glsl takes (fragment_columns).
  bool usable(VkPhysicalDevice physical) {
    auto features = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    features.pNext = chain();
    vkGetPhysicalDeviceFeatures2(physical, &features);
    if (!(khr ? khr_matrix.cooperativeMatrix : nv_matrix.cooperativeMatrix) ||
        !memory_model.vulkanMemoryModel || !float16.shaderFloat16 ||
        !storage16.storageBuffer16BitAccess || !memory_model.vulkanMemoryModelDeviceScope) {
      return false;
    }
    auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto nv_stages = make<VkPhysicalDeviceCooperativeMatrixPropertiesNV>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV);
    khr::Properties khr_stages{khr::kPropertiesType, nullptr, 0};
    subgroup.pNext = khr ? static_cast<void*>(&khr_stages) : static_cast<void*>(&nv_stages);
    auto props2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    const VkShaderStageFlags stages = khr ? khr_stages.cooperativeMatrixSupportedStages
                                          : nv_stages.cooperativeMatrixSupportedStages;
    if ((stages & VK_SHADER_STAGE_COMPUTE_BIT) == 0 || subgroup.subgroupSize != 32) return false;
    fragment_columns = khr ? khr_columns(physical) : nv_columns(physical);
    return fragment_columns != 0;
  }

  // 8 where the device lists 16x8x16 float16 x float16 + float32 at subgroup scope, else 16
  // where it lists 16x16x16, else 0; EMBER_VULKAN_FRAGMENT_COLUMNS=16 prefers 16 (for tuning).
  static uint32_t pick_columns(bool has8, bool has16) {
    const char* env = std::getenv("EMBER_VULKAN_FRAGMENT_COLUMNS");
    if (env != nullptr && std::string_view(env) == "16" && has16) return 16;
    return has8 ? 8 : has16 ? 16 : 0;
  }

  static uint32_t khr_columns(VkPhysicalDevice physical) {
    auto list = reinterpret_cast<khr::ListShapes>(vkGetInstanceProcAddr(
        instance().instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    if (list == nullptr) return 0;
    uint32_t count = 0;
    list(physical, &count, nullptr);
    khr::Shape blank{};
    blank.sType = khr::kShapeType;
    std::vector<khr::Shape> all(count, blank);
    list(physical, &count, all.data());
    const auto lists = [&](uint32_t columns) {
      return std::any_of(all.begin(), all.end(), [&](const khr::Shape& s) {
        return s.MSize == 16 && s.NSize == columns && s.KSize == 16 && s.AType == khr::kFloat16 &&
               s.BType == khr::kFloat16 && s.CType == khr::kFloat32 &&
               s.ResultType == khr::kFloat32 && !s.saturatingAccumulation &&
               s.scope == khr::kScopeSubgroup;
      });
    };
    return pick_columns(lists(8), lists(16));
  }

  // NV's 16x16x16 only: its 16x8x16 were no faster on an H100.
  static uint32_t nv_columns(VkPhysicalDevice physical) {
    auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance().instance,
                              "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    if (list == nullptr) return 0;
    uint32_t count = 0;
    list(physical, &count, nullptr);
    std::vector<VkCooperativeMatrixPropertiesNV> all(
        count,
        make<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
    list(physical, &count, all.data());
    const bool has16 = std::any_of(all.begin(), all.end(), [](const auto& s) {
      return s.MSize == 16 && s.NSize == 16 && s.KSize == 16 &&
             s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
             s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
             s.scope == VK_SCOPE_SUBGROUP_NV;
    });
    return pick_columns(false, has16);
  }

  // The chain for VkDeviceCreateInfo::pNext, asking for just what the shader uses.
  void* enable(std::vector<const char*>& extensions) {
    void* head = chain();
    khr_matrix.cooperativeMatrix = VK_TRUE;
    nv_matrix.cooperativeMatrix = VK_TRUE;
    memory_model.vulkanMemoryModel = VK_TRUE;
    // With the memory model on, the other shaders' atomics (Device scope) need its device scope.
    memory_model.vulkanMemoryModelDeviceScope = VK_TRUE;
    float16.shaderFloat16 = VK_TRUE;
    storage16.storageBuffer16BitAccess = VK_TRUE;
    extensions.insert(extensions.end(), std::begin(kExtensions), std::end(kExtensions));
    extensions.push_back(matrix_extension());
    return head;
  }
};

constexpr size_t kBlockSize = size_t{64} << 20;  // tensors are ranges of 64 MiB blocks
constexpr size_t kAlign = 256;                   // every range starts 256-byte aligned
constexpr size_t kSubmitEvery = 256;             // commands per submission

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

void check(VkResult r, const char* op, const char* what) {
  EMBER_CHECK(r == VK_SUCCESS, "[", op, "] vulkan: ", what, " failed (", result_name(r), ")");
}

int count_devices() { return static_cast<int>(instance().devices.size()); }

DeviceContext& context(int index) {
  Instance& in = instance();
  std::lock_guard lock(in.mu);
  const int n = static_cast<int>(in.devices.size());
  EMBER_CHECK(index >= 0 && index < n, "[device] vulkan:", index, " does not exist: ", n,
              " Vulkan device", n == 1 ? "" : "s", " with a compute queue here");
  auto& c = in.contexts[static_cast<size_t>(index)];
  if (!c) c = std::make_unique<DeviceContext>(in.devices[static_cast<size_t>(index)], index);
  return *c;
}

DeviceContext::DeviceContext(VkPhysicalDevice physical, int index) : index_(index) {
  vkGetPhysicalDeviceProperties(physical, &props_);
  auto limits = make<VkPhysicalDeviceMaintenance3Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  auto props2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props2.pNext = &limits;
  vkGetPhysicalDeviceProperties2(physical, &props2);
  max_allocation_ = limits.maxMemoryAllocationSize;
  max_binding_ = props_.limits.maxStorageBufferRange;
  if (const char* v = std::getenv("EMBER_VULKAN_MAX_BINDING")) {
    const std::optional<uint64_t> bytes = detail::parse_number<uint64_t>(v);
    EMBER_CHECK(bytes && *bytes >= 4096, "[vulkan] EMBER_VULKAN_MAX_BINDING is '", v,
                "', not a number of bytes of at least 4096");
    max_binding_ = std::min<size_t>(max_binding_, *bytes);
  }
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> props(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props.data());
  for (uint32_t i = 0; i < families; ++i) {
    if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      family_ = i;
      break;
    }
  }
  const float priority = 1.0f;
  auto q = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  q.queueFamilyIndex = family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  std::vector<const char*> extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  // 64-bit integers and floats where the device has them: the WIDE shader variants need both.
  VkPhysicalDeviceFeatures has{};
  vkGetPhysicalDeviceFeatures(physical, &has);
  VkPhysicalDeviceFeatures features{};
  // EMBER_VULKAN_NO_FLOAT64=1 acts as a device without them, so that CI (whose lavapipe has
  // both) runs the float32 variants that such devices use.
  const char* no_wide = std::getenv("EMBER_VULKAN_NO_FLOAT64");
  wide_ = has.shaderInt64 == VK_TRUE && has.shaderFloat64 == VK_TRUE &&
          !(no_wide != nullptr && std::string_view(no_wide) == "1");
  features.shaderInt64 = wide_ ? VK_TRUE : VK_FALSE;
  features.shaderFloat64 = wide_ ? VK_TRUE : VK_FALSE;
  auto info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pEnabledFeatures = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  if (props_.apiVersion >= VK_API_VERSION_1_1) {
    auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto props2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    constexpr VkSubgroupFeatureFlags kOps =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT;
    const uint32_t size = subgroup.subgroupSize;
    if ((subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
        (subgroup.supportedOperations & kOps) == kOps && (size == 4 || size == 8 || size == 16)) {
      lanes_ = size;
    }
  }
  CooperativeFeatures coop;
  cooperative_ = coop.find(physical, props_);
  if (cooperative_) {
    info.pNext = coop.enable(extensions);
    cooperative_khr_ = coop.khr;
    fragment_columns_ = coop.fragment_columns;
  } else {
    emulated_cooperative_ = cooperative_choice() == "emulate" &&
                            props_.limits.maxComputeSharedMemorySize >= kEmulatedCoopSharedBytes;
    fragment_columns_ = 8;  // the KHR shape, which the GPUs measured run
  }
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(vkCreateDevice(physical, &info, nullptr, &device_), "vulkan",
        !cooperative_ ? "vkCreateDevice (with VK_KHR_push_descriptor)"
        : cooperative_khr_
            ? "vkCreateDevice (with VK_KHR_push_descriptor and VK_KHR_cooperative_matrix)"
            : "vkCreateDevice (with VK_KHR_push_descriptor and VK_NV_cooperative_matrix)");
  vkGetDeviceQueue(device_, family_, 0, &queue_);
  const char* profile = std::getenv("EMBER_VULKAN_PROFILE");
  // "1", or "groups" (each dispatch keyed by its workgroups too); anything else leaves it off.
  profile_groups_ = profile != nullptr && std::string_view(profile) == "groups";
  if (profile != nullptr && (profile_groups_ || std::string_view(profile) == "1")) {
    time_builds_ = true;
    if (props[family_].timestampValidBits > 0) {
      profile_queries_ = static_cast<uint32_t>(kSubmitEvery) + 1;
      const uint32_t bits = props[family_].timestampValidBits;
      timestamp_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    } else {
      std::fprintf(stderr, "ember: EMBER_VULKAN_PROFILE: vulkan:%d (%s) has no timestamps\n", index,
                   props_.deviceName);
    }
  }
  push_descriptors_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  EMBER_CHECK(push_descriptors_ != nullptr, "[vulkan] vulkan:", index,
              " has no vkCmdPushDescriptorSetKHR");
  auto pool = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = family_;
  check(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "vulkan", "vkCreateCommandPool");

  // Tensors: device-local memory that the host cannot map where there is such (a discrete GPU's
  // VRAM; the mappable part may be a 256 MiB window). Staging for transfers: host memory that
  // is cached where possible, since read-backs copy out of it: host reads of a GPU's mapped
  // VRAM cross PCIe uncached, which made every read-back on an H100 slow. On lavapipe both are
  // its one memory type.
  constexpr VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                  visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                  cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  bool found = false;
  device_type_ = find_memory_type(physical, local, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, &found);
  if (!found) device_type_ = find_memory_type(physical, local, 0, &found);
  EMBER_CHECK(found, "[vulkan] vulkan:", index, " has no device-local memory type");
  const std::array<std::pair<VkMemoryPropertyFlags, VkMemoryPropertyFlags>, 4> staging = {
      {{visible | cached, local}, {visible, local}, {visible | cached, 0}, {visible, 0}}};
  for (const auto& [want, avoid] : staging) {
    host_type_ = find_memory_type(physical, want, avoid, &found);
    if (found) break;
  }
  EMBER_CHECK(found, "[vulkan] vulkan:", index, " has no host-visible coherent memory type");
}

DeviceContext::~DeviceContext() = default;  // contexts live as long as the process

// --- Memory ----------------------------------------------------------------------------------

Block& DeviceContext::new_block(size_t size, bool staging) {
  auto b = std::make_unique<Block>();
  b->size = size;
  b->staging = staging;
  auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bi, nullptr, &b->buffer), "allocate", "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = staging ? host_type_ : device_type_;
  if ((req.memoryTypeBits & (1u << ai.memoryTypeIndex)) == 0) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    EMBER_FAIL("[allocate] vulkan:", index_, " cannot back a storage buffer with memory type ",
               ai.memoryTypeIndex, " (", staging ? "staging" : "tensors",
               "; the buffer takes types ", req.memoryTypeBits, ")");
  }
  const VkResult r = vkAllocateMemory(device_, &ai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    EMBER_FAIL("[allocate] vulkan:", index_, " could not allocate ", size, " bytes (",
               result_name(r), "; ", in_use_, " bytes in use, ", reserved_, " reserved)");
  }
  check(vkBindBufferMemory(device_, b->buffer, b->memory, 0), "allocate", "vkBindBufferMemory");
  if (staging) {
    check(vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), "allocate",
          "vkMapMemory");
  }
  b->base = next_base_;
  next_base_ += round_up(size, kBlockSize) + kBlockSize;  // a gap: no address is in two blocks
  b->free[0] = size;
  reserved_ += size;
  Block& ref = *b;
  by_base_[b->base] = b.get();
  blocks_.push_back(std::move(b));
  return ref;
}

// Tensors' ranges are reused as soon as they are released: every command waits for the ones
// recorded before it (barrier()), so later work never overlaps earlier work on the same range,
// as with a CUDA stream's caching allocator. Staging ranges are written by the host, so one is
// reused only once the work recorded before its release has completed.
uintptr_t DeviceContext::allocate(size_t nbytes, bool staging) {
  const size_t want = round_up(std::max<size_t>(nbytes, 1), kAlign);
  // A tensor wider than a binding (maxStorageBufferRange) gets a block of its own; the kernels
  // that take such tensors work on pieces that bind (binding.hpp's within_binding).
  EMBER_CHECK(want <= max_allocation_, "[vulkan:", index_, " allocator] cannot allocate ", nbytes,
              " bytes (more than the ", max_allocation_, " one allocation holds on ",
              props_.deviceName, ", its maxMemoryAllocationSize)");
  EMBER_CHECK(!staging || want <= max_binding(), "[vulkan:", index_,
              " allocator] a staging range of ", nbytes, " bytes exceeds a binding");
  auto take = [&]() -> uintptr_t {
    for (auto& b : blocks_) {
      if (b->staging != staging) continue;
      for (auto it = b->free.begin(); it != b->free.end(); ++it) {
        if (it->second < want) continue;
        const size_t at = it->first, left = it->second - want;
        b->free.erase(it);
        if (left) b->free[at + want] = left;
        count_in_use(staging, want);
        return b->base + at;
      }
    }
    return 0;
  };
  if (uintptr_t a = take()) return a;
  if (staging && !pending_.empty()) {
    retire(false);
    if (uintptr_t a = take()) return a;
    size_t waiting = 0;
    for (const Pending& p : pending_) waiting += p.nbytes;
    if (waiting >= kBlockSize) {  // rather than another block: wait for the uploads in flight
      retire(true);
      if (uintptr_t a = take()) return a;
    }
  }
  Block& b = new_block(std::max(want, std::min(kBlockSize, max_binding())), staging);
  const size_t left = b.size - want;
  b.free.clear();
  if (left) b.free[want] = left;
  count_in_use(staging, want);
  return b.base;
}

void DeviceContext::release(uintptr_t address, size_t nbytes) {
  const size_t size = round_up(std::max<size_t>(nbytes, 1), kAlign);
  if (!locate(address).first->staging) {
    give_back(address, size);
    return;
  }
  // Work recorded so far (in current_ or in flight) may still read the range.
  const uint64_t serial = recorded_ ? next_serial_ : next_serial_ - 1;
  pending_.push_back({address, size, serial});
}

// Memory in use is tensors' memory, as on the other backends: staging ranges (transfers in
// flight) are the backend's own, counted as reserved but not in use.
void DeviceContext::count_in_use(bool staging, size_t nbytes) {
  if (staging) return;
  in_use_ += nbytes;
  peak_ = std::max(peak_, in_use_);
}

void DeviceContext::keep(size_t nbytes) {
  in_use_ -= round_up(std::max<size_t>(nbytes, 1), kAlign);
}

void DeviceContext::give_back(uintptr_t address, size_t nbytes) {
  auto [b, at] = locate(address);
  if (!b->staging) in_use_ -= nbytes;
  auto next = b->free.lower_bound(at);
  size_t start = at, size = nbytes;
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == at) {
      start = prev->first;
      size += prev->second;
      b->free.erase(prev);
    }
  }
  if (next != b->free.end() && at + nbytes == next->first) {
    size += next->second;
    b->free.erase(next);
  }
  b->free[start] = size;
}

std::pair<Block*, size_t> DeviceContext::locate(uintptr_t address) const {
  auto it = by_base_.upper_bound(address);
  EMBER_CHECK(it != by_base_.begin(), "[vulkan] address ", address, " is no tensor's");
  --it;
  Block* b = it->second;
  EMBER_CHECK(address - b->base <= b->size, "[vulkan] address ", address, " is no tensor's");
  return {b, address - b->base};
}

void DeviceContext::empty_cache() {
  finish();
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block& b = **it;
    if (b.free.size() == 1 && b.free.begin()->first == 0 && b.free.begin()->second == b.size) {
      if (b.mapped) vkUnmapMemory(device_, b.memory);
      vkDestroyBuffer(device_, b.buffer, nullptr);
      vkFreeMemory(device_, b.memory, nullptr);
      reserved_ -= b.size;
      by_base_.erase(b.base);
      it = blocks_.erase(it);
    } else {
      ++it;
    }
  }
}

// --- Recording and submission ----------------------------------------------------------------

VkCommandBuffer DeviceContext::recording() {
  if (current_.cb == VK_NULL_HANDLE) {
    if (!spare_.empty()) {
      current_ = spare_.back();
      spare_.pop_back();
      check(vkResetCommandBuffer(current_.cb, 0), "vulkan", "vkResetCommandBuffer");
      check(vkResetFences(device_, 1, &current_.fence), "vulkan", "vkResetFences");
    } else {
      auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      ai.commandPool = pool_;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(vkAllocateCommandBuffers(device_, &ai, &current_.cb), "vulkan",
            "vkAllocateCommandBuffers");
      auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
      check(vkCreateFence(device_, &fi, nullptr, &current_.fence), "vulkan", "vkCreateFence");
    }
    auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(current_.cb, &bi), "vulkan", "vkBeginCommandBuffer");
    if (profiling()) {  // timestamp 0 opens the submission; command i ends at i + 1
      if (current_.queries == VK_NULL_HANDLE) {
        auto qi = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = profile_queries_;
        check(vkCreateQueryPool(device_, &qi, nullptr, &current_.queries), "vulkan",
              "vkCreateQueryPool");
      }
      vkCmdResetQueryPool(current_.cb, current_.queries, 0, profile_queries_);
      vkCmdWriteTimestamp(current_.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, current_.queries, 0);
    }
    current_.serial = next_serial_;
    recorded_ = 0;
  }
  return current_.cb;
}

void DeviceContext::barrier(const std::string* label, uint32_t groups) {
  // Every command reads what the ones before it wrote (compute and transfer alike).
  auto m = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  m.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  m.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(current_.cb, stages, stages, 0, 1, &m, 0, nullptr, 0, nullptr);
  if (profiling()) {
    std::string name = label ? *label : std::string("?");
    if (profile_groups_ && groups > 0) name += "@" + std::to_string(groups);
    current_.labels.push_back(std::move(name));
    vkCmdWriteTimestamp(current_.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, current_.queries,
                        static_cast<uint32_t>(current_.labels.size()));
  }
  if (++recorded_ >= kSubmitEvery) submit();
}

void DeviceContext::dispatch(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                             uint32_t push_size, uint32_t groups) {
  VkCommandBuffer cb = recording();
  // On the stack, not the heap: this runs for every op.
  constexpr size_t kMaxBindings = 12;
  EMBER_CHECK(bindings.size() <= kMaxBindings, "[vulkan] ", bindings.size(),
              " bindings in one dispatch, more than ", kMaxBindings);
  std::array<VkDescriptorBufferInfo, kMaxBindings> infos;
  std::array<VkWriteDescriptorSet, kMaxBindings> writes;
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
    writes[i] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  push_descriptors_(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0,
                    static_cast<uint32_t>(bindings.size()), writes.data());
  if (push_size) vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  vkCmdDispatch(cb, std::max(groups, 1u), 1, 1);
  barrier(p.name, std::max(groups, 1u));
}

void DeviceContext::copy_buffer(VkBuffer src, size_t src_offset, VkBuffer dst, size_t dst_offset,
                                size_t nbytes) {
  if (nbytes == 0) return;
  VkCommandBuffer cb = recording();
  const VkBufferCopy region{src_offset, dst_offset, nbytes};
  vkCmdCopyBuffer(cb, src, dst, 1, &region);
  static const std::string kCopy = "copy";
  barrier(&kCopy);
}

void DeviceContext::submit() {
  if (current_.cb == VK_NULL_HANDLE) return;
  check(vkEndCommandBuffer(current_.cb), "vulkan", "vkEndCommandBuffer");
  auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &current_.cb;
  check(vkQueueSubmit(queue_, 1, &si, current_.fence), "vulkan", "vkQueueSubmit");
  in_flight_.push_back(current_);
  current_ = Submission{};
  recorded_ = 0;
  ++next_serial_;
}

void DeviceContext::retire(bool wait) {
  while (!in_flight_.empty()) {
    Submission& s = in_flight_.front();
    if (wait) {
      check(vkWaitForFences(device_, 1, &s.fence, VK_TRUE, UINT64_MAX), "synchronize",
            "vkWaitForFences");
    } else if (vkGetFenceStatus(device_, s.fence) != VK_SUCCESS) {
      break;
    }
    completed_ = s.serial;
    if (profiling()) collect(s);
    spare_.push_back(s);
    in_flight_.pop_front();
  }
  // Ranges whose last user has completed go back to their blocks.
  auto done = std::partition(pending_.begin(), pending_.end(),
                             [&](const Pending& p) { return p.serial > completed_; });
  for (auto it = done; it != pending_.end(); ++it) give_back(it->address, it->nbytes);
  pending_.erase(done, pending_.end());
}

void DeviceContext::finish() {
  submit();
  retire(true);
}

// --- Profiling -------------------------------------------------------------------------------

void DeviceContext::collect(Submission& s) {
  const auto n = static_cast<uint32_t>(s.labels.size());
  if (n == 0) return;
  std::vector<uint64_t> ticks(n + 1);
  check(vkGetQueryPoolResults(device_, s.queries, 0, n + 1, ticks.size() * sizeof(uint64_t),
                              ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT),
        "profile", "vkGetQueryPoolResults");
  for (uint32_t i = 0; i < n; ++i) {
    Timing& t = timings_[s.labels[i]];
    ++t.count;
    // Differences modulo the valid bits: a counter narrower than 64 bits may wrap.
    const uint64_t elapsed = (ticks[i + 1] - ticks[i]) & timestamp_mask_;
    t.ns += static_cast<double>(elapsed) * props_.limits.timestampPeriod;
  }
  s.labels.clear();
}

std::string DeviceContext::profile(bool reset) {
  finish();
  std::vector<std::pair<std::string, Timing>> rows(timings_.begin(), timings_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  double total = 0;
  for (const auto& r : rows) total += r.second.ns;
  std::string out;
  char line[160];
  const std::string device = "vulkan:" + std::to_string(index_);
  std::snprintf(line, sizeof line, "%-28s %9s %11s %10s %7s\n", device.c_str(), "commands",
                "total ms", "mean us", "share");
  out += line;
  for (const auto& [name, t] : rows) {
    std::snprintf(line, sizeof line, "%-28s %9llu %11.3f %10.2f %6.1f%%\n", name.c_str(),
                  static_cast<unsigned long long>(t.count), t.ns * 1e-6,
                  t.ns * 1e-3 / static_cast<double>(t.count), total > 0 ? 100 * t.ns / total : 0);
    out += line;
  }
  // Compilation is host time before the first dispatch: a driver that compiles slowly shows
  // here rather than in the commands' times.
  std::vector<std::pair<std::string, double>> built(builds_.begin(), builds_.end());
  std::sort(built.begin(), built.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  double build_ms = 0;
  for (const auto& b : built) build_ms += b.second;
  std::snprintf(line, sizeof line, "%zu pipelines built in %.1f ms of host time%s\n", built.size(),
                build_ms, built.empty() ? "" : ", the slowest:");
  out += line;
  for (size_t i = 0; i < std::min<size_t>(built.size(), 5); ++i) {
    std::snprintf(line, sizeof line, "  %-40s %9.1f ms\n", built[i].first.c_str(), built[i].second);
    out += line;
  }
  if (reset) {
    timings_.clear();
    builds_.clear();
  }
  return out;
}

// --- Pipelines -------------------------------------------------------------------------------

const Pipeline& DeviceContext::pipeline(const std::string& name, std::span<const uint32_t> spirv,
                                        uint32_t bindings, uint32_t push_size,
                                        std::span<const uint32_t> constants) {
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  Pipeline p;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  auto dl =
      make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  dl.bindingCount = bindings;
  dl.pBindings = b.data();
  check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &p.set_layout), name.c_str(),
        "vkCreateDescriptorSetLayout");
  const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
  auto pl = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  pl.pushConstantRangeCount = push_size ? 1 : 0;
  pl.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(device_, &pl, nullptr, &p.layout), name.c_str(),
        "vkCreatePipelineLayout");
  auto sm = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  sm.codeSize = spirv.size_bytes();
  sm.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device_, &sm, nullptr, &module), name.c_str(), "vkCreateShaderModule");
  auto ci = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage =
      make<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  std::vector<VkSpecializationMapEntry> entries(constants.size());
  for (size_t i = 0; i < constants.size(); ++i) {
    entries[i] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i * sizeof(uint32_t)),
                  sizeof(uint32_t)};
  }
  const VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                                  constants.size_bytes(), constants.data()};
  if (!constants.empty()) ci.stage.pSpecializationInfo = &spec;
  ci.layout = p.layout;
  const auto start = std::chrono::steady_clock::now();
  const VkResult r =
      vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p.pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  check(r, name.c_str(), "vkCreateComputePipelines");
  if (time_builds_) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    builds_[name] = ms;
    // Streamed too, so that a slow compilation shows while it holds the first step up.
    if (ms >= 100)
      std::fprintf(stderr, "ember: vulkan:%d built %s in %.0f ms\n", index_, name.c_str(), ms);
  }
  auto& [key, made] = *pipelines_.emplace(name, p).first;
  made.name = &key;
  return made;
}

size_t validation_errors() { return g_validation_errors.load(); }
std::string first_validation_error() {
  std::lock_guard lock(g_first_mu);
  return g_first_error;
}

}  // namespace ember::vulkan
