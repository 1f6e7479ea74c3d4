#include "cpu_backend.hpp"

#include "allocator.hpp"
#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/error.hpp"
#include "os.hpp"
#include "threads.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(EMBER_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace ember::cpu {
namespace {

int initial_threads() {
#if defined(EMBER_NO_THREADS)
  return 1;
#else
  const long env = os::env_int("EMBER_NUM_THREADS", 0);
  return env > 0 ? static_cast<int>(env) : os::core_count();
#endif
}

int g_threads = 0;
detail::ThreadListener g_listener = nullptr;

}  // namespace

Backend& backend() {
  static CpuBackend cpu;
  return cpu;
}

int num_threads() {
  if (g_threads == 0) set_num_threads(initial_threads());
  return g_threads;
}

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "[set_num_threads] thread count must be at least 1, got ", n);
#if defined(EMBER_NO_THREADS)
  g_threads = 1;
#else
  g_threads = n;
#if defined(_OPENMP)
  omp_set_num_threads(n);       // the GEMM library (oneDNN) reads the OpenMP setting
#endif
#if defined(EMBER_HAVE_OPENBLAS)
  openblas_set_num_threads(n);  // its own thread pool (f64 GEMM), sized the same
#endif
#endif
  if (g_listener) g_listener(g_threads);
}

namespace detail {

void set_thread_listener(ThreadListener listener) {
  g_listener = listener;
  set_num_threads(num_threads());
}

}  // namespace detail

bool CpuBackend::supports(OpFamily family, DType dtype) const {
  switch (family) {
    case OpFamily::Matmul:
      return dtype != DType::boolean;
    case OpFamily::MatmulInt8:
      return dtype == DType::i8;
    case OpFamily::Conv:
    case OpFamily::Pool:
      return is_floating(dtype);
    case OpFamily::Norm:
    case OpFamily::Optim:
    case OpFamily::Svd:
      return dtype == DType::f32 || dtype == DType::f64;
    case OpFamily::SoftmaxRows:     // cross_entropy's row composites (src/tensor/softmax_rows.cpp)
    case OpFamily::Attention:       // the composite attention (src/nn/attention.cpp)
    case OpFamily::LayerNorm:       // the composite layer_norm (src/nn/norm.cpp)
    case OpFamily::ActivationGrad:  // the gradient rules' composites (src/autodiff)
    case OpFamily::Linear:          // the composite linear (src/nn/linear.cpp)
    case OpFamily::BatchNormCoefficients:  // the composites (src/tensor/norm.cpp)
      return false;
    default:
      return true;
  }
}

// The caching allocator's counters (allocator.cpp); the Cpu has one device.
MemoryStats CpuBackend::memory_stats(Device) const {
  const AllocatorStats s = allocator_stats();
  return {s.allocated_bytes, s.cached_bytes, s.peak_allocated_bytes};
}
void CpuBackend::reset_peak_memory(Device) { reset_peak_allocated(); }
void CpuBackend::empty_cache(Device) { cpu::empty_cache(); }

std::shared_ptr<Storage> CpuBackend::allocate(size_t nbytes, Device device) {
  EMBER_CHECK(device.is_cpu(), "[cpu] cannot allocate on ", device);
  return allocate_storage(nbytes);
}

RawTensor empty_raw(const Shape& shape, DType dtype) {
  RawTensor t;
  t.storage = allocate_storage(checked_nbytes(shape, dtype_size(dtype), "cpu workspace"));
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.dtype = dtype;
  return t;
}

}  // namespace ember::cpu
