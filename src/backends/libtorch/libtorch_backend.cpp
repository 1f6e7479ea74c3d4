// The LibTorch backend's memory, transfers, fills and the ATen views of Ember tensors. The op
// families are in elementwise.cpp, reduce.cpp, index.cpp and conv.cpp beside this file.
#include <atomic>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>

#include "aten.hpp"

namespace ember::libtorch {

at::ScalarType to_aten(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return at::kFloat;
    case DType::f64:
      return at::kDouble;
    case DType::f16:
      return at::kHalf;
    case DType::bf16:
      return at::kBFloat16;
    case DType::i64:
      return at::kLong;
    case DType::i32:
      return at::kInt;
    case DType::i8:
      return at::kChar;
    case DType::u8:
      return at::kByte;
    case DType::boolean:
      return at::kBool;
  }
  EMBER_FAIL("[libtorch] unknown dtype");
}

at::Tensor view_of(const RawTensor& t) {
  const int rank = t.rank();
  bool negative = false;
  for (int d = 0; d < rank; ++d) negative |= t.strides[d] < 0 && t.shape[d] > 1;
  if (!negative) {  // the common case: ATen reads the sizes and strides in place (no vectors)
    return at::from_blob(t.data(), c10::IntArrayRef(t.shape.begin(), t.shape.end()),
                         c10::IntArrayRef(t.strides.begin(), t.strides.end()),
                         at::TensorOptions().dtype(to_aten(t.dtype)));
  }
  std::vector<int64_t> sizes(t.shape.begin(), t.shape.end());
  std::vector<int64_t> strides(t.strides.begin(), t.strides.end());
  std::vector<int64_t> flipped;
  int64_t offset = t.offset;
  for (int d = 0; d < rank; ++d) {
    if (strides[d] < 0 && sizes[d] > 1) {
      offset += (sizes[d] - 1) * strides[d];  // the lowest address of this dim
      strides[d] = -strides[d];
      flipped.push_back(d);
    }
  }
  void* data =
      static_cast<char*>(t.storage->data()) + offset * static_cast<int64_t>(dtype_size(t.dtype));
  at::Tensor v = at::from_blob(data, sizes, strides, at::TensorOptions().dtype(to_aten(t.dtype)));
  return flipped.empty() ? v : v.flip(flipped);
}

at::Tensor compute_view(const RawTensor& t) {
  at::Tensor v = view_of(t);
  return t.dtype == DType::f16 || t.dtype == DType::bf16 ? v.to(at::kFloat) : v;
}

at::Tensor saturate_to(const at::Tensor& r, at::ScalarType dtype) {
  if (!at::isFloatingType(r.scalar_type()) || !at::isIntegralType(dtype, /*includeBool=*/false)) {
    return r.to(dtype);
  }
  // Ember casts floats to integers saturating (NaN to 0), where C++ and ATen leave it undefined.
  double lo = 0, hi = 0;
  AT_DISPATCH_INTEGRAL_TYPES(dtype, "saturate_to", [&] {
    lo = static_cast<double>(std::numeric_limits<scalar_t>::min());
    hi = static_cast<double>(std::numeric_limits<scalar_t>::max());
  });
  return r.to(at::kDouble).nan_to_num(0, hi, lo).clamp(lo, hi).to(dtype);
}

void assign(const RawTensor& out, const at::Tensor& r) {
  at::Tensor o = view_of(out);
  const at::ScalarType dtype = to_aten(out.dtype);
  if (at::isFloatingType(r.scalar_type()) && at::isIntegralType(dtype, false)) {
    o.copy_(saturate_to(r, dtype));
  } else {
    o.copy_(r);
  }
}

at::Tensor as_pool_input(const at::Tensor& t, int spatial) {
  std::vector<int64_t> shape{1, -1};
  for (int d = t.dim() - spatial; d < t.dim(); ++d) shape.push_back(t.size(d));
  return t.reshape(shape);
}

void fail(std::string_view op, const char* what) { EMBER_FAIL("[", op, "] libtorch: ", what); }

namespace {

// Memory comes from c10's CPU allocator (aligned as ATen's vectorised kernels like it); the
// counters are this backend's, for memory_stats.
std::atomic<size_t> g_in_use{0}, g_peak{0};

struct Buffer {
  c10::DataPtr ptr;
  size_t nbytes;
};

void release_buffer(void* context, void*, size_t) {
  auto* b = static_cast<Buffer*>(context);
  g_in_use.fetch_sub(b->nbytes);
  delete b;
}

}  // namespace

}  // namespace ember::libtorch

// The plugin's exported symbols (src/tensor/plugin.cpp looks them up): the backend, and the
// thread setting it follows (cpu::set_num_threads, one setting for both backends).
extern "C" __attribute__((visibility("default"))) ember::Backend* ember_libtorch_backend() {
  static ember::libtorch::LibTorchBackend libtorch;
  return &libtorch;
}

