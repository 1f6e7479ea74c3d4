// IDX files: round trips (plain and gzip), a gz file written here with zlib, corrupt files, the
// MNIST-style dataset, and the real Fashion-MNIST files when dataset-fashion-mnist is installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "data_test_util.hpp"
#include "ember/core/error.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/idx.hpp"

using namespace ember;
using namespace ember::data;
using ember::data::testing::error_of;
using ember::data::testing::TempDir;

namespace {

std::vector<uint8_t> header(uint8_t type, std::vector<uint32_t> dims) {
  std::vector<uint8_t> out{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// A gzip file of `head` followed by `zero_mib` MiB of zeros, built without deflating them all:
// after a full flush deflate's state is reset, so every 1 MiB block of zeros compresses to the
// same bytes, which are repeated. 2 GiB of zeros make a 2 MB file.
void write_gzip_bomb(const std::string& path, const std::vector<uint8_t>& head, size_t zero_mib) {
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);  // raw deflate
  const auto deflate_all = [&z](std::vector<uint8_t> in, int flush) {
    std::vector<uint8_t> out(deflateBound(&z, in.size()) + 64);
    z.next_in = in.data();
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_NE(deflate(&z, flush), Z_STREAM_ERROR);
    EXPECT_EQ(z.avail_in, 0u);
    out.resize(out.size() - z.avail_out);
    return out;
  };
  const std::vector<uint8_t> mib(1 << 20, 0);
  const std::vector<uint8_t> first = deflate_all(head, Z_FULL_FLUSH);
  const std::vector<uint8_t> block = deflate_all(mib, Z_FULL_FLUSH);
  ASSERT_EQ(deflate_all(mib, Z_FULL_FLUSH), block);  // the repeated block is the same bytes
  const std::vector<uint8_t> last = deflate_all({}, Z_FINISH);
  deflateEnd(&z);
  // The gzip trailer: CRC-32 and size (mod 2^32) of everything, combined without the zeros.
  uLong crc = crc32(0, head.data(), static_cast<uInt>(head.size()));
  const uLong crc_mib = crc32(0, mib.data(), static_cast<uInt>(mib.size()));
  for (size_t i = 0; i < zero_mib; ++i) crc = crc32_combine(crc, crc_mib, 1 << 20);
  const uint64_t total = head.size() + (uint64_t{zero_mib} << 20);
  std::ofstream out(path, std::ios::binary);
  const uint8_t gz_header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  out.write(reinterpret_cast<const char*>(gz_header), 10);
  out.write(reinterpret_cast<const char*>(first.data()),
            static_cast<std::streamsize>(first.size()));
  for (size_t i = 0; i < zero_mib; ++i)
    out.write(reinterpret_cast<const char*>(block.data()),
              static_cast<std::streamsize>(block.size()));
  out.write(reinterpret_cast<const char*>(last.data()), static_cast<std::streamsize>(last.size()));
  for (uint64_t v : {uint64_t{crc}, total})
    for (int i = 0; i < 4; ++i) out.put(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

TEST(Idx, ReadsAGzipFileWrittenWithZlib) {
  TempDir dir;
  // [2, 3] big-endian i16: -2, -1, 0, 1, 256, 32767.
  std::vector<uint8_t> bytes = header(0x0B, {2, 3});
  for (int16_t v : {-2, -1, 0, 1, 256, 32767}) {
    bytes.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
    bytes.push_back(static_cast<uint8_t>(v & 0xFF));
  }
  write_gz(dir.file("a.idx.gz"), bytes);
  IdxArray a = read_idx(dir.file("a.idx.gz"));
  EXPECT_EQ(a.type, IdxType::i16);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3}));
  std::vector<int16_t> v(6);
  std::memcpy(v.data(), a.data.data(), 12);
  EXPECT_EQ(v, (std::vector<int16_t>{-2, -1, 0, 1, 256, 32767}));
}

TEST(Idx, RoundTripsEveryTypePlainAndGzip) {
  TempDir dir;
  const std::vector<std::pair<IdxType, size_t>> types = {{IdxType::u8, 1},  {IdxType::i8, 1},
                                                         {IdxType::i16, 2}, {IdxType::i32, 4},
                                                         {IdxType::f32, 4}, {IdxType::f64, 8}};
  for (const auto& [type, size] : types) {
    IdxArray a;
    a.type = type;
    a.dims = {3, 1, 5};
    a.data.resize(15 * size);
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 37 + 11);
    for (const char* name : {"x.idx", "x.idx.gz"}) {
      write_idx(dir.file(name), a);
      IdxArray b = read_idx(dir.file(name));
      EXPECT_EQ(b.type, a.type);
      EXPECT_EQ(b.dims, a.dims);
      EXPECT_EQ(b.data, a.data) << name << " type " << static_cast<int>(type);
    }
  }
  // The .gz file is really compressed.
  std::ifstream gz(dir.file("x.idx.gz"), std::ios::binary);
  EXPECT_EQ(gz.get(), 0x1f);
}

