// Backends built as plugins (shared libraries loaded on first use): today the LibTorch backend,
// whose library takes about 0.8 s to load. Hosted builds only.
#pragma once

namespace ember {
class Backend;
}

namespace ember::detail {

/// The LibTorch backend, its plugin loaded on the first call; a clear error if it cannot be.
Backend& libtorch_backend();
/// The same, or null (no error) when the plugin cannot be loaded.
Backend* try_libtorch_backend();

}  // namespace ember::detail