// Debian's LibTorch does its GEMMs in OpenBLAS, whose pool at::set_num_threads does not size.
extern "C" void openblas_set_num_threads(int n) __attribute__((weak));

// ATen's intra-op (OpenMP) threads as Ember's; OpenBLAS, which LibTorch's GEMMs and the Cpu
// backend's f64 GEMM share, on one thread: its spinning pool beside OpenMP's oversubscribes the
// cores (an epoch of bench_train took 38 s instead of 22 s with both at 2 threads on 2 cores).
extern "C" __attribute__((visibility("default"))) void ember_libtorch_set_num_threads(int n) {
  at::set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
}

namespace ember::libtorch {

bool LibTorchBackend::supports(OpFamily family, DType dtype) const {
  switch (family) {
    case OpFamily::Matmul:
      return dtype != DType::boolean;
    case OpFamily::Random:
      return false;  // the front end draws on the Cpu (Ember's Philox streams) and copies
    case OpFamily::Conv:
    case OpFamily::Pool:
    case OpFamily::Norm:
    case OpFamily::Optim:
      return is_floating(dtype);
    case OpFamily::Svd:
      return dtype == DType::f32 || dtype == DType::f64;
    case OpFamily::SoftmaxRows:     // cross_entropy's row composites (src/tensor/softmax_rows.cpp)
    case OpFamily::Attention:       // the composite attention (src/nn/attention.cpp)
    case OpFamily::LayerNorm:       // the composite layer_norm (src/nn/norm.cpp)
    case OpFamily::ActivationGrad:  // the gradient rules' composites (src/autodiff)
    case OpFamily::Linear:          // the composite linear (src/nn/linear.cpp)
    case OpFamily::BatchNormCoefficients:  // the composites (src/tensor/norm.cpp)
    case OpFamily::MatmulInt8:             // the composite: ATen's int32 matmul
      return false;
    default:
      return true;
  }
}

std::shared_ptr<Storage> LibTorchBackend::allocate(size_t nbytes, Device device) {
  EMBER_CHECK(device.type == DeviceType::LibTorch, "[libtorch] cannot allocate on ", device);
  Buffer* b = nullptr;
  try {
    b = new Buffer{c10::GetCPUAllocator()->allocate(nbytes), nbytes};
  } catch (const c10::Error&) {
    EMBER_FAIL("[libtorch allocator] cannot allocate ", nbytes, " bytes (out of memory)");
  }
  const size_t now = g_in_use.fetch_add(nbytes) + nbytes;
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return std::make_shared<Storage>(b->ptr.get(), nbytes, device, release_buffer, b);
}

// c10's CPU allocator keeps no cache: nothing is cached, and empty_cache has nothing to do.
MemoryStats LibTorchBackend::memory_stats(Device) const {
  return {g_in_use.load(), 0, g_peak.load()};
}

void LibTorchBackend::reset_peak_memory(Device) { g_peak.store(g_in_use.load()); }

void LibTorchBackend::copy(const RawTensor& src, const RawTensor& dst) {
  run("copy", [&] { assign(dst, view_of(src)); });
}

void LibTorchBackend::write_from_host(const void* host, const RawTensor& dst) {
  run("write_from_host", [&] {
    const at::Tensor h = at::from_blob(const_cast<void*>(host),
                                       std::vector<int64_t>(dst.shape.begin(), dst.shape.end()),
                                       at::TensorOptions().dtype(to_aten(dst.dtype)));
    view_of(dst).copy_(h);  // synchronous: the host buffer is free when this returns
  });
}

void LibTorchBackend::read_to_host(const RawTensor& src, void* host) {
  run("read_to_host", [&] {
    at::Tensor h = at::from_blob(host, std::vector<int64_t>(src.shape.begin(), src.shape.end()),
                                 at::TensorOptions().dtype(to_aten(src.dtype)));
    h.copy_(view_of(src));
  });
}

void LibTorchBackend::fill(const RawTensor& dst, const Scalar& value) {
  run("fill", [&] {
    at::Tensor d = view_of(dst);
    if (value.kind() == KindId::Float) {
      d.fill_(value.to_double());
    } else if (value.kind() == KindId::Bool) {
      d.fill_(value.to_bool());
    } else {
      d.fill_(value.to_int());
    }
  });
}

void LibTorchBackend::iota(const RawTensor& dst, double start, double step) {
  run("iota", [&] {
    // start + i * step in double, then one rounding: the Cpu backend's arithmetic.
    const at::Tensor i = at::arange(dst.numel(), at::TensorOptions().dtype(at::kDouble));
    view_of(dst).view({-1}).copy_(i.mul(step).add(start));
  });
}

}  // namespace ember::libtorch