TEST(Idx, CorruptFilesGiveClearErrors) {
  const auto parse = [](std::vector<uint8_t> b) {
    return error_of([&] { parse_idx(b, "f.idx"); });
  };
  EXPECT_EQ(parse({0, 0, 8}), "[read_idx] f.idx: file too short for an IDX header (3 bytes)");
  EXPECT_EQ(parse({1, 0, 8, 1, 0, 0, 0, 0}),
            "[read_idx] f.idx: bad magic number: first two bytes must be zero, got 1, 0");
  EXPECT_EQ(parse({0, 0, 7, 1, 0, 0, 0, 0}),
            "[read_idx] f.idx: unknown IDX type code 7 (expected 8, 9, 11, 12, 13 or 14)");
  EXPECT_EQ(parse({0, 0, 8, 0}), "[read_idx] f.idx: rank 0 is not supported");
  EXPECT_EQ(parse({0, 0, 8, 2, 0, 0, 0, 1}),
            "[read_idx] f.idx: truncated header: rank 2 needs 12 bytes, file has 8");
  auto truncated = header(8, {2, 3});
  truncated.resize(truncated.size() + 5);
  EXPECT_EQ(parse(truncated), "[read_idx] f.idx: truncated: dims need 6 data bytes, file has 5");
  auto trailing = header(8, {2});
  trailing.resize(trailing.size() + 3);
  EXPECT_EQ(parse(trailing), "[read_idx] f.idx: 1 bytes after the data (dims need 2)");
  EXPECT_EQ(parse(header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF})),
            "[read_idx] f.idx: dims overflow: dim 1 = 4294967295 makes more than 2^62 bytes");
  // Zero-sized dims are fine.
  EXPECT_EQ(parse_idx(header(8, {0, 28, 28}), "z").numel(), 0);

  TempDir dir;
  EXPECT_EQ(error_of([&] { read_idx(dir.file("missing.gz")); }).rfind("[read_idx] ", 0), 0u);
  // A gzip stream cut short.
  IdxArray a;
  a.dims = {4096};
  a.data.resize(4096);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * i);
  write_idx(dir.file("t.gz"), a);
  const auto size = std::filesystem::file_size(dir.file("t.gz"));
  std::filesystem::resize_file(dir.file("t.gz"), size / 2);
  const std::string e = error_of([&] { read_idx(dir.file("t.gz")); });
  EXPECT_EQ(e.rfind("[read_idx] " + dir.file("t.gz") + ": bad gzip data", 0), 0u) << e;
}

// The gzip bomb: a 2 MB file whose header claims 60000 x 28 x 28 (47 MB) but whose stream
// holds 2 GiB of zeros. Reading used to inflate all of it (2 GiB allocated) before refusing it;
// now it stops one byte after the 47 MB the dims need (0.1 s here).
TEST(Idx, GzipBombIsNotInflatedPastTheDims) {
  TempDir dir;
  const std::string path = dir.file("bomb-idx3-ubyte.gz");
  write_gzip_bomb(path, header(8, {60000, 28, 28}), 2048);
  EXPECT_LT(std::filesystem::file_size(path), 3u << 20);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of([&] { read_idx(path); }),
            "[read_idx] " + path +
                ": more data after the 47040000 bytes the dims [60000, 28, 28] need (refused; the "
                "rest was not read)");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("gzip bomb (2 GiB of zeros behind a 47 MB header) refused in %.3f s\n", seconds);
  // The same stream with the header's full size is read (it holds exactly what the dims say).
  write_gzip_bomb(path, header(8, {64, 1024, 1024}), 64);
  const IdxArray a = read_idx(path);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{64, 1024, 1024}));
  EXPECT_EQ(a.data.size(), 64u << 20);
}

