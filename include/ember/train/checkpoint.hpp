// Checkpoint files of the Learner: one safetensors file per checkpoint, written atomically, with
// the model ("model.<path>"), the optimizer's state ("optimizer.<path>.<buffer>") and, in the
// metadata, the schedule, the position (epoch, batch), the RNG state and the metrics history.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::train {

/// The metadata "format" value of Ember checkpoints.
inline constexpr const char* kCheckpointFormat = "ember.checkpoint.v1";

/// A checkpoint file found in a directory.
struct CheckpointInfo {
  std::string path;
  int64_t epochs_done = 0;  // completed epochs
  int64_t batch = 0;        // batches done in the next epoch (0: an end-of-epoch checkpoint)
};

/// "epoch-0003.safetensors" after 3 epochs; "epoch-0004-batch-000120.safetensors" when stopped
/// after 120 batches of the 4th (epochs_done 3, batch 120).
std::string checkpoint_name(int64_t epochs_done, int64_t batch);

/// The checkpoints in `dir`, oldest first (by epochs_done, then batch). Other files, and temp
/// files of writes that never finished, are ignored. So are names of checkpoints that cannot
/// have been written by a Learner (an epoch number past int64, "epoch-0000-batch-...", a FIFO
/// or a directory of a checkpoint's name): `ignored`, when given, gets one line on each, naming
/// it and why. An absent directory has none; one that is there but is not a directory or cannot
/// be read is an ember::Error naming it (a resume must not start over from a folder it cannot see).
std::vector<CheckpointInfo> list_checkpoints(const std::string& dir,
                                             std::vector<std::string>* ignored = nullptr);
std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir,
                                                std::vector<std::string>* ignored = nullptr);

/// Deletes the checkpoints of `dir` except the newest `keep_last` end-of-epoch ones (0: all),
/// the one of epoch `best_epoch` (-1: none) and any newer than the newest end-of-epoch one.
/// Mid-epoch checkpoints older than the newest end-of-epoch checkpoint are deleted.
void prune_checkpoints(const std::string& dir, int64_t keep_last, int64_t best_epoch);

}  // namespace ember::train
