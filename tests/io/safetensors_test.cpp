// safetensors: round trips of every dtype and shape, zero-copy loads, atomic writes, the file
// written by Python's safetensors (tests/io/fixtures), and the writer's own checks.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "file.hpp"
#include "io_test_util.hpp"

namespace ember::io::test {
namespace {

constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i64,
                                DType::i32, DType::i8,  DType::u8,  DType::boolean};

// Random values (never zeros) of any dtype.
DynTensor sample(const Shape& shape, DType dtype, uint64_t seed) {
  Generator gen(seed);
  if (is_floating(dtype)) return randn(shape, dtype, Device::cpu(), &gen);
  if (dtype == DType::boolean) return bernoulli(shape, 0.5, dtype, Device::cpu(), &gen);
  if (dtype == DType::u8) return randint(0, 256, shape, dtype, Device::cpu(), &gen);
  return randint(-100, 100, shape, dtype, Device::cpu(), &gen);
}

void expect_same(const DynTensor& a, const DynTensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.to_data().bytes, b.to_data().bytes) << "values differ for " << dtype_name(a.dtype());
}

// Whether p lies in a mapping of `path` (from /proc/self/maps): proof that no copy was made.
bool mapped_from_file(const void* p, const std::string& path) {
  const std::string target = fs::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, name;
    in >> range >> perms >> offset >> dev >> inode >> name;
    if (name != target) continue;
    const auto dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    const auto a = reinterpret_cast<uintptr_t>(p);
    if (a >= lo && a < hi) return true;
  }
  return false;
}

bool file_is_mapped(const std::string& path) {
  const std::string target = fs::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= target.size() &&
        line.compare(line.size() - target.size(), target.size(), target) == 0) {
      return true;
    }
  }
  return false;
}

TEST(Safetensors, RoundTripEveryDType) {
  TempDir dir;
  std::vector<std::pair<std::string, DynTensor>> tensors;
  uint64_t seed = 1;
  for (DType t : kAllDTypes) {
    tensors.emplace_back(std::string(dtype_name(t)), sample(Shape{3, 5}, t, seed++));
  }
  const std::string path = dir.file("all.safetensors");
  save_safetensors(tensors, path);
  const SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EXPECT_EQ(f.names()[i], name);  // the writer's order, whatever the data layout
    EXPECT_EQ(f.dtype(name), t.dtype());
    EXPECT_EQ(f.shape(name), t.shape());
    EXPECT_TRUE(f.zero_copy(name)) << name;  // largest dtype first keeps each one aligned
    expect_same(f.tensor(name), t);
  }
}

TEST(Safetensors, RoundTripShapes) {
  TempDir dir;
  const std::vector<Shape> shapes = {
      Shape{}, Shape{0}, Shape{1}, Shape{7}, Shape{2, 0, 3}, Shape{3, 4, 5}, Shape{1, 1, 1, 1, 2}};
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (DType t : {DType::f32, DType::bf16, DType::i64, DType::boolean}) {
      tensors.emplace_back(
          std::string("s").append(std::to_string(i)).append(".").append(dtype_name(t)),
          sample(shapes[i], t, i + 10));
    }
  }
  const std::string path = dir.file("shapes.safetensors");
  save_safetensors(tensors, path);
  const SafetensorsFile f = load_safetensors(path);
  for (const auto& [name, t] : tensors) {
    EXPECT_EQ(f.shape(name), t.shape()) << name;
    expect_same(f.tensor(name), t);
  }
  // A 0-d tensor's shape is written as [], as torch does.
  EXPECT_EQ(f.shape("s0.float32").rank(), 0);
}

TEST(Safetensors, EmptyFileHasNoTensors) {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  save_safetensors({}, path);
  const SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.data_start() % 8, 0u);
}

TEST(Safetensors, NonContiguousInputsAreWrittenRowMajor) {
  TempDir dir;
  const DynTensor base = sample(Shape{4, 6}, DType::f32, 3);
  const DynTensor t = transpose(base, 0, 1);
  const DynTensor s = slice(base, 1, 1, 6, 2);
  const DynTensor e = expand(sample(Shape{1, 3}, DType::i32, 4), Shape{5, 3});
  ASSERT_FALSE(t.is_contiguous());
  ASSERT_FALSE(s.is_contiguous());
  const std::string path = dir.file("views.safetensors");
  save_safetensors({{"t", t}, {"s", s}, {"e", e}}, path);
  const SafetensorsFile f = load_safetensors(path);
  expect_same(f.tensor("t"), contiguous(t));
  expect_same(f.tensor("s"), contiguous(s));
  expect_same(f.tensor("e"), contiguous(e));
  EXPECT_EQ(f.tensor("t").to_vector<float>(), t.to_vector<float>());
}

