// The item codecs of the SQLite datasets: plain byte layouts, built with or without SQLite.
#include "ember/data/sqlite.hpp"

#include <bit>

#include "ember/core/error.hpp"

namespace ember::data {

namespace {

// Little-endian encoding helpers for the codecs.
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t get_u64(std::span<const uint8_t> b, size_t& pos) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{b[pos + static_cast<size_t>(i)]} << (8 * i);
  pos += 8;
  return v;
}

}  // namespace

void Codec<ImageItem>::encode(const ImageItem& item, std::vector<uint8_t>& out) {
  out.push_back('I');
  out.push_back(1);  // version
  for (int64_t v : {item.channels, item.height, item.width, item.label})
    put_u64(out, static_cast<uint64_t>(v));
  out.insert(out.end(), item.pixels.begin(), item.pixels.end());
}

ImageItem Codec<ImageItem>::decode(std::span<const uint8_t> blob) {
  EMBER_CHECK(blob.size() >= 34 && blob[0] == 'I' && blob[1] == 1,
              "[Codec<ImageItem>] not an encoded ImageItem (", blob.size(), " bytes)");
  size_t pos = 2;
  ImageItem item;
  item.channels = static_cast<int64_t>(get_u64(blob, pos));
  item.height = static_cast<int64_t>(get_u64(blob, pos));
  item.width = static_cast<int64_t>(get_u64(blob, pos));
  item.label = static_cast<int64_t>(get_u64(blob, pos));
  const bool dims_ok = item.channels >= 0 && item.height >= 0 && item.width >= 0 &&
                       item.channels < (1 << 20) && item.height < (1 << 20) &&
                       item.width < (1 << 20);
  EMBER_CHECK(dims_ok && static_cast<uint64_t>(item.channels * item.height) *
                                 static_cast<uint64_t>(item.width) ==
                             blob.size() - pos,
              "[Codec<ImageItem>] ", item.channels, " x ", item.height, " x ", item.width,
              " image in ", blob.size() - pos, " pixel bytes");
  item.pixels.assign(blob.begin() + static_cast<std::ptrdiff_t>(pos), blob.end());
  return item;
}

void Codec<TabularItem>::encode(const TabularItem& item, std::vector<uint8_t>& out) {
  out.push_back('T');
  out.push_back(1);
  put_u64(out, std::bit_cast<uint64_t>(item.target));
  put_u64(out, item.features.size());
  for (float f : item.features) {
    const auto u = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
  }
}

TabularItem Codec<TabularItem>::decode(std::span<const uint8_t> blob) {
  EMBER_CHECK(blob.size() >= 18 && blob[0] == 'T' && blob[1] == 1,
              "[Codec<TabularItem>] not an encoded TabularItem (", blob.size(), " bytes)");
  size_t pos = 2;
  TabularItem item;
  item.target = std::bit_cast<double>(get_u64(blob, pos));
  const uint64_t n = get_u64(blob, pos);
  EMBER_CHECK(n <= (blob.size() - pos) / 4 && n * 4 == blob.size() - pos, "[Codec<TabularItem>] ",
              n, " features in ", blob.size() - pos, " bytes");
  item.features.resize(n);
  for (uint64_t k = 0; k < n; ++k, pos += 4) {
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t{blob[pos + static_cast<size_t>(i)]} << (8 * i);
    item.features[k] = std::bit_cast<float>(u);
  }
  return item;
}

}  // namespace ember::data
