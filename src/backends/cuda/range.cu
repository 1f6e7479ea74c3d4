// Range checks queued on the stream (Backend::check_range) and the synchronisation that reports
// them. Each check gets a RangeSlot (state.hpp) that its kernel fills with the extremes of the bad
// values; synchronize reads the used slots back with one copy and returns the first failure in
// queue order, as the Cpu would have raised it at once.
#include <limits>
#include <type_traits>
#include <utility>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

// Integer extremes stay exact (an i64 index past 2^53 is reported as it is): the int64 with its
// sign bit flipped orders like the value.
__device__ inline unsigned long long int_key(int64_t v) {
  return static_cast<unsigned long long>(v) ^ (1ull << 63);
}
int64_t int_value(unsigned long long key) { return static_cast<int64_t>(key ^ (1ull << 63)); }

__global__ void init_slot(RangeSlot* slot, unsigned int integral) {
  slot->min_key = ~0ull;
  slot->max_key = 0;
  slot->nan = 0;
  slot->bad = 0;
  slot->integral = integral;
}

// Each thread keeps the extremes of the bad values it sees, a warp merges them, and one lane per
// warp updates the slot: atomics only where values are bad, and few of them.
template <class T>
__global__ void check_kernel(const T* x, Strided<1> st, int64_t n, double lo, double hi,
                             RangeSlot* slot) {
  unsigned long long min_key = ~0ull, max_key = 0;
  bool nan = false, bad = false;
  EMBER_CUDA_FOR(i, n) {
    int64_t off[1];
    st.offsets(i, off);
    if constexpr (std::is_integral_v<T>) {  // Int and Bool, compared as the Cpu does: in double
      const auto v = static_cast<int64_t>(x[off[0]]);
      const auto d = static_cast<double>(v);
      if (d < lo || d > hi) {
        bad = true;
        min_key = min(min_key, int_key(v));
        max_key = max(max_key, int_key(v));
      }
    } else {
      const auto v = static_cast<double>(static_cast<Compute<T>>(x[off[0]]));
      if (v != v) {
        nan = bad = true;
      } else if (v < lo || v > hi) {
        bad = true;
        min_key = min(min_key, range_key(v));
        max_key = max(max_key, range_key(v));
      }
    }
  }
  // kThreads is a multiple of 32 and every thread gets here: full warps.
  constexpr unsigned kAll = 0xffffffffu;
  if (!__any_sync(kAll, bad)) return;
  nan = __any_sync(kAll, nan);
  for (int m = 16; m > 0; m >>= 1) {
    min_key = min(min_key, __shfl_xor_sync(kAll, min_key, m));
    max_key = max(max_key, __shfl_xor_sync(kAll, max_key, m));
  }
  if (threadIdx.x % 32 != 0) return;
  atomicOr(&slot->bad, 1u);
  if (nan) atomicOr(&slot->nan, 1u);
  atomicMin(&slot->min_key, min_key);
  atomicMax(&slot->max_key, max_key);
}

template <class T>
void launch_check(const RawTensor& x, const RangeCheck& check, RangeSlot* slot,
                  cudaStream_t stream) {
  const RawTensor* ts[1] = {&x};
  const int64_t n = x.numel();
  check_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
      x.data_as<const T>(), make_strided<1>(x.shape, ts), n, check.lo, check.hi, slot);
}

// The error of a slot whose check failed: NaN when a NaN was seen, else the smallest bad value
// when it is below lo, else the largest (and, for integer operands, that value as the index).
RangeError failure(const RangeSlot& slot, const RangeCheck& check) {
  RangeError e;
  e.check = check;
  e.found = true;
  if (slot.nan) {
    e.value = std::numeric_limits<double>::quiet_NaN();
  } else if (slot.integral) {
    const int64_t smallest = int_value(slot.min_key);
    e.index = static_cast<double>(smallest) < check.lo ? smallest : int_value(slot.max_key);
    e.value = static_cast<double>(e.index);
  } else {
    const double smallest = range_value(slot.min_key);
    e.value = smallest < check.lo ? smallest : range_value(slot.max_key);
  }
  return e;
}

// Waits for the stream and returns the first failure of the pending checks (one found at an
// earlier drain first), emptying the queue. Called with s.range_mutex held.
RangeError drain(DeviceState& s, const char* op) {
  const size_t n = s.range_checks.size();
  RangeError first = std::exchange(s.range_failed, RangeError{});
  struct Clear {  // the queue is emptied even when the stream reports an error
    DeviceState& s;
    ~Clear() { s.range_checks.clear(); }
  } clear{s};
  if (n > 0) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(s.range_slots_host, s.range_slots, n * sizeof(RangeSlot),
                                     cudaMemcpyDeviceToHost, s.stream),
                     op);
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(s.stream), op);
  for (size_t i = 0; i < n && !first.found; ++i) {
    if (s.range_slots_host[i].bad) first = failure(s.range_slots_host[i], s.range_checks[i]);
  }
  return first;
}

}  // namespace

RangeError CudaBackend::check_range(const RawTensor& x, const RangeCheck& check) {
  if (x.numel() == 0) return {};
  DeviceState& s = state_of(x);
  // A captured check would be read by no one: the graph is checked eagerly before capture (the
  // warm-up run), and its index kernels skip bad indices on replay as they do when queued.
  if (s.capturing()) return {};
  std::lock_guard<std::mutex> lock(s.range_mutex);
  // Full: wait for the queued checks and keep their first failure for synchronize.
  if (s.range_checks.size() == DeviceState::kRangeSlots) s.range_failed = drain(s, check.op);
  RangeSlot* slot = s.range_slots + s.range_checks.size();
  const bool integral = !is_floating(x.dtype);
  init_slot<<<1, 1, 0, s.stream>>>(slot, integral ? 1u : 0u);
  EMBER_CUDA_LAUNCHED(check.op);
  EMBER_CUDA_DISPATCH_ALL(x.dtype, launch_check, x, check, slot, s.stream)
  EMBER_CUDA_LAUNCHED(check.op);
  s.range_checks.push_back(check);
  return {};  // queued: a failure comes from synchronize
}

RangeError CudaBackend::synchronize(Device device) {
  DeviceState& s = device_state(device.index);
  s.check_not_capturing("synchronize", "waiting for work that has not run yet");
  std::lock_guard<std::mutex> lock(s.range_mutex);
  return drain(s, "synchronize");
}

}  // namespace ember::cuda
