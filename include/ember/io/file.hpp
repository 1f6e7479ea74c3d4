// Small file helpers of the io layer for other layers (checkpoints, metrics files, plots).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::io {

/// Writes `bytes` to `path` atomically (temp file beside it, fsync, rename, fsync of the
/// directory), as safetensors files are written: a reader or a crash sees the old file or the
/// complete new one, never a partial write. `what` names the caller in errors ("[Learner]").
void write_file_atomic(const std::string& path, std::string_view bytes, const char* what = "[io]");

/// What `path` is when it exists but is not a regular file ("a FIFO", "a directory", "a character
/// device", ...); "" for a regular file or a missing path. Readers refuse such paths before
/// opening them: a FIFO blocks open() until a writer comes, a device such as /dev/zero never ends.
std::string non_regular_kind(const std::string& path);

/// Deletes what write_file_atomic and save_safetensors leave in `dir` when their process dies
/// mid-write: temp files ".<name>.tmp.<pid>.<stamp>.<n>" of the file names that `is_target`
/// accepts, whose writer process is gone. Other files, and writes in progress, are left alone.
/// Returns the paths removed (an absent directory has none).
std::vector<std::string> remove_stale_temp_files(
    const std::string& dir, const std::function<bool(const std::string& name)>& is_target);

}  // namespace ember::io
