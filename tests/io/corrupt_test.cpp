// Corrupt safetensors files, one test per defect, each built byte by byte: every one must give an
// ember::Error naming the file and the values involved, never a crash. With EMBER_IO_WRITE_CORPUS
// set to a directory, each test also saves its bytes there (tests/fuzz/corpus/safetensors came
// from it).
#include <cstdlib>

#include "io_test_util.hpp"

namespace ember::io::test {
namespace {

void save_to_corpus(const std::vector<unsigned char>& bytes) {
  const char* dir = std::getenv("EMBER_IO_WRITE_CORPUS");
  if (!dir || !*dir) return;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  static std::string last_test;  // a test with several cases saves name.safetensors, name_2, ...
  static int count = 0;
  count = last_test == info->name() ? count + 1 : 1;
  last_test = info->name();
  std::string file = info->name();
  if (count > 1) file.append("_").append(std::to_string(count));
  write_file((fs::path(dir) / file.append(".safetensors")).string(), bytes);
}

// Loads the bytes from a file and every tensor in it (as the fuzz target does), expecting an
// ember::Error that names the file and holds every piece of `needles`.
void expect_corrupt(const std::vector<unsigned char>& bytes,
                    std::initializer_list<std::string> needles) {
  save_to_corpus(bytes);
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_file(path, bytes);
  std::vector<std::string> all = {path};
  all.insert(all.end(), needles.begin(), needles.end());
  expect_error(
      [&] {
        const SafetensorsFile f = load_safetensors(path);
        for (const std::string& name : f.names()) (void)f.tensor(name);
      },
      all);
}

std::string f32_entry(const std::string& name, const std::string& shape, uint64_t begin,
                      uint64_t end) {
  std::string out = "\"";
  out.append(name).append("\":{\"dtype\":\"F32\",\"shape\":").append(shape);
  out.append(",\"data_offsets\":[").append(std::to_string(begin)).append(",");
  return out.append(std::to_string(end)).append("]}");
}

// A JSON object of the given "key":value entries. (Built by append: GCC 12 warns wrongly about
// "literal" + std::string, PR 105329.)
std::string obj(std::initializer_list<std::string> entries) {
  std::string out = "{";
  for (const std::string& e : entries) out.append(out.size() > 1 ? "," : "").append(e);
  return out.append("}");
}

TEST(SafetensorsCorrupt, ValidFileLoads) {  // the baseline the others break; a fuzz seed too
  const auto bytes = st_bytes(obj({f32_entry("a", "[2]", 0, 8), f32_entry("b", "[1]", 8, 12),
                                   R"("__metadata__":{"k":"v"})"}),
                              std::string(12, '\1'));
  save_to_corpus(bytes);
  const SafetensorsFile f = parse_safetensors(bytes);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.metadata().at("k"), "v");
}

TEST(SafetensorsCorrupt, EmptyFile) {
  expect_corrupt({}, {"is 0 bytes", "shorter than the 8-byte"});
}

TEST(SafetensorsCorrupt, FileShorterThan8Bytes) {
  expect_corrupt({1, 0, 0, 0, 0}, {"is 5 bytes", "shorter than the 8-byte header length"});
}

TEST(SafetensorsCorrupt, HeaderLengthLargerThanFile) {
  expect_corrupt(st_bytes("{}", "", 1000), {"header length 1000", "larger than the 2 bytes"});
}

TEST(SafetensorsCorrupt, HeaderLengthAbsurd) {
  expect_corrupt(st_bytes("{}", "", 100'000'001),
                 {"header length 100000001", "exceeds the limit of 100000000"});
  expect_corrupt(st_bytes("{}", "", UINT64_MAX - 1), {"header length 18446744073709551614"});
}

TEST(SafetensorsCorrupt, HeaderNotJson) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F32",)", ""), {"header is not valid JSON", "parse"});
}

TEST(SafetensorsCorrupt, HeaderWithInvalidUtf8) {
  expect_corrupt(st_bytes("{\"\xff\xfe\":1}", ""), {"header is not valid JSON", "UTF-8"});
}

