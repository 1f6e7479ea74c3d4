// DeviceGraph (include/ember/tensor/device_graph.hpp): the backend records (Backend::begin_capture
// / end_capture) or, where it cannot, replay() calls the function again.
#include "ember/tensor/device_graph.hpp"

#include <utility>
#if !defined(EMBER_NO_THREADS)
#include <mutex>
#include <shared_mutex>
#endif

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "internal.hpp"

namespace ember {

struct DeviceGraph::Impl {
  std::function<void()> fn;
  std::unique_ptr<Backend::CapturedWork> work;  // null where the backend cannot record
};

namespace {
#if !defined(EMBER_NO_THREADS)
// Shared by BackgroundWork scopes, exclusive during a capture. One gate for every device:
// captures are rare and short, and a background batch waits at most one capture.
std::shared_mutex g_background_gate;
thread_local bool t_capturing = false;  // this thread holds the gate: a capture is under way
thread_local int t_background = 0;      // BackgroundWork scopes open on this thread
#else
bool t_capturing = false;
int t_background = 0;
#endif

// Marks the calling thread as capturing for the scope's life (exceptions included).
struct CapturingScope {
  CapturingScope() { t_capturing = true; }
  ~CapturingScope() { t_capturing = false; }
  CapturingScope(const CapturingScope&) = delete;
  CapturingScope& operator=(const CapturingScope&) = delete;
};
}  // namespace

BackgroundWork::BackgroundWork() {
  EMBER_CHECK(!t_capturing, "[BackgroundWork] opened inside a DeviceGraph capture on the same ",
              "thread: it would wait for that capture to end");
#if !defined(EMBER_NO_THREADS)
  g_background_gate.lock_shared();
#endif
  ++t_background;
}
BackgroundWork::~BackgroundWork() {
  --t_background;
#if !defined(EMBER_NO_THREADS)
  g_background_gate.unlock_shared();
#endif
}

bool capture_on_this_thread() { return t_capturing; }

DeviceGraph::DeviceGraph(Device device) : device_(device), impl_(std::make_unique<Impl>()) {}
DeviceGraph::~DeviceGraph() = default;
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;

void DeviceGraph::capture(std::function<void()> fn) {
  EMBER_CHECK(fn != nullptr, "[DeviceGraph::capture] the function is empty");
  impl_->work.reset();
  impl_->fn = nullptr;
  EMBER_CHECK(!t_capturing, "[DeviceGraph] a capture is already under way on this thread: ",
              "captures do not nest");
  EMBER_CHECK(t_background == 0, "[DeviceGraph] capture inside a BackgroundWork scope on the ",
              "same thread: it would wait for that scope to end");
  Backend& be = detail::backend_for(device_);
#if !defined(EMBER_NO_THREADS)
  // Held on every backend, recording or not, so that a program waits alike on each.
  std::unique_lock<std::shared_mutex> background_held_off(g_background_gate);
#endif
  const CapturingScope capturing;
  if (!be.can_capture()) {
    fn();
    impl_->fn = std::move(fn);
    return;
  }
  be.begin_capture(device_);
#if EMBER_HAS_EXCEPTIONS
  try {
    fn();
  } catch (...) {
    (void)be.end_capture(device_, false);
    throw;
  }
#else
  fn();
#endif
  impl_->work = be.end_capture(device_, true);
  impl_->fn = std::move(fn);
}

void DeviceGraph::replay() {
  EMBER_CHECK(captured(), "[DeviceGraph::replay] nothing captured on ", device_,
              ": call capture() first");
  if (impl_->work) {
    impl_->work->replay();
  } else {
    impl_->fn();
  }
}

bool DeviceGraph::captured() const { return impl_ && impl_->fn != nullptr; }
bool DeviceGraph::recorded() const { return impl_ && impl_->work != nullptr; }

bool capture_under_way(Device device) { return detail::backend_for(device).capturing(device); }

void copy_into(const DynTensor& dst, const DynTensor& src) {
  constexpr const char* op = "copy_into";
  EMBER_CHECK(dst.defined() && src.defined(), "[", op, "] both tensors must be defined");
  EMBER_CHECK(dst.shape() == src.shape(), "[", op, "] shapes differ: dst ", dst.shape(), ", src ",
              src.shape());
  EMBER_CHECK(dst.device() == src.device(), "[", op, "] devices differ: dst on ", dst.device(),
              ", src on ", src.device());
  EMBER_CHECK(!dst.requires_grad(), "[", op, "] dst requires a gradient: an in-place write ",
              "would change what its graph saw");
  detail::backend_of(dst).copy(src.raw(), dst.raw());
}

}  // namespace ember
