// The LibTorch backend: Ember's ops run by ATen (PyTorch's C++ kernels) on the host. It adapts
// each Backend entry to ATen calls on Ember's own buffers (no copies per op), which makes it the
// reference second backend: every test table runs on it, and it cross-checks the Cpu kernels.
// Built when libtorch-dev is found (CMake option EMBER_WITH_LIBTORCH); its device is
// Device::libtorch(). This header does not include LibTorch's.
#pragma once

namespace ember {
class Backend;
}

namespace ember::libtorch {

/// The LibTorch backend (only in builds that have it; Device::libtorch() fails clearly otherwise).
Backend& backend();

}  // namespace ember::libtorch