TEST(SafetensorsCorrupt, HeaderNotAnObject) {
  expect_corrupt(st_bytes("[1, 2, 3]", ""), {"header is a JSON array", "expected an object"});
}

TEST(SafetensorsCorrupt, HeaderNestedTooDeep) {
  expect_corrupt(st_bytes(std::string(100, '[') + std::string(100, ']'), ""),
                 {"nests deeper than 64"});
}

TEST(SafetensorsCorrupt, EntryNotAnObject) {
  expect_corrupt(st_bytes(R"({"a":[0,4]})", "abcd"), {"tensor \"a\" is a JSON array"});
}

TEST(SafetensorsCorrupt, EntryMissingField) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "abcd"),
                 {"tensor \"a\" has no \"shape\""});
}

TEST(SafetensorsCorrupt, UnknownDType) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "abcd"),
                 {"tensor \"a\" has unknown dtype \"F33\"", "BF16"});
}

TEST(SafetensorsCorrupt, DTypeNotAString) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "abcd"),
                 {"tensor \"a\": dtype is 32"});
}

TEST(SafetensorsCorrupt, DTypeEmberLacksFailsOnLoad) {
  // U16 is a valid format dtype: the file opens and lists it, but Ember cannot make the tensor.
  const auto bytes = st_bytes(R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", "abcd");
  const SafetensorsFile f = parse_safetensors(bytes, "u16");
  EXPECT_EQ(f.info("a").format_dtype, "U16");
  EXPECT_FALSE(f.info("a").supported);
  expect_corrupt(bytes, {"tensor \"a\" has dtype U16, which Ember has no dtype for"});
}

TEST(SafetensorsCorrupt, NegativeDim) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[2,-1]", 0, 4)}), "abcd"),
                 {"tensor \"a\": shape holds the negative value -1"});
}

TEST(SafetensorsCorrupt, NonIntegerDim) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1.5]", 0, 4)}), "abcd"),
                 {"shape holds 1.5", "non-negative integer"});
  expect_corrupt(st_bytes(obj({f32_entry("a", "[99999999999999999999999]", 0, 4)}), "abcd"),
                 {"shape holds 9.99999", "expected a non-negative integer"});
}

TEST(SafetensorsCorrupt, ShapeNotAnArray) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "4", 0, 4)}), "abcd"),
                 {"shape is 4", "expected an array"});
}

TEST(SafetensorsCorrupt, RankAboveEmbersLimit) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1,1,1,1,1,1,1,1,1,1,1,1,1]", 0, 4)}), "abcd"),
                 {"rank 13", "maximum of 12"});
}

TEST(SafetensorsCorrupt, ElementCountOverflowsInt64) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[4294967296,4294967296]", 0, 4)}), "abcd"),
                 {"shape [4294967296,4294967296]", "more elements than an int64"});
  expect_corrupt(st_bytes(obj({f32_entry("a", "[18446744073709551615]", 0, 4)}), "abcd"),
                 {"more elements than an int64"});
}

TEST(SafetensorsCorrupt, EmptyShapeWithOverflowingStrides) {
  // 0 elements (Python accepts it), but the strides of [0, 2^62, 4] overflow an int64.
  expect_corrupt(st_bytes(obj({f32_entry("a", "[0,4611686018427387904,4]", 0, 0)}), ""),
                 {"shape [0,4611686018427387904,4] is too large for Ember's strides"});
}

TEST(SafetensorsCorrupt, ByteSizeOverflowsInt64) {
  // 2^61 elements fit an int64, but 2^61 f64 values are 2^64 bytes.
  expect_corrupt(
      st_bytes(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}})",
               std::string(8, '\0')),
      {"shape [2305843009213693952] of F64 needs more bytes than an int64"});
}

TEST(SafetensorsCorrupt, DataOffsetsNotAPair) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", "abcd"),
                 {"data_offsets is [0,4,8]", "expected [begin, end]"});
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":"0-4"}})", "abcd"),
                 {"data_offsets is \"0-4\""});
}

