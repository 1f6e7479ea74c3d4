// Run-time backend selection: the device names the backend. Backends that were not built fail
// with a message that says how to build them.
#include <cstdlib>
#include <string>

#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/device.hpp"
#include "internal.hpp"
#if EMBER_HAVE_LIBTORCH
#include "plugin.hpp"
#endif
#if EMBER_HAVE_CUDA
#include "ember/backends/cuda/cuda.hpp"
#endif
#if EMBER_HAVE_VULKAN
#include "ember/backends/vulkan/vulkan.hpp"
#endif

namespace ember {

Device Device::cuda(int index) {
#if EMBER_HAVE_CUDA
  const int n = cuda::device_count();
  EMBER_CHECK(index >= 0 && index < n, "[device] cuda:", index, " does not exist: ", n,
              " Cuda device", n == 1 ? "" : "s", " here");
  return {DeviceType::Cuda, index};
#else
  EMBER_FAIL("[device] cuda:", index,
             " is not available: this Ember was built without the Cuda backend "
             "(-DEMBER_WITH_CUDA=ON, with the CUDA toolkit)");
#endif
}

Device Device::vulkan(int index) {
#if EMBER_HAVE_VULKAN
  const int n = vulkan::device_count();
  EMBER_CHECK(index >= 0 && index < n, "[device] vulkan:", index, " does not exist: ", n,
              " Vulkan device", n == 1 ? "" : "s", " with a compute queue here");
  return {DeviceType::Vulkan, index};
#else
  EMBER_FAIL("[device] vulkan:", index,
             " is not available: this Ember was built without the Vulkan backend "
             "(-DEMBER_WITH_VULKAN=ON, with libvulkan-dev and glslang-tools)");
#endif
}

Device Device::libtorch(int index) {
#if EMBER_HAVE_LIBTORCH
  EMBER_CHECK(index == 0, "[device] libtorch has one device (libtorch:0), got libtorch:", index);
  detail::libtorch_backend();  // loads the plugin now: a device that exists can be used
  return {DeviceType::LibTorch, 0};
#else
  EMBER_FAIL("[device] libtorch:", index,
             " is not available: this Ember was built without the LibTorch backend (install "
             "libtorch-dev and reconfigure)");
#endif
}

// Here rather than in core/device.cpp: it calls the factories above, which know the build.
Device Device::parse(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    const std::string num = text.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(num.c_str(), &end, 10);
    EMBER_CHECK(!num.empty() && end && *end == '\0' && v >= 0 && v < 1024,
                "[device] cannot parse device index in '", text, "'");
    index = static_cast<int>(v);
  }
  if (name == "cpu") {
    EMBER_CHECK(index == 0, "[device] the cpu device has index 0, got '", text, "'");
    return cpu();
  }
  if (name == "cuda") return cuda(index);
  if (name == "vulkan") return vulkan(index);
  if (name == "libtorch") return libtorch(index);
  EMBER_FAIL("[device] unknown device '", text,
             "' (expected cpu, cuda[:N], vulkan[:N] or libtorch)");
}

int device_count(DeviceType type) {
  switch (type) {
    case DeviceType::Cpu:
      return 1;
    case DeviceType::LibTorch:
#if EMBER_HAVE_LIBTORCH
      return detail::try_libtorch_backend() ? 1 : 0;
#else
      return 0;
#endif
    case DeviceType::Cuda:
#if EMBER_HAVE_CUDA
      return cuda::device_count();
#else
      return 0;
#endif
    case DeviceType::Vulkan:
#if EMBER_HAVE_VULKAN
      return vulkan::device_count();
#else
      return 0;
#endif
    default:
      return 0;
  }
}

bool has_dtype(Device device, DType dtype) {
  return detail::backend_for(device).has_dtype(device, dtype);
}

namespace detail {

// Devices are checked when they are made (Device::libtorch and the like), so the switch only
// maps a device to its backend.
Backend& backend_for(Device device) {
  switch (device.type) {
    case DeviceType::Cpu:
      return cpu::backend();
#if EMBER_HAVE_LIBTORCH
    case DeviceType::LibTorch:
      return detail::libtorch_backend();
#endif
#if EMBER_HAVE_CUDA
    case DeviceType::Cuda:
      return cuda::backend();
#endif
#if EMBER_HAVE_VULKAN
    case DeviceType::Vulkan:
      return vulkan::backend();
#endif
    default:
      break;
  }
  EMBER_FAIL("[device] no backend for ", device, " in this build");
}

DynTensor make_empty(const Shape& shape, DType dtype, Device device, const char* op) {
  const size_t nbytes = checked_nbytes(shape, dtype_size(dtype), op);
  Backend& backend = backend_for(device);
  RawTensor t;
#if EMBER_HAS_EXCEPTIONS
  // The allocator knows the bytes, not the op; this is where both are known.
  try {
    t.storage = backend.allocate(nbytes, device);
  } catch (const Error& e) {
    EMBER_FAIL("[", op, "] cannot allocate shape ", shape, " of ", dtype, ": ", e.what());
  } catch (const std::bad_alloc&) {
    EMBER_FAIL("[", op, "] cannot allocate shape ", shape, " of ", dtype, " (", nbytes,
               " bytes): out of memory");
  }
#else
  t.storage = backend.allocate(nbytes, device);
#endif
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.dtype = dtype;
  return DynTensor(std::move(t));
}

void check_defined(const DynTensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), "[", op, "] ", what, " is an undefined (default-constructed) tensor");
}

void check_same_device(const DynTensor& a, const DynTensor& b, const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  EMBER_CHECK(a.device() == b.device(), "[", op, "] tensors are on different devices: ", a.device(),
              " and ", b.device());
}

void check_supported(const DynTensor& t, OpFamily family, DType dtype, const char* op) {
  check_supported(backend_of(t), family, dtype, op);
}

uint32_t dims_mask(const std::vector<int64_t>& dims, int rank, const char* op) {
  if (dims.empty()) return rank == 0 ? 0u : (rank >= 32 ? ~0u : ((1u << rank) - 1u));
  uint32_t mask = 0;
  for (int64_t d : dims) {
    const int w = wrap_dim(d, rank, op);
    if (rank == 0) continue;
    EMBER_CHECK(!(mask & (1u << w)), "[", op, "] dimension ", d, " appears more than once");
    mask |= 1u << w;
  }
  return mask;
}

}  // namespace detail
}  // namespace ember