TEST(Safetensors, HeaderIsPaddedWithSpacesTo8Bytes) {
  TempDir dir;
  const std::string path = dir.file("pad.safetensors");
  save_safetensors({{"a", sample(Shape{3}, DType::u8, 1)}}, path);
  const auto bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[static_cast<size_t>(i)]) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
  EXPECT_EQ(header.rfind("{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", 0), 0u)
      << header;
  EXPECT_EQ(header.find_first_not_of(' ', header.find_last_of('}') + 1), std::string::npos);
  EXPECT_EQ(bytes.size(), 8 + n + 3);
}

TEST(Safetensors, Metadata) {
  TempDir dir;
  const std::string path = dir.file("meta.safetensors");
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "h\u00e9 \"q\""}};
  save_safetensors({{"w", sample(Shape{2}, DType::f32, 1)}}, path, meta);
  const SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.metadata(), meta);
  EXPECT_EQ(f.names(), std::vector<std::string>{"w"});
}

TEST(Safetensors, ZeroCopyLoadSharesTheMapping) {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  const DynTensor w = sample(Shape{256, 256}, DType::f32, 7);
  save_safetensors({{"b", sample(Shape{3}, DType::i8, 8)}, {"w", w}}, path);

  DynTensor loaded;
  {
    const SafetensorsFile f = load_safetensors(path);
    const auto before = cpu::allocator_stats();
    loaded = f.tensor("w");
    const auto after = cpu::allocator_stats();
    EXPECT_EQ(after.allocations, before.allocations) << "tensor() allocated: it copied";
    EXPECT_TRUE(mapped_from_file(loaded.raw().data(), path));
    expect_same(loaded, w);
  }
  // The file object is gone; the tensor keeps the mapping alive, and frees it when dropped.
  EXPECT_TRUE(file_is_mapped(path));
  expect_same(loaded, w);
  EXPECT_EQ(exp(loaded).to_vector<float>(), exp(w).to_vector<float>());  // usable by ops
  loaded = DynTensor();
  EXPECT_FALSE(file_is_mapped(path));
}

TEST(Safetensors, MisalignedDataIsCopied) {
  // A 9-byte header (not padded) puts the data area at byte 17: f32 data is misaligned.
  const std::vector<float> v = {1.5f, -2.0f, 3.25f};
  std::string data(12, '\0');
  std::memcpy(data.data(), v.data(), 12);
  std::string header = R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
  header.append(9 - header.size() % 8, ' ');  // length = 9 mod 8
  ASSERT_EQ((8 + header.size()) % 4, 1u);
  TempDir dir;
  const std::string path = dir.file("odd.safetensors");
  write_file(path, st_bytes(header, data));
  const SafetensorsFile f = load_safetensors(path);
  EXPECT_FALSE(f.zero_copy("x"));
  const auto before = cpu::allocator_stats();
  const DynTensor x = f.tensor("x");
  EXPECT_GT(cpu::allocator_stats().allocations, before.allocations);
  EXPECT_FALSE(mapped_from_file(x.raw().data(), path));
  EXPECT_EQ(x.to_vector<float>(), v);
}

TEST(Safetensors, DTypeConversionOnLoad) {
  TempDir dir;
  const std::string path = dir.file("conv.safetensors");
  const DynTensor h = sample(Shape{4, 3}, DType::f16, 5);
  const DynTensor i = sample(Shape{5}, DType::i32, 6);
  save_safetensors({{"h", h}, {"i", i}}, path);
  const SafetensorsFile f = load_safetensors(path);
  const DynTensor h32 = f.tensor("h", Device::cpu(), DType::f32);
  EXPECT_EQ(h32.dtype(), DType::f32);
  EXPECT_EQ(h32.to_vector<float>(), h.to_vector<float>());  // f16 -> f32 is exact
  const DynTensor i64 = f.tensor("i", Device::cpu(), DType::i64);
  EXPECT_EQ(i64.dtype(), DType::i64);
  EXPECT_EQ(i64.to_vector<int64_t>(), i.to_vector<int64_t>());
  const DynTensor same = f.tensor("h", Device::cpu(), DType::f16);
  EXPECT_TRUE(mapped_from_file(same.raw().data(), path));  // no conversion, no copy
}

