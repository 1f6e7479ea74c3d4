// The Cuda backend's entry points (built when EMBER_WITH_CUDA is on and nvcc is found). No CUDA
// header here: programs that use Ember need none.
#pragma once

namespace ember {
class Backend;
}

namespace ember::cuda {

/// The number of CUDA devices: 0 without a GPU or a driver (the CI machines).
int device_count();

/// The Cuda backend; one object serves every device index.
Backend& backend();

}  // namespace ember::cuda
