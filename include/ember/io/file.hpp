// Small file helpers of the io layer for other layers (checkpoints, metrics files, plots).
#pragma once

#include <string>
#include <string_view>

namespace ember::io {

/// Writes `bytes` to `path` atomically (temp file beside it, fsync, rename, fsync of the
/// directory), as safetensors files are written: a reader or a crash sees the old file or the
/// complete new one, never a partial write. `what` names the caller in errors ("[Learner]").
void write_file_atomic(const std::string& path, std::string_view bytes, const char* what = "[io]");

}  // namespace ember::io
