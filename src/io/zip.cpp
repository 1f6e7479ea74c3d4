#include "zip.hpp"

#include <algorithm>
#include <unordered_set>

#include "ember/core/error.hpp"

namespace ember::io::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30, kLocator64Size = 20;
constexpr size_t kEnd64Size = 56;
constexpr uint16_t kZip64Extra = 0x0001;

// Little-endian reads at a position the caller has checked.
uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

struct Reader {
  const unsigned char* data;
  size_t size;
  const char* what;
  const std::string& label;

  // [at, at + n) lies inside the buffer; `part` names the structure in the error.
  void need(uint64_t at, uint64_t n, const char* part) const {
    EMBER_CHECK(at <= size && n <= size - at, what, " ", label, ": the zip ", part, " at byte ", at,
                " (", n, " bytes) runs past the end of the file (", size, " bytes)");
  }
  uint64_t u(uint64_t at, int bytes) const { return le(data + at, bytes); }
};

// The ZIP64 extended-information field of a central entry: replaces each 32-bit field that is
// 0xFFFFFFFF, in the order size, compressed size, local header offset.
void apply_zip64(const Reader& r, uint64_t extra, uint64_t extra_len, const std::string& name,
                 uint64_t& size, uint64_t& csize, uint64_t& offset) {
  uint64_t at = extra;
  const uint64_t end = extra + extra_len;
  while (at + 4 <= end) {
    const auto id = static_cast<uint16_t>(r.u(at, 2));
    const uint64_t len = r.u(at + 2, 2);
    EMBER_CHECK(at + 4 + len <= end, r.what, " ", r.label, ": zip entry '", name,
                "' has an extra field longer than its extra area");
    if (id == kZip64Extra) {
      uint64_t p = at + 4;
      for (uint64_t* field : {&size, &csize, &offset}) {
        if (*field != 0xFFFFFFFFu) continue;
        EMBER_CHECK(p + 8 <= at + 4 + len, r.what, " ", r.label, ": zip entry '", name,
                    "' has a ZIP64 field too short for its 64-bit sizes");
        *field = r.u(p, 8);
        p += 8;
      }
      return;
    }
    at += 4 + len;
  }
}

}  // namespace

bool looks_like_zip(const unsigned char* data, size_t size) {
  return size >= 4 && (le(data, 4) == kLocalSig || le(data, 4) == kEndSig);
}

std::vector<ZipEntry> read_zip(const unsigned char* data, size_t size, const char* what,
                               const std::string& label) {
  const Reader r{data, size, what, label};
  EMBER_CHECK(size >= kEndSize, what, " ", label, ": ", size,
              " bytes is too short for a zip archive (no end-of-central-directory record)");
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
  uint64_t end = size - kEndSize;
  const uint64_t lowest = size - kEndSize > 65535 ? size - kEndSize - 65535 : 0;
  while (r.u(end, 4) != kEndSig || r.u(end + 20, 2) != size - kEndSize - end) {
    EMBER_CHECK(end > lowest, what, " ", label,
                ": not a zip archive (no end-of-central-directory record); a file truncated "
                "while being written ends this way too");
    --end;
  }
  EMBER_CHECK(r.u(end + 4, 2) == 0 && r.u(end + 6, 2) == 0, what, " ", label,
              ": a zip archive split over several disks is not supported");
  uint64_t count = r.u(end + 10, 2), cd_size = r.u(end + 12, 4), cd_offset = r.u(end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    EMBER_CHECK(end >= kLocator64Size && r.u(end - kLocator64Size, 4) == kLocator64Sig, what, " ",
                label, ": the zip end record asks for ZIP64 but there is no ZIP64 locator");
    const uint64_t end64 = r.u(end - kLocator64Size + 8, 8);
    r.need(end64, kEnd64Size, "ZIP64 end record");
    EMBER_CHECK(r.u(end64, 4) == kEnd64Sig, what, " ", label, ": the ZIP64 locator points at byte ",
                end64, ", which holds no ZIP64 end record");
    count = r.u(end64 + 32, 8);
    cd_size = r.u(end64 + 40, 8);
    cd_offset = r.u(end64 + 48, 8);
  }
  r.need(cd_offset, cd_size, "central directory");
  EMBER_CHECK(count <= cd_size / kCentralSize, what, " ", label, ": the zip end record counts ",
              count, " entries, more than its central directory of ", cd_size, " bytes can hold");

  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  std::unordered_set<std::string> seen;
  uint64_t at = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    r.need(at, kCentralSize, "central directory entry");
    EMBER_CHECK(r.u(at, 4) == kCentralSig, what, " ", label, ": zip central directory entry ", i,
                " at byte ", at, " has a bad signature");
    const uint64_t flags = r.u(at + 8, 2), method = r.u(at + 10, 2);
    uint64_t csize = r.u(at + 20, 4), usize = r.u(at + 24, 4), offset = r.u(at + 42, 4);
    const uint64_t name_len = r.u(at + 28, 2), extra_len = r.u(at + 30, 2);
    const uint64_t comment_len = r.u(at + 32, 2);
    r.need(at + kCentralSize, name_len + extra_len + comment_len, "central directory entry");
    std::string name(reinterpret_cast<const char*>(data + at + kCentralSize), name_len);
    apply_zip64(r, at + kCentralSize + name_len, extra_len, name, usize, csize, offset);
    EMBER_CHECK((flags & 1) == 0, what, " ", label, ": zip entry '", name, "' is encrypted");
    EMBER_CHECK(method != 0 || csize == usize, what, " ", label, ": zip entry '", name,
                "' is stored but its sizes differ (", csize, " and ", usize, ")");
    r.need(offset, kLocalSize, "local header");
    EMBER_CHECK(r.u(offset, 4) == kLocalSig, what, " ", label, ": zip entry '", name,
                "' points at byte ", offset, ", which holds no local header");
    const uint64_t data_at = offset + kLocalSize + r.u(offset + 26, 2) + r.u(offset + 28, 2);
    r.need(data_at, csize, ("data of entry '" + name + "'").c_str());
    EMBER_CHECK(seen.insert(name).second, what, " ", label, ": zip entry '", name,
                "' appears twice");
    entries.push_back({std::move(name), data_at, csize, static_cast<uint16_t>(method)});
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  return entries;
}

}  // namespace ember::io::detail
