// DeviceGraph (include/ember/tensor/device_graph.hpp): the backend records (Backend::begin_capture
// / end_capture) or, where it cannot, replay() calls the function again.
#include "ember/tensor/device_graph.hpp"

#include <utility>

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "internal.hpp"

namespace ember {

struct DeviceGraph::Impl {
  std::function<void()> fn;
  std::unique_ptr<Backend::CapturedWork> work;  // null where the backend cannot record
};

DeviceGraph::DeviceGraph(Device device) : device_(device), impl_(std::make_unique<Impl>()) {}
DeviceGraph::~DeviceGraph() = default;
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;

void DeviceGraph::capture(std::function<void()> fn) {
  EMBER_CHECK(fn != nullptr, "[DeviceGraph::capture] the function is empty");
  impl_->work.reset();
  impl_->fn = nullptr;
  Backend& be = detail::backend_for(device_);
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
