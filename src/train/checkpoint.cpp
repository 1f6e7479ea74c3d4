#include "ember/train/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

namespace ember::train {
namespace fs = std::filesystem;

std::string checkpoint_name(int64_t epochs_done, int64_t batch) {
  char buf[64];
  if (batch == 0) {
    std::snprintf(buf, sizeof buf, "epoch-%04lld.safetensors", static_cast<long long>(epochs_done));
  } else {
    std::snprintf(buf, sizeof buf, "epoch-%04lld-batch-%06lld.safetensors",
                  static_cast<long long>(epochs_done + 1), static_cast<long long>(batch));
  }
  return buf;
}

std::vector<CheckpointInfo> list_checkpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  static const std::regex name(R"(epoch-(\d+)(-batch-(\d+))?\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    std::smatch m;
    if (!entry.is_regular_file() || !std::regex_match(file, m, name)) continue;
    CheckpointInfo info;
    info.path = entry.path().string();
    const int64_t epoch = std::stoll(m[1].str());
    if (m[3].matched) {
      info.epochs_done = epoch - 1;
      info.batch = std::stoll(m[3].str());
    } else {
      info.epochs_done = epoch;
    }
    out.push_back(info);
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.epochs_done != b.epochs_done ? a.epochs_done < b.epochs_done : a.batch < b.batch;
  });
  return out;
}

std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir) {
  auto all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

void prune_checkpoints(const std::string& dir, int64_t keep_last, int64_t best_epoch) {
  const auto all = list_checkpoints(dir);
  std::vector<const CheckpointInfo*> ends;
  for (const auto& c : all) {
    if (c.batch == 0) ends.push_back(&c);
  }
  if (ends.empty()) return;
  const CheckpointInfo& newest_end = *ends.back();
  const size_t keep_from = keep_last == 0 || static_cast<size_t>(keep_last) >= ends.size()
                               ? 0
                               : ends.size() - static_cast<size_t>(keep_last);
  for (size_t i = 0; i < all.size(); ++i) {
    const CheckpointInfo& c = all[i];
    bool keep;
    if (c.batch != 0) {
      keep = c.epochs_done >= newest_end.epochs_done;  // a mid-epoch one newer than the last end
    } else {
      const auto pos = static_cast<size_t>(std::find(ends.begin(), ends.end(), &c) - ends.begin());
      keep = pos >= keep_from || c.epochs_done == best_epoch;
    }
    if (!keep) {
      std::error_code ec;
      fs::remove(c.path, ec);  // best effort: a file that cannot go stays
    }
  }
}

}  // namespace ember::train