TEST(Safetensors, InMemoryParse) {
  const std::vector<int64_t> v = {1, -2, 3};
  std::string data(24, '\0');
  std::memcpy(data.data(), v.data(), 24);
  const SafetensorsFile f = parse_safetensors(
      st_bytes(R"({"a":{"dtype":"I64","shape":[3],"data_offsets":[0,24]}})", data), "buffer");
  EXPECT_EQ(f.path(), "buffer");
  EXPECT_EQ(f.tensor("a").to_vector<int64_t>(), v);
}

TEST(Safetensors, MissingNameIsAnError) {
  TempDir dir;
  const std::string path = dir.file("one.safetensors");
  save_safetensors({{"a", sample(Shape{2}, DType::f32, 1)}}, path);
  const SafetensorsFile f = load_safetensors(path);
  EXPECT_FALSE(f.contains("b"));
  expect_error([&] { (void)f.tensor("b"); }, {path, "no tensor named \"b\""});
}

TEST(Safetensors, MissingFileIsAnError) {
  TempDir dir;
  expect_error([&] { (void)load_safetensors(dir.file("nope.safetensors")); },
               {"nope.safetensors", "cannot open", "No such file"});
  expect_error([&] { (void)load_safetensors(dir.path().string()); }, {"directory"});
}

// Python's safetensors wrote tests/io/fixtures/python_written.safetensors
// (make_safetensors_fixture.py); its values follow formulas checked here.
TEST(Safetensors, ReadsTheFileWrittenByPython) {
  const SafetensorsFile f = load_safetensors(EMBER_IO_FIXTURES "/python_written.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("made_by"), "make_safetensors_fixture.py");
  std::vector<float> ramp(12);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i) * 0.25f - 1.0f;
  for (const char* name : {"f32", "f64", "f16", "bf16"}) {
    EXPECT_EQ(f.shape(name), (Shape{3, 4})) << name;
    EXPECT_TRUE(f.zero_copy(name)) << name;
    EXPECT_EQ(f.tensor(name, Device::cpu(), DType::f32).to_vector<float>(), ramp) << name;
  }
  EXPECT_EQ(f.dtype("f32"), DType::f32);
  EXPECT_EQ(f.dtype("f64"), DType::f64);
  EXPECT_EQ(f.dtype("f16"), DType::f16);
  EXPECT_EQ(f.dtype("bf16"), DType::bf16);
  EXPECT_EQ(f.tensor("i64").to_vector<int64_t>(),
            (std::vector<int64_t>{-3, -2, -1, 0, 1, 2, 3000000000000}));
  EXPECT_EQ(f.tensor("i32").to_vector<int32_t>(), (std::vector<int32_t>{-7, 0, 7, 2147483647}));
  EXPECT_EQ(f.tensor("i8").to_vector<int8_t>(), (std::vector<int8_t>{-128, -1, 0, 1, 127}));
  EXPECT_EQ(f.tensor("u8").to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 128, 255}));
  EXPECT_EQ(f.tensor("bool").to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(f.shape("scalar").rank(), 0);
  EXPECT_EQ(f.tensor("scalar").item<float>(), 2.5f);
  EXPECT_EQ(f.shape("empty"), (Shape{2, 0}));
  EXPECT_EQ(f.tensor("empty").numel(), 0);
  EXPECT_EQ(f.shape("nested.layer.0.weight"), (Shape{2, 2, 2}));
  EXPECT_EQ(f.tensor("nested.layer.0.weight").to_vector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// -- the writer's checks ------------------------------------------------------------------------

TEST(SafetensorsSave, RejectsBadNames) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  const DynTensor t = sample(Shape{2}, DType::f32, 1);
  expect_error(
      [&] {
        save_safetensors({{"a", t}, {"a", t}}, path);
      },
      {path, "\"a\" appears twice"});
  expect_error([&] { save_safetensors({{"", t}}, path); }, {path, "empty name"});
  expect_error(
      [&] {
        save_safetensors({{std::string("a\0b", 3), t}}, path);
      },
      {path, "\"a\\u0000b\"", "NUL byte"});
  expect_error([&] { save_safetensors({{"__metadata__", t}}, path); }, {"reserved"});
  expect_error([&] { save_safetensors({{"u", DynTensor()}}, path); }, {"\"u\" is undefined"});
  expect_error([&] { save_safetensors({{"\xff", t}}, path); }, {path, "UTF-8"});
  EXPECT_TRUE(dir.entries().empty());  // nothing written, no temp file
}

// -- atomic writes ------------------------------------------------------------------------------

class AtomicWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("model.safetensors");
    save_safetensors({{"old", sample(Shape{64}, DType::f32, 1)}}, path_, {{"v", "1"}});
    old_ = read_file(path_);
  }
  // The old file is byte-identical and nothing else is in the directory.
  void expect_untouched() {
    EXPECT_EQ(read_file(path_), old_);
    EXPECT_EQ(dir_.entries(), std::vector<std::string>{"model.safetensors"});
  }
  TempDir dir_;
  std::string path_;
  std::vector<unsigned char> old_;
};