// Dims are checked before any data is read: over read_idx's limit, or overflowing 2^62 bytes.
// A header claiming 4 GB over 10 bytes of data allocates no more than the data holds.
TEST(Idx, AbsurdDimsAreRefusedFromTheHeader) {
  TempDir dir;
  std::vector<uint8_t> huge = header(8, {0x10000, 0x10000});  // 4 GiB of u8
  huge.resize(huge.size() + 10, 7);
  write_gz(dir.file("h.gz"), huge);
  EXPECT_EQ(error_of([&] { read_idx(dir.file("h.gz"), 1 << 30); }),
            "[read_idx] " + dir.file("h.gz") +
                ": dims [65536, 65536] need 4294967296 data bytes, over the limit of 1073741824 "
                "(read_idx's max_bytes)");
  EXPECT_EQ(error_of([&] { read_idx(dir.file("h.gz")); }),
            "[read_idx] " + dir.file("h.gz") +
                ": truncated: dims need 4294967296 data bytes, file has 10");
  write_gz(dir.file("o.gz"), header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
  EXPECT_EQ(error_of([&] { read_idx(dir.file("o.gz")); }),
            "[read_idx] " + dir.file("o.gz") +
                ": dims overflow: dim 1 = 4294967295 makes more than 2^62 bytes");
  // Plain files are checked against their size before reading.
  std::ofstream(dir.file("p.idx"), std::ios::binary)
      .write(reinterpret_cast<const char*>(huge.data()), static_cast<std::streamsize>(huge.size()));
  EXPECT_EQ(error_of([&] { read_idx(dir.file("p.idx")); }),
            "[read_idx] " + dir.file("p.idx") +
                ": truncated: dims need 4294967296 data bytes, file has 10");
  // Cut inside the header.
  write_gz(dir.file("c.gz"), {0, 0, 8, 3, 0, 0});
  EXPECT_EQ(
      error_of([&] { read_idx(dir.file("c.gz")); }),
      "[read_idx] " + dir.file("c.gz") + ": truncated header: rank 3 needs 16 bytes, file has 6");
}

TEST(Idx, WriteChecksItsInput) {
  TempDir dir;
  IdxArray a;
  a.dims = {2, 2};
  a.data = {1, 2, 3};
  EXPECT_THROW(write_idx(dir.file("a.idx"), a), Error);
  a.dims = {};
  EXPECT_THROW(write_idx(dir.file("a.idx"), a), Error);
}

TEST(Mnist, OpensGeneratedFiles) {
  TempDir dir;
  for (const char* split : {"train", "t10k"}) {
    const bool train = std::string(split) == "train";
    const uint32_t n = train ? 5 : 3;
    IdxArray images, labels;
    images.dims = {n, 28, 28};
    images.data.resize(n * 784);
    for (uint32_t i = 0; i < n; ++i) images.data[i * 784 + 100] = static_cast<uint8_t>(i + 1);
    labels.dims = {n};
    for (uint32_t i = 0; i < n; ++i) labels.data.push_back(static_cast<uint8_t>(9 - i));
    // The train split compressed, the test split plain: both are found.
    const std::string ext = train ? ".gz" : "";
    write_idx(dir.file(std::string(split) + "-images-idx3-ubyte" + ext), images);
    write_idx(dir.file(std::string(split) + "-labels-idx1-ubyte" + ext), labels);
  }
  auto train = Mnist::train(dir.path().string());
  auto test = Mnist::test(dir.path().string());
  ASSERT_EQ(train->size(), 5u);
  ASSERT_EQ(test->size(), 3u);
  const ImageItem im = train->at(3);
  EXPECT_EQ(im.channels, 1);
  EXPECT_EQ(im.height, 28);
  EXPECT_EQ(im.width, 28);
  EXPECT_EQ(im.label, 6);
  EXPECT_EQ(im.at(0, 3, 16), 4);  // pixel 100 = row 3, column 16
  EXPECT_EQ(train->get(5), std::nullopt);

  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte"));
  EXPECT_EQ(error_of([&] { Mnist::test(dir.path().string()); }),
            "[Mnist] " + dir.path().string() +
                ": neither t10k-labels-idx1-ubyte.gz nor t10k-labels-idx1-ubyte found");
  // Counts that disagree.
  IdxArray labels;
  labels.dims = {2};
  labels.data = {1, 2};
  write_idx(dir.file("t10k-labels-idx1-ubyte"), labels);
  EXPECT_NE(error_of([&] { Mnist::test(dir.path().string()); }).find("3 images but 2 labels"),
            std::string::npos);
}

TEST(FashionMnist, RealFiles) {
  const std::string dir = FashionMnist::default_dir();
  if (!std::filesystem::exists(std::filesystem::path(dir) / "train-labels-idx1-ubyte.gz") &&
      !std::filesystem::exists(std::filesystem::path(dir) / "train-labels-idx1-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST not in " << dir << " (apt-get install dataset-fashion-mnist)";
  auto train = FashionMnist::train();
  auto test = FashionMnist::test();
  ASSERT_EQ(train->size(), 60000u);
  ASSERT_EQ(test->size(), 10000u);
  std::vector<int64_t> first_train, first_test;
  for (size_t i = 0; i < 10; ++i) {
    first_train.push_back(train->at(i).label);
    first_test.push_back(test->at(i).label);
  }
  EXPECT_EQ(first_train, (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(first_test, (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  const ImageItem im = train->at(0);
  int64_t sum = 0;
  for (uint8_t p : im.pixels) sum += p;
  EXPECT_EQ(sum, 76247);
  EXPECT_EQ(FashionMnist::classes()[9], "Ankle boot");

  // Batched for the CNN: [64, 1, 28, 28] in [0, 1] and i64 labels.
  DataLoader loader(test, std::make_shared<ImageBatcher>(), DataLoaderConfig().batch_size(64));
  EXPECT_EQ(loader.num_batches(), 157u);
  for (ImageBatch& b : loader.epoch(0)) {
    EXPECT_EQ(b.images.dims(), (std::array<int64_t, 4>{64, 1, 28, 28}));
    EXPECT_LE(b.images.max().item<float>(), 1.0f);
    EXPECT_GE(b.images.min().item<float>(), 0.0f);
    EXPECT_EQ(b.labels.to_vector<int64_t>()[0], 9);
    break;
  }
}