TEST(SafetensorsCorrupt, DataOffsetsNegative) {
  expect_corrupt(st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "abcd"),
                 {"data_offsets holds the negative value -4"});
}

TEST(SafetensorsCorrupt, DataOffsetsEndBeforeBegin) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1]", 4, 0)}), "abcd"),
                 {"data_offsets [4, 0] end before they begin"});
}

TEST(SafetensorsCorrupt, SizeDoesNotMatchShape) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[2,3]", 0, 20)}), std::string(20, 'x')),
                 {"data_offsets [0, 20] hold 20 bytes", "shape [2, 3] of F32 needs 24"});
}

TEST(SafetensorsCorrupt, OffsetsOutsideDataArea) {  // a truncated file
  expect_corrupt(st_bytes(obj({f32_entry("a", "[4]", 0, 16)}), std::string(10, 'x')),
                 {"data_offsets [0, 16] lie outside the data area, which has 10 bytes"});
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[2]", 0, 8), f32_entry("b", "[2]", 4, 12)}),
                          std::string(12, 'x')),
                 {"tensors \"a\" (bytes [0, 8)) and \"b\" (bytes [4, 12)) overlap"});
  // Two names for the same bytes are an overlap too (the Python library rejects them as well).
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1]", 0, 4), f32_entry("b", "[1]", 0, 4)}),
                          std::string(4, 'x')),
                 {"overlap"});
}

TEST(SafetensorsCorrupt, GapBetweenTensors) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1]", 0, 4), f32_entry("b", "[1]", 8, 12)}),
                          std::string(12, 'x')),
                 {"bytes [4, 8) of the data area belong to no tensor"});
}

TEST(SafetensorsCorrupt, TrailingBytes) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1]", 0, 4)}), std::string(7, 'x')),
                 {"the data area has 7 bytes but the tensors end at byte 4", "3 trailing bytes"});
}

TEST(SafetensorsCorrupt, DuplicateNames) {
  expect_corrupt(st_bytes(obj({f32_entry("a", "[1]", 0, 4), f32_entry("a", "[1]", 4, 8)}),
                          std::string(8, 'x')),
                 {"tensor name \"a\" appears twice in the header"});
}

TEST(SafetensorsCorrupt, DuplicateField) {
  expect_corrupt(
      st_bytes(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
      {"key \"dtype\" appears twice"});
}

TEST(SafetensorsCorrupt, NameWithNul) {
  expect_corrupt(st_bytes(obj({f32_entry("a\\u0000b", "[1]", 0, 4)}), "abcd"),
                 {"tensor name \"a\\u0000b\" contains a NUL byte"});
}

TEST(SafetensorsCorrupt, EmptyName) {
  expect_corrupt(st_bytes(obj({f32_entry("", "[1]", 0, 4)}), "abcd"),
                 {"a tensor with an empty name"});
}

TEST(SafetensorsCorrupt, MetadataNotAnObject) {
  expect_corrupt(st_bytes(R"({"__metadata__":[1]})", ""),
                 {"__metadata__ is a JSON array", "object of strings"});
}

TEST(SafetensorsCorrupt, MetadataValueNotAString) {
  expect_corrupt(st_bytes(R"({"__metadata__":{"epoch":3}})", ""),
                 {"__metadata__ value of \"epoch\" is 3", "strings to strings"});
}

TEST(SafetensorsCorrupt, BoolByteNotZeroOrOne) {
  expect_corrupt(st_bytes(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                          std::string("\1\0\7", 3)),
                 {"tensor \"m\" is BOOL but byte 2 holds 7"});
}

TEST(SafetensorsCorrupt, SubByteDTypeNotWholeBytes) {
  expect_corrupt(st_bytes(R"({"q":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", "x"),
                 {"3 elements of F4 do not fill a whole number of bytes"});
}

}  // namespace
}  // namespace ember::io::test
