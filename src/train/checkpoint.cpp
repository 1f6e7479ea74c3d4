#include "ember/train/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "ember/core/error.hpp"

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

namespace {

// A decimal number of the file name that fits in int64 (std::stoll would throw "stoll").
std::optional<int64_t> parse_count(const std::string& digits) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<CheckpointInfo> list_checkpoints(const std::string& dir,
                                             std::vector<std::string>* ignored) {
  std::vector<CheckpointInfo> out;
  // Absent (or under a path that is not a directory): no checkpoints. There but not a readable
  // directory: an error, so that a resume never starts over silently from a folder it cannot see.
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) return out;
  EMBER_CHECK(!ec, "[Learner] cannot read the checkpoint folder '", dir, "': ", ec.message());
  EMBER_CHECK(st.type() == fs::file_type::directory, "[Learner] the checkpoint folder '", dir,
              "' is not a directory");
  static const std::regex name(R"(epoch-(\d+)(-batch-(\d+))?\.safetensors)");
  fs::directory_iterator it(dir, ec), end;
  EMBER_CHECK(!ec, "[Learner] cannot read the checkpoint folder '", dir, "': ", ec.message());
  for (; it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(file, m, name)) continue;
    auto ignore = [&](const std::string& why) {
      if (!ignored) return;
      std::string line = "'";  // appended piece by piece: GCC 12 warns (-Wrestrict) on a + chain
      line += it->path().string();
      line += "': ";
      line += why;
      ignored->push_back(std::move(line));
    };
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) {
      ignore("not a regular file");
      continue;
    }
    // Names this Learner cannot have written: numbers past int64, a mid-epoch checkpoint of
    // "epoch 0" or after 0 batches.
    const auto epoch = parse_count(m[1].str());
    const auto batch = m[3].matched ? parse_count(m[3].str()) : std::optional<int64_t>(0);
    if (!epoch || !batch) {
      ignore("its epoch or batch number does not fit in 64 bits");
      continue;
    }
    if (m[3].matched && (*epoch == 0 || *batch == 0)) {
      ignore("a mid-epoch checkpoint needs an epoch and a batch of at least 1");
      continue;
    }
    CheckpointInfo info;
    info.path = it->path().string();
    info.epochs_done = m[3].matched ? *epoch - 1 : *epoch;
    info.batch = *batch;
    out.push_back(info);
  }
  EMBER_CHECK(!ec, "[Learner] cannot read the checkpoint folder '", dir, "': ", ec.message());
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.epochs_done != b.epochs_done ? a.epochs_done < b.epochs_done : a.batch < b.batch;
  });
  return out;
}

std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir,
                                                std::vector<std::string>* ignored) {
  auto all = list_checkpoints(dir, ignored);
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
