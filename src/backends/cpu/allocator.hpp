// The caching host allocator (see cpu.hpp). Size classes a quarter-octave apart above 1 KiB keep
// the waste under 19%; buffers of 2 MiB and more are huge-page aligned.
#pragma once

#include <cstddef>
#include <memory>

#include "ember/core/storage.hpp"

namespace ember::cpu {

std::shared_ptr<Storage> allocate_storage(size_t nbytes);

}  // namespace ember::cpu
