// Host synchronisation: the one place where the host waits for a device (counted per device),
// and the range errors that wait raises. docs/ARCHITECTURE.md, "Asynchrony", has the contract.
#include "ember/tensor/sync.hpp"

#include <utility>
#if !defined(EMBER_NO_THREADS)
#include <atomic>
#include <mutex>
#endif

#include "internal.hpp"

namespace ember {
namespace {

constexpr int kDeviceTypes = 4;     // DeviceType's values
constexpr int kDeviceIndices = 64;  // devices of one type that a process may use
static_assert(static_cast<int>(DeviceType::LibTorch) == kDeviceTypes - 1,
              "a new DeviceType needs its row of sync counters");

#if defined(EMBER_NO_THREADS)
using Counter = uint64_t;
#else
using Counter = std::atomic<uint64_t>;
using Lock = std::lock_guard<std::mutex>;
#endif

struct DeviceSync {
  Counter syncs{0};
  RangeError pending;  // the first deferred range error since the last synchronisation
};

#if !defined(EMBER_NO_THREADS)
std::mutex g_pending_mutex;  // guards every DeviceSync::pending (set from any thread)
std::atomic<bool> g_defer{false};
#else
bool g_defer = false;
#endif

DeviceSync& sync_of(Device d) {
  static DeviceSync table[kDeviceTypes][kDeviceIndices];
  const int type = static_cast<int>(d.type);
  EMBER_CHECK(type < kDeviceTypes && d.index >= 0 && d.index < kDeviceIndices,
              "[synchronize] device ", d, " is out of range");
  return table[type][d.index];
}

// Keeps `e` unless an earlier error is pending: the first failure is the one to report.
void defer(DeviceSync& s, const RangeError& e) {
#if !defined(EMBER_NO_THREADS)
  Lock lock(g_pending_mutex);
#endif
  if (!s.pending.found) s.pending = e;
}

std::string describe(const RangeError& e) {
  if (e.check.message) return e.check.message(e);
  return detail::cat("[", e.check.op, "] value ", e.value, " is outside [", e.check.lo, ", ",
                     e.check.hi, "]");
}

}  // namespace

void synchronize(Device device) { detail::host_sync(device); }

uint64_t host_sync_count(Device device) { return sync_of(device).syncs; }

namespace detail {

void set_defer_range_errors(bool on) { g_defer = on; }

void host_sync(Device device) {
  DeviceSync& s = sync_of(device);
  ++s.syncs;
  const RangeError queued = backend_for(device).synchronize(device);
  if (queued.found) defer(s, queued);
  RangeError e;
  {
#if !defined(EMBER_NO_THREADS)
    Lock lock(g_pending_mutex);
#endif
    e = std::exchange(s.pending, RangeError{});
  }
  if (e.found) raise_error(describe(e));
}

}  // namespace detail

bool check_range(const DynTensor& x, const RangeCheck& check) {
  detail::check_defined(x, check.op);
  if (x.numel() == 0) return true;
  const RangeError e = detail::backend_of(x).check_range(x.raw(), check);
  if (!e.found) return true;
  if (!g_defer) raise_error(describe(e));
  defer(sync_of(x.device()), e);
  return false;
}

}  // namespace ember
