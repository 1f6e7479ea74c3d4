// Headers that are large, or large in what Ember ignores: parsing is linear in time and in memory,
// and the header and its metadata are bounded. Time is checked as a ratio (ten times the tensors,
// about ten times the CPU time) and memory with generous bounds (measured values in the
// comments, on a 2-core machine): they catch the quadratic or 20x behaviours these tests were
// written for, not a slow machine or a sanitizer.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "io_test_util.hpp"

namespace ember::io::test {
namespace {

// CPU time of this thread, in seconds: unlike the wall clock, it does not grow when other
// processes share the machine (the bounds below held on a 2-core machine running 14 compilers).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Peak resident memory of this process since the last reset_peak_rss(), in bytes (Linux).
int64_t peak_rss() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return -1;
}
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// AddressSanitizer keeps up to 256 MB of freed memory in quarantine (resident), so freed
// temporaries count towards the peak there.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kSanitizerQuarantine = int64_t{256} << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int64_t kSanitizerQuarantine = int64_t{256} << 20;
#else
constexpr int64_t kSanitizerQuarantine = 0;
#endif
#else
constexpr int64_t kSanitizerQuarantine = 0;
#endif

// A header of `n` F32 tensors of one element each, "t0" ... "t<n-1>", laid out in order.
std::string many_tensors(int n) {
  std::string h = "{";
  for (int i = 0; i < n; ++i) {
    h.append(i ? "," : "").append("\"t").append(std::to_string(i));
    h.append("\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[");
    h.append(std::to_string(4 * i)).append(",").append(std::to_string(4 * i + 4)).append("]}");
  }
  return h.append("}");
}

// CPU seconds of parsing a header of n tensors.
double parse_seconds(int n) {
  const auto bytes = st_bytes(many_tensors(n), std::string(4 * static_cast<size_t>(n), '\0'));
  const double t0 = cpu_seconds();
  const SafetensorsFile f = parse_safetensors(bytes, "many");
  const double s = cpu_seconds() - t0;
  EXPECT_EQ(f.size(), static_cast<size_t>(n));
  EXPECT_EQ(f.names().back(),
            std::string("t").append(std::to_string(n - 1)));  // the header's order
  EXPECT_EQ(f.info(std::string("t").append(std::to_string(n - 1))).begin,
            4u * static_cast<size_t>(n - 1));
  return s;
}

// CPU seconds of saving n one-element tensors.
double save_seconds(int n) {
  std::vector<std::pair<std::string, DynTensor>> tensors;
  const DynTensor one = Tensor<1>::from_vector<float>({1.0f}, {1}).dyn();
  for (int i = 0; i < n; ++i) tensors.emplace_back(std::string("t").append(std::to_string(i)), one);
  TempDir dir;
  const double t0 = cpu_seconds();
  save_safetensors(tensors, dir.file("many.safetensors"));
  const double s = cpu_seconds() - t0;
  const SafetensorsFile f = load_safetensors(dir.file("many.safetensors"));
  EXPECT_EQ(f.size(), static_cast<size_t>(n));
  EXPECT_EQ(f.names()[static_cast<size_t>(n) / 2], std::string("t").append(std::to_string(n / 2)));
  return s;
}

// Ten times the tensors must cost about ten times the time, not a hundred: a ratio, so that the
// check holds on any machine and under the sanitizers (an absolute bound failed under ASan).
// Linear work measures ~10x; the quadratic header building this guards against was ~100x.
constexpr double kLinearRatioBound = 30.0;

TEST(SafetensorsHeader, HundredThousandTensorsLoadInLinearTime) {
  // Took 49 s before the header was read entry by entry (ordered_json's linear insert); 0.5 s of
  // CPU now (nlohmann's lexer is 0.45 s of it), 1,000,000 tensors 5.9 s.
  const double small = std::max(parse_seconds(10'000), 1e-3);
  const double large = parse_seconds(100'000);
  EXPECT_LT(large / small, kLinearRatioBound)
      << "parsing 100,000 tensors took " << large << " s of CPU, 10,000 took " << small << " s";
}

TEST(SafetensorsHeader, HundredThousandTensorsSaveInLinearTime) {
  // save_safetensors built its header with ordered_json too: 100,000 tensors wrote in minutes.
  const double small = std::max(save_seconds(10'000), 1e-3);
  const double large = save_seconds(100'000);
  EXPECT_LT(large / small, kLinearRatioBound)
      << "saving 100,000 tensors took " << large << " s of CPU, 10,000 took " << small << " s";
}

TEST(SafetensorsHeader, OversizedHeaderIsRefusedBeforeReading) {
  // A file that really holds 100,000,001 header bytes (sparse: no disk is spent on it).
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  write_file(path, st_bytes("", "", 100'000'001));
  fs::resize_file(path, 8 + 100'000'001);
  expect_error([&] { (void)load_safetensors(path); },
               {path, "header length 100000001", "exceeds the limit of 100000000 bytes"});
}

TEST(SafetensorsHeader, MostlyIgnoredFieldsCostLittleMemory) {
  // 98 MB of fields Ember ignores (an unknown key's array, and 3 million unknown keys) beside one
  // tensor: the whole-DOM parser peaked at 1.9 GB; now the mapped file (98 MB) and ~1 MB more.
  std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"ignored":[)";
  for (int i = 0; i < 24'500'000; ++i) h.append(i ? ",0" : "0");
  h.append("]");
  for (int i = 0; h.size() < 98'000'000; ++i)
    h.append(",\"k").append(std::to_string(i)).append("\":0");
  h.append("}}");
  TempDir dir;
  const std::string path = dir.file("ignored.safetensors");
  write_file(path, st_bytes(h, "abcd"));
  const size_t header_bytes = h.size();
  h = std::string();
  const bool measured = reset_peak_rss();
  const int64_t before = peak_rss();
  const SafetensorsFile f = load_safetensors(path);
  const int64_t growth = peak_rss() - before;
  EXPECT_EQ(f.names(), std::vector<std::string>{"a"});
  EXPECT_EQ(f.info("a").end, 4u);
  if (!measured || before < 0) GTEST_SKIP() << "no /proc/self/clear_refs to measure peak memory";
  EXPECT_LT(growth, static_cast<int64_t>(header_bytes) + (200 << 20) + kSanitizerQuarantine)
      << "a header of " << header_bytes << " bytes of ignored fields raised peak memory by "
      << growth << " bytes";
}

TEST(SafetensorsHeader, MetadataEntriesAreBounded) {
  std::string h = R"({"__metadata__":{)";
  for (int i = 0; i <= 65'536; ++i)
    h.append(i ? "," : "").append("\"k").append(std::to_string(i)).append("\":\"\"");
  h.append("}}");
  expect_error([&] { (void)parse_safetensors(st_bytes(h, ""), "meta.safetensors"); },
               {"meta.safetensors", "__metadata__ holds more than 65536 entries (the limit)"});
}

TEST(SafetensorsHeader, MetadataBytesAreBounded) {
  // (Built by append: GCC 12 warns wrongly about "literal" + std::string, PR 105329.)
  const std::string h =
      std::string(R"({"__metadata__":{"big":")").append(64 << 20, 'x').append("\"}}");
  expect_error([&] { (void)parse_safetensors(st_bytes(h, ""), "meta.safetensors"); },
               {"meta.safetensors", "__metadata__ holds more than 67108864 bytes"});
}

TEST(SafetensorsHeader, ArraysOfShapeAndOffsetsAreBoundedWhileParsing) {
  std::string shape = "[1";
  for (int i = 0; i < 1000; ++i) shape.append(",1");
  shape.append("]");
  expect_error(
      [&] {
        (void)parse_safetensors(st_bytes(std::string(R"({"a":{"dtype":"F32","shape":)")
                                             .append(shape)
                                             .append(R"(,"data_offsets":[0,4]}})"),
                                         "abcd"));
      },
      {"tensor \"a\" has rank 17 or more, more than Ember's maximum of 12"});
  expect_error(
      [&] {
        (void)parse_safetensors(
            st_bytes(std::string(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":)")
                         .append(shape)
                         .append("}}"),
                     "abcd"));
      },
      {"data_offsets holds more than 2 values"});
  expect_error(
      [&] {
        (void)parse_safetensors(
            st_bytes(R"({"a":{"dtype":"F32","shape":[[1,2]],"data_offsets":[0,4]}})", "abcd"));
      },
      {"shape holds a JSON array, expected a non-negative integer"});
  expect_error(
      [&] {
        (void)parse_safetensors(
            st_bytes(R"({"a":{"dtype":{"F32":1},"shape":[1],"data_offsets":[0,4]}})", "abcd"));
      },
      {"dtype is a JSON object, expected a string"});
}

}  // namespace
}  // namespace ember::io::test