TEST_F(AtomicWrite, OverwriteReplacesTheFileAndLeavesNoTempFile) {
  const DynTensor t = sample(Shape{10}, DType::i64, 2);
  save_safetensors({{"new", t}}, path_);
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"model.safetensors"});
  const SafetensorsFile f = load_safetensors(path_);
  EXPECT_EQ(f.names(), std::vector<std::string>{"new"});
  expect_same(f.tensor("new"), t);
}

TEST_F(AtomicWrite, KeepsThePermissionsOfTheFileItReplaces) {
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  save_safetensors({{"new", sample(Shape{1}, DType::f32, 2)}}, path_);
  EXPECT_EQ(fs::status(path_).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(AtomicWrite, FailedValidationLeavesTheOldFile) {
  const DynTensor t = sample(Shape{1}, DType::f32, 2);
  expect_error([&] { save_safetensors({{"a", t}, {"a", t}}, path_); }, {"appears twice"});
  expect_untouched();
}

// The disk "fills up" midway through the data: RLIMIT_FSIZE makes write() fail with EFBIG after
// the header and part of the data are in the temp file.
TEST_F(AtomicWrite, WriteFailingMidwayLeavesTheOldFileAndNoTempFile) {
  const DynTensor big = sample(Shape{64, 1024}, DType::f32, 3);  // 256 KiB
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  const auto old_handler = signal(SIGXFSZ, SIG_IGN);  // the error comes back from write() instead
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  expect_error(
      [&] {
        save_safetensors({{"big", big}}, path_);
      },
      {path_, "writing", "failed", "File too large", "previous file"});
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);
  expect_untouched();
}

TEST_F(AtomicWrite, MissingDirectoryIsAnError) {
  expect_error(
      [&] {
        save_safetensors({{"a", sample(Shape{1}, DType::f32, 2)}}, dir_.file("no/x.st"));
      },
      {"cannot create a temp file", "no/x.st", "No such file"});
  expect_untouched();
}

TEST_F(AtomicWrite, UnwritableDirectoryLeavesTheOldFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  fs::permissions(dir_.path(), fs::perms::owner_read | fs::perms::owner_exec);
  expect_error(
      [&] {
        save_safetensors({{"a", sample(Shape{1}, DType::f32, 2)}}, path_);
      },
      {"cannot create a temp file", "Permission denied"});
  fs::permissions(dir_.path(), fs::perms::owner_all);
  expect_untouched();
}

// An exception between the first write and commit (a tensor whose data cannot be read, a bug)
// unwinds through AtomicFile, which removes the temp file.
TEST_F(AtomicWrite, ExceptionBeforeCommitRemovesTheTempFile) {
  std::string temp;
  try {
    detail::AtomicFile file(path_, "[test]");
    temp = file.temp_path();
    file.write("partial", 7);
    EXPECT_TRUE(fs::exists(temp));
    EMBER_FAIL("[test] a tensor failed midway");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[test] a tensor failed midway");
  }
  EXPECT_FALSE(temp.empty());
  EXPECT_FALSE(fs::exists(temp));
  expect_untouched();
}

TEST_F(AtomicWrite, WritesThroughASymlinkToItsTarget) {
  const std::string link = dir_.file("link.safetensors");
  fs::create_symlink(path_, link);
  const DynTensor t = sample(Shape{3}, DType::u8, 4);
  save_safetensors({{"t", t}}, link);
  EXPECT_TRUE(fs::is_symlink(link));
  expect_same(load_safetensors(path_).tensor("t"), t);
}

}  // namespace
}  // namespace ember::io::test
