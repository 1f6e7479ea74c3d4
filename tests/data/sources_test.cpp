// CSV, PNG/JPEG and image folders, SQLite: parsing, round trips and errors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "data_test_util.hpp"
#include "ember/core/error.hpp"
#include "ember/data/data.hpp"

using namespace ember;
using namespace ember::data;
using ember::data::testing::error_of;
using ember::data::testing::TempDir;
using ember::data::testing::write_text;

namespace {

ImageItem gradient_image(int64_t c, int64_t h, int64_t w, int64_t label) {
  ImageItem im;
  im.channels = c;
  im.height = h;
  im.width = w;
  im.label = label;
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        im.pixels.push_back(static_cast<uint8_t>((k * 30 + y * 6 + x * 6) % 256));
  return im;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}
void put_be(std::vector<uint8_t>& b, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}

// A valid PNG whose IHDR claims `w` x `h` (its CRC recomputed): the signature (8 bytes), then
// IHDR's length (4), type (4), width (4), height (4), ..., CRC over type and data.
void write_png_claiming(const std::string& path, uint32_t w, uint32_t h) {
  write_png(path, gradient_image(3, 8, 8, 0));
  std::vector<uint8_t> b = read_bytes(path);
  ASSERT_EQ(std::string(b.begin() + 12, b.begin() + 16), "IHDR");
  put_be(b, 16, w, 4);
  put_be(b, 20, h, 4);
  put_be(b, 29, static_cast<uint32_t>(crc32(0, b.data() + 12, 17)), 4);
  write_bytes(path, b);
}

// A valid JPEG whose SOF0 frame header claims `w` x `h`: marker FF C0, length (2), precision (1),
// height (2), width (2).
void write_jpeg_claiming(const std::string& path, int64_t channels, uint32_t w, uint32_t h) {
  write_jpeg(path, gradient_image(channels, 8, 8, 0));
  std::vector<uint8_t> b = read_bytes(path);
  size_t sof = 2;
  while (sof + 1 < b.size() && !(b[sof] == 0xFF && b[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 9, b.size());
  put_be(b, sof + 5, h, 2);
  put_be(b, sof + 7, w, 2);
  write_bytes(path, b);
}

int max_abs_diff(const ImageItem& a, const ImageItem& b) {
  int worst = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i)
    worst = std::max(worst, std::abs(int{a.pixels[i]} - int{b.pixels[i]}));
  return worst;
}

}  // namespace

// ---- CSV ----

TEST(Csv, HeaderLabelAndQuotedFields) {
  const std::string text =
      "x,\"label\",\"y, in m\"\r\n"
      "1.5,0,-2\r\n"
      "\n"
      "\"3\",2,+4e1\r\n"
      " 5 , 1 ,\"6\"";  // no newline at the end
  auto ds = CsvDataset::parse(text, CsvConfig().label("label"), "t.csv");
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(ds->feature_names(), (std::vector<std::string>{"x", "y, in m"}));
  EXPECT_EQ(ds->label_name(), "label");
  EXPECT_EQ(ds->at(0).features, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(ds->at(1).features, (std::vector<float>{3.0f, 40.0f}));
  EXPECT_EQ(ds->at(1).target, 2.0);
  EXPECT_EQ(ds->at(2).features, (std::vector<float>{5.0f, 6.0f}));
  EXPECT_EQ(ds->get(3), std::nullopt);
}

TEST(Csv, NoHeaderLabelByIndexAndOtherDelimiter) {
  auto ds = CsvDataset::parse("1;2;3\n4;5;nan\n",
                              CsvConfig().header(false).delimiter(';').label_index(0));
  ASSERT_EQ(ds->size(), 2u);
  EXPECT_EQ(ds->feature_names(), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(ds->label_name(), "0");
  EXPECT_EQ(ds->at(1).target, 4.0);
  EXPECT_TRUE(std::isnan(ds->at(1).features[1]));
  auto unlabelled = CsvDataset::parse("a,b\n1,2\n");
  EXPECT_EQ(unlabelled->at(0).features.size(), 2u);
  EXPECT_EQ(unlabelled->label_name(), "");
}

TEST(Csv, QuotedNewlinesAndEscapedQuotes) {
  auto ds = CsvDataset::parse("\"a\nb\",\"c\"\"d\"\n1,2\n", CsvConfig());
  EXPECT_EQ(ds->feature_names(), (std::vector<std::string>{"a\nb", "c\"d"}));
  // Line numbers count physical lines: the bad row starts on line 4.
  EXPECT_EQ(error_of([] { CsvDataset::parse("\"a\nb\",c\n1,2\nx,3\n", {}, "q.csv"); }),
            "[CsvDataset] q.csv:4: column \"a\\x0ab\": not a number: \"x\"");
}

TEST(Csv, ErrorsNameFileAndLine) {
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,2\n3,oops\n", {}, "d.csv"); }),
            "[CsvDataset] d.csv:3: column \"b\": not a number: \"oops\"");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,2\n3\n", {}, "d.csv"); }),
            "[CsvDataset] d.csv:3: 1 fields, expected 2 (column 2, \"b\", is missing)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,\n", {}, "d.csv"); }),
            "[CsvDataset] d.csv:2: column \"b\": not a number: \"\"");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n\"1,2\n", {}, "d.csv"); }),
            "[CsvDataset] d.csv:2: quoted field never closed");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1x\"2\",3\n", {}, "d.csv"); }),
            "[CsvDataset] d.csv:2: stray quote in field 1 (quote the whole field and double "
            "inner quotes)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,2\n", CsvConfig().label("c"), "d.csv"); }),
            "[CsvDataset] d.csv: no column named \"c\" (columns: a, b)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("", {}, "d.csv"); }),
            "[CsvDataset] d.csv: no header line (the file is empty)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a\n1\n", CsvConfig().label_index(3), "d.csv"); }),
            "[CsvDataset] d.csv: label column 3 is out of range for 1 columns");
  EXPECT_EQ(error_of([] { CsvDataset::open("/nonexistent/x.csv"); }),
            "[CsvDataset] /nonexistent/x.csv: cannot open: No such file or directory");
}

// The hostile labels: NaN, infinite, out of i64's range (converting them to the i64 label
// was undefined behaviour), negative or fractional. Each is an error naming file:line and column.
TEST(Csv, LabelsThatAreNotClassIndicesAreErrors) {
  const auto err = [](const std::string& label, CsvConfig config = CsvConfig().label("y")) {
    return error_of([&] { CsvDataset::parse("x,y\n1,0\n2," + label + "\n", config, "l.csv"); });
  };
  const std::string tail =
      " is not a class index (a whole number in [0, 2^63); use "
      "CsvConfig().target(TabularTarget::values) for real values)";
  for (const std::string bad : {"nan", "inf", "-inf", "1e19", "9223372036854775808", "-1", "2.5"})
    EXPECT_EQ(err(bad), "[CsvDataset] l.csv:3: column \"y\": label \"" + bad + "\"" + tail);
  // The largest doubles below 2^63 are fine, and so is the label 0 written "-0".
  EXPECT_EQ(err("9223372036854774784"), "<no error>");
  EXPECT_EQ(err("-0"), "<no error>");
  // By position, without a header: the column is named by its number.
  EXPECT_EQ(error_of([] {
              CsvDataset::parse("1,2\n3,NaN\n", CsvConfig().header(false).label_index(1), "n.csv");
            }),
            "[CsvDataset] n.csv:2: column \"1\": label \"NaN\"" + tail);
  // Real-valued labels need only be finite.
  const CsvConfig values = CsvConfig().label("y").target(TabularTarget::values);
  EXPECT_EQ(err("2.5", values), "<no error>");
  EXPECT_EQ(err("1e300", values), "<no error>");
  EXPECT_EQ(err("nan", values),
            "[CsvDataset] l.csv:3: column \"y\": label \"nan\" is not a finite number");
  EXPECT_EQ(err("-inf", values),
            "[CsvDataset] l.csv:3: column \"y\": label \"-inf\" is not a finite number");
  // Features may still be NaN or infinite.
  EXPECT_EQ(error_of([] { CsvDataset::parse("x,y\nnan,1\ninf,0\n", CsvConfig().label("y")); }),
            "<no error>");
}

// The batcher checks a target before converting it (items need not come from a CSV file).
TEST(Csv, BatcherRefusesTargetsThatAreNotClassIndices) {
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, 1e19, 0x1p63, -1.0, 0.5}) {
    const std::string e = error_of([&] {
      TabularBatcher().batch({TabularItem{{1.0f}, 0.0}, TabularItem{{2.0f}, bad}}, Device::cpu());
    });
    EXPECT_EQ(e.rfind("[TabularBatcher] item 1: target ", 0), 0u) << e;
    EXPECT_NE(e.find("is not a class index"), std::string::npos) << e;
  }
  EXPECT_EQ(TabularBatcher()
                .batch({TabularItem{{1.0f}, 0x1p62}}, Device::cpu())
                .labels.to_vector<int64_t>(),
            (std::vector<int64_t>{int64_t{1} << 62}));
}

// Hostile files: each a clear error naming file:line and the column or field, never a crash.
TEST(Csv, HostileFilesGiveClearErrors) {
  // Missing and extra fields.
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b,c\n1,2\n", {}, "f.csv"); }),
            "[CsvDataset] f.csv:2: 2 fields, expected 3 (column 3, \"c\", is missing)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,2\n1,2,3,4\n", {}, "f.csv"); }),
            "[CsvDataset] f.csv:3: 4 fields, expected 2 (field 3 is extra)");
  // Empty files, with or without a header; blank lines only. A header alone is an empty dataset.
  EXPECT_EQ(error_of([] { CsvDataset::parse("", CsvConfig().header(false), "e.csv"); }),
            "[CsvDataset] e.csv: no records (the file is empty)");
  EXPECT_EQ(error_of([] { CsvDataset::parse("\n\r\n\n", {}, "e.csv"); }),
            "[CsvDataset] e.csv: no header line (the file is empty)");
  EXPECT_EQ(CsvDataset::parse("a,b\n")->size(), 0u);
  // Embedded NUL bytes (a binary file read as CSV).
  EXPECT_EQ(error_of([] { CsvDataset::parse(std::string("a,b\n1,2\n3,4\0\n", 13), {}, "z.csv"); }),
            "[CsvDataset] z.csv:3: NUL byte in field 2 (not a text file?)");
  EXPECT_EQ(error_of([] { CsvDataset::parse(std::string("a,\"b\0\"\n", 7), {}, "z.csv"); }),
            "[CsvDataset] z.csv:1: NUL byte in field 2 (not a text file?)");
  // A 10 MB line: the error quotes 40 bytes of the field and says how long it is.
  const std::string long_field(10'000'000, 'x');
  EXPECT_EQ(error_of([&] { CsvDataset::parse("a,b\n1," + long_field + "\n", {}, "l.csv"); }),
            "[CsvDataset] l.csv:2: column \"b\": not a number: \"" + std::string(40, 'x') +
                "\"... (10000000 bytes)");
  // A line of 200,000 fields reads (linear time).
  std::string wide = "0";
  for (int i = 1; i < 200'000; ++i) wide += ",1";
  auto ds = CsvDataset::parse(wide + "\n" + wide + "\n", CsvConfig().header(false).label_index(0));
  ASSERT_EQ(ds->size(), 2u);
  EXPECT_EQ(ds->at(1).features.size(), 199'999u);
  // Control bytes in a field are escaped in the message.
  EXPECT_EQ(error_of([] { CsvDataset::parse("a\n1\x1b[2J\n", {}, "c.csv"); }),
            "[CsvDataset] c.csv:2: column \"a\": not a number: \"1\\x1b[2J\"");
  // Quoting: unclosed at the end of the file, a quote inside an unquoted field, text after one.
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,\"2\n3,4\n", {}, "q.csv"); }),
            "[CsvDataset] q.csv:2: quoted field never closed");
  EXPECT_EQ(error_of([] { CsvDataset::parse("a,b\n1,\"2\"x\n", {}, "q.csv"); }),
            "[CsvDataset] q.csv:2: text after the closing quote of field 2");
  // A UTF-8 byte order mark (Excel's "CSV UTF-8") is skipped.
  EXPECT_EQ(
      CsvDataset::parse("\xEF\xBB\xBFlabel,x\n1,2\n", CsvConfig().label("label"))->label_name(),
      "label");
}

TEST(Csv, OpensAFileAndBatches) {
  TempDir dir;
  write_text(dir.file("iris.csv"), "sepal,petal,species\n5.1,1.4,0\n6.2,4.5,1\n7.7,6.7,2\n");
  auto ds = CsvDataset::open(dir.file("iris.csv"), CsvConfig().label("species"));
  DataLoader loader(ds, std::make_shared<TabularBatcher>(), DataLoaderConfig().batch_size(2));
  auto epoch = loader.epoch(0);
  auto it = epoch.begin();
  EXPECT_EQ(it->features.dims(), (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(it->labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(it->targets.defined());
  TabularBatch v =
      TabularBatcher(TabularBatcher::Target::values).batch({ds->at(0), ds->at(2)}, Device::cpu());
  EXPECT_EQ(v.targets.to_vector<float>(), (std::vector<float>{0.0f, 2.0f}));
  TabularItem bad{{1.0f, 2.0f}, 0.5};
  EXPECT_THROW(TabularBatcher().batch({bad}, Device::cpu()), Error);
}

// ---- images ----

TEST(Image, PngRoundTripIsExact) {
  TempDir dir;
  for (int64_t c : {1, 3, 4}) {
    const ImageItem im = gradient_image(c, 5, 7, 0);
    write_png(dir.file("a.png"), im);
    const ImageItem back = read_image(dir.file("a.png"));
    EXPECT_EQ(back.channels, c);
    EXPECT_EQ(back.height, 5);
    EXPECT_EQ(back.width, 7);
    EXPECT_EQ(back.pixels, im.pixels) << c << " channels";
  }
  // Conversions: grey to RGB repeats the plane; RGB to grey has one plane.
  write_png(dir.file("g.png"), gradient_image(1, 4, 4, 0));
  const ImageItem rgb = read_image(dir.file("g.png"), 3);
  ASSERT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.at(2, 3, 3), gradient_image(1, 4, 4, 0).at(0, 3, 3));
  write_png(dir.file("c.png"), gradient_image(3, 4, 4, 0));
  EXPECT_EQ(read_image(dir.file("c.png"), 1).channels, 1);
}

TEST(Image, JpegRoundTripIsClose) {
  TempDir dir;
  for (int64_t c : {1, 3}) {
    const ImageItem im = gradient_image(c, 16, 16, 0);
    write_jpeg(dir.file("a.jpg"), im, 100);
    const ImageItem back = read_image(dir.file("a.jpg"));
    ASSERT_EQ(back.channels, c);
    ASSERT_EQ(back.pixels.size(), im.pixels.size());
    EXPECT_LE(max_abs_diff(back, im), c == 1 ? 2 : 12) << c << " channels";
  }
  EXPECT_EQ(read_image(dir.file("a.jpg"), 1).channels, 1);
  EXPECT_THROW(write_jpeg(dir.file("b.jpg"), gradient_image(4, 2, 2, 0)), Error);
}

TEST(Image, BadFilesGiveErrorsNamingThem) {
  TempDir dir;
  write_text(dir.file("x.png"), "not an image");
  EXPECT_EQ(error_of([&] { read_image(dir.file("x.png")); }),
            "[read_image] " + dir.file("x.png") + ": not a PNG or JPEG file (unknown first bytes)");
  write_png(dir.file("t.png"), gradient_image(3, 32, 32, 0));
  std::filesystem::resize_file(dir.file("t.png"), 60);
  EXPECT_EQ(error_of([&] {
              read_image(dir.file("t.png"));
            }).rfind("[read_image] " + dir.file("t.png") + ": bad PNG: ", 0),
            0u);
  write_jpeg(dir.file("t.jpg"), gradient_image(3, 32, 32, 0));
  std::filesystem::resize_file(dir.file("t.jpg"), 20);
  EXPECT_EQ(error_of([&] {
              read_image(dir.file("t.jpg"));
            }).rfind("[read_image] " + dir.file("t.jpg") + ": bad JPEG: ", 0),
            0u);
  EXPECT_EQ(error_of([&] { read_image(dir.file("none.png")); }),
            "[read_image] " + dir.file("none.png") + ": cannot open: No such file or directory");
}

// The hostile headers: a PNG and a JPEG claiming 65535 x 65535 used to allocate 4-12 GB
// and fail with a bare std::bad_alloc; they are refused from the header, naming the file, the
// size and the limit.
TEST(Image, HugeHeadersAreRefusedBeforeDecoding) {
  TempDir dir;
  const std::string png = dir.file("huge.png"), jpg = dir.file("huge.jpg");
  write_png_claiming(png, 65535, 65535);
  EXPECT_EQ(error_of([&] { read_image(png); }),
            "[read_image] " + png +
                ": PNG of 65535 x 65535 x 3 channels = 12884508675 bytes decoded, over the limit "
                "of 268435456 (read_image's max_bytes)");
  EXPECT_EQ(error_of([&] { read_image(png, 1); }),
            "[read_image] " + png +
                ": PNG of 65535 x 65535 x 1 channels = 4294836225 bytes decoded, over the limit of "
                "268435456 (read_image's max_bytes)");
  // libjpeg's own limit is 65500 per side.
  for (int64_t c : {1, 3}) {
    write_jpeg_claiming(jpg, c, 65500, 65500);
    EXPECT_EQ(error_of([&] { read_image(jpg); }),
              "[read_image] " + jpg + ": JPEG of 65500 x 65500 x " + std::to_string(c) +
                  " channels = " + std::to_string(65500ll * 65500 * c) +
                  " bytes decoded, over the limit of 268435456 (read_image's max_bytes)");
  }
  write_jpeg_claiming(jpg, 3, 65535, 65535);
  EXPECT_EQ(
      error_of([&] { read_image(jpg); }),
      "[read_image] " + jpg + ": bad JPEG: Maximum supported image dimension is 65500 pixels");
  // Just over the default in one dimension (16385 x 16384 grey), and a zero width.
  write_png_claiming(png, 16385, 16384);
  EXPECT_NE(error_of([&] { read_image(png, 1); }).find("over the limit of 268435456"),
            std::string::npos);
  write_jpeg_claiming(jpg, 1, 0, 8);
  EXPECT_EQ(error_of([&] { read_image(jpg); }).rfind("[read_image] " + jpg + ": bad JPEG: ", 0),
            0u);
  // The limit is a parameter: 8 x 8 x 3 = 192 bytes.
  write_png(png, gradient_image(3, 8, 8, 0));
  EXPECT_EQ(read_image(png, 0, 192).pixels.size(), 192u);
  EXPECT_EQ(error_of([&] { read_image(png, 0, 191); }),
            "[read_image] " + png +
                ": PNG of 8 x 8 x 3 channels = 192 bytes decoded, over the limit of 191 "
                "(read_image's max_bytes)");
  EXPECT_EQ(read_image(png, 1, 64).pixels.size(), 64u);  // counted as decoded: grey
  // And ImageFolder's.
  std::filesystem::create_directories(dir.path() / "root" / "a");
  write_png(dir.file("root/a/x.png"), gradient_image(3, 8, 8, 0));
  EXPECT_EQ(ImageFolder::open(dir.file("root"), 3, 192)->at(0).pixels.size(), 192u);
  EXPECT_NE(error_of([&] {
              ImageFolder::open(dir.file("root"), 3, 100)->at(0);
            }).find("over the limit of 100"),
            std::string::npos);
}

// Cut or damaged files: each an ember::Error naming the file (libpng's and libjpeg's errors come
// back through their error handlers, nothing aborts or leaks).
TEST(Image, TruncatedAndCorruptFilesAreErrors) {
  TempDir dir;
  const std::string png = dir.file("a.png"), jpg = dir.file("a.jpg");
  // Noise, so that the image data is most of each file.
  ImageItem im = gradient_image(3, 64, 64, 0);
  for (size_t i = 0; i < im.pixels.size(); ++i) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u;
    x = (x ^ (x >> 15)) * 2246822519u;
    im.pixels[i] = static_cast<uint8_t>(x >> 24);
  }
  write_png(png, im);
  const std::vector<uint8_t> good_png = read_bytes(png);
  write_jpeg(jpg, im);
  const std::vector<uint8_t> good_jpg = read_bytes(jpg);
  const auto starts = [](const std::string& e, const std::string& prefix) {
    return e.rfind(prefix, 0) == 0;
  };
  // Cut at several places: inside the header, and the image data.
  for (double at : {0.005, 0.3, 0.6, 0.95}) {
    std::vector<uint8_t> b = good_png;
    b.resize(static_cast<size_t>(static_cast<double>(b.size()) * at));
    write_bytes(png, b);
    const std::string pe = error_of([&] { read_image(png); });
    EXPECT_TRUE(starts(pe, "[read_image] " + png + ": bad PNG: "))
        << at << ": " << pe << ", " << good_png.size();
    b = good_jpg;
    b.resize(static_cast<size_t>(static_cast<double>(b.size()) * at));
    write_bytes(jpg, b);
    // libjpeg pads a file cut short with grey and only warns; it is refused, as PIL does.
    const std::string e = error_of([&] { read_image(jpg); });
    EXPECT_TRUE(starts(e, "[read_image] " + jpg + ": bad JPEG: ")) << at << ": " << e;
    if (at > 0.5) {
      EXPECT_EQ(e, "[read_image] " + jpg + ": bad JPEG: Premature end of JPEG file");
    }
  }
  // Only the PNG's end chunk (IEND, 12 bytes) missing: the image is all there and is read.
  write_bytes(png, std::vector<uint8_t>(good_png.begin(), good_png.end() - 12));
  EXPECT_EQ(read_image(png).pixels, im.pixels);
  // A flipped byte in the PNG's image data: its chunk's CRC fails.
  std::vector<uint8_t> b = good_png;
  b[b.size() / 2] ^= 0xFF;
  write_bytes(png, b);
  EXPECT_TRUE(starts(error_of([&] { read_image(png); }), "[read_image] " + png + ": bad PNG: "));
  // Garbage after the JPEG's header: corrupt entropy-coded data.
  b = good_jpg;
  for (size_t i = b.size() / 2; i < b.size() - 2; ++i) b[i] = static_cast<uint8_t>(i * 7);
  write_bytes(jpg, b);
  const std::string e = error_of([&] { read_image(jpg); });
  EXPECT_TRUE(e == "<no error>" || starts(e, "[read_image] " + jpg + ": bad JPEG: ")) << e;
}

TEST(ImageFolder, ClassesFromSubdirectories) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "dog");
  std::filesystem::create_directories(dir.path() / "cat");
  std::filesystem::create_directories(dir.path() / "empty");
  write_png(dir.file("cat/b.png"), gradient_image(3, 8, 8, 0));
  write_jpeg(dir.file("cat/a.JPG"), gradient_image(3, 8, 8, 0), 95);
  write_png(dir.file("dog/z.png"), gradient_image(1, 8, 8, 0));
  write_text(dir.file("dog/notes.txt"), "skipped");
  auto ds = ImageFolder::open(dir.path().string(), 3);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "empty"}));
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(ds->path(0), dir.file("cat/a.JPG"));
  EXPECT_EQ(ds->at(0).label, 0);
  EXPECT_EQ(ds->at(1).label, 0);
  const ImageItem dog = ds->at(2);
  EXPECT_EQ(dog.label, 1);
  EXPECT_EQ(dog.channels, 3);  // converted from grey
  DataLoader loader(ds, std::make_shared<ImageBatcher>(),
                    DataLoaderConfig().batch_size(3).workers(2));
  for (ImageBatch& b : loader.epoch(0)) {
    EXPECT_EQ(b.images.dims(), (std::array<int64_t, 4>{3, 3, 8, 8}));
    EXPECT_EQ(b.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
  }
  EXPECT_EQ(error_of([&] { ImageFolder::open(dir.file("nope")); }),
            "[ImageFolder] " + dir.file("nope") + ": not a directory");
  EXPECT_EQ(error_of([&] { ImageFolder::open(dir.file("empty")); }),
            "[ImageFolder] " + dir.file("empty") + ": no class subdirectories");
}

// ---- every file source ----

// A FIFO used to block the reader forever, /dev/zero to be read until memory ran out, a
// directory to fail with a bare "read error": each is refused before it is opened.
TEST(Sources, NonRegularFilesAreRefused) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.csv");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { CsvDataset::open(fifo); }),
            "[CsvDataset] " + fifo + ": not a regular file (a FIFO)");
  EXPECT_EQ(error_of([&] { read_image(fifo); }),
            "[read_image] " + fifo + ": not a regular file (a FIFO)");
  EXPECT_EQ(error_of([&] { read_idx(fifo); }),
            "[read_idx] " + fifo + ": not a regular file (a FIFO)");
  if (sqlite_available()) {
    EXPECT_EQ(error_of([&] { SqliteDataset<TabularItem>::open(fifo); }),
              "[SqliteDataset] " + fifo + ": not a regular file (a FIFO)");
    EXPECT_EQ(error_of([&] { SqliteWriter(fifo, "t"); }),
              "[SqliteWriter] " + fifo + ": not a regular file (a FIFO)");
  }
  EXPECT_EQ(error_of([&] { read_image(dir.path().string()); }),
            "[read_image] " + dir.path().string() + ": not a regular file (a directory)");
  if (std::filesystem::exists("/dev/zero")) {
    EXPECT_EQ(error_of([&] { read_image("/dev/zero"); }),
              "[read_image] /dev/zero: not a regular file (a character device)");
    EXPECT_EQ(error_of([&] { CsvDataset::open("/dev/zero"); }),
              "[CsvDataset] /dev/zero: not a regular file (a character device)");
  }
}

// ---- SQLite ----

// SQLite is optional (EMBER_WITH_SQLITE): the tests that read and write tables skip without it.
constexpr const char* kNoSqlite =
    "this Ember was built without SQLite (EMBER_WITH_SQLITE=OFF or no libsqlite3-dev)";

TEST(Sqlite, AvailableAsConfigured) { EXPECT_EQ(sqlite_available(), EMBER_TEST_HAVE_SQLITE); }

TEST(Sqlite, CodecsWorkWithOrWithoutSqlite) {
  const ImageItem image = gradient_image(3, 2, 5, 7);
  std::vector<uint8_t> blob;
  Codec<ImageItem>::encode(image, blob);
  EXPECT_EQ(blob.size(), 2 + 4 * 8 + 30u);
  const ImageItem back = Codec<ImageItem>::decode(blob);
  EXPECT_EQ(back.pixels, image.pixels);
  EXPECT_EQ(back.channels, 3);
  EXPECT_EQ(back.label, 7);
  blob.clear();
  Codec<TabularItem>::encode({{1.5f, -2.0f}, 4.0}, blob);
  const TabularItem row = Codec<TabularItem>::decode(blob);
  EXPECT_EQ(row.features, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(row.target, 4.0);
  EXPECT_EQ(error_of([&] { Codec<TabularItem>::decode(std::span<const uint8_t>(blob).first(20)); }),
            "[Codec<TabularItem>] 2 features in 2 bytes");
}

TEST(Sqlite, WithoutSqliteOpeningOrWritingATableIsAClearError) {
  if (sqlite_available()) GTEST_SKIP() << "this Ember was built with SQLite";
  TempDir dir;
  const std::string db = dir.file("data.sqlite");
  const std::string why =
      ": this Ember was built without SQLite (install libsqlite3-dev, then configure and build "
      "Ember again)";
  EXPECT_EQ(error_of([&] { SqliteDataset<ImageItem>::open(db, "train"); }),
            "[SqliteDataset] " + db + why);
  EXPECT_EQ(error_of([&] {
              write_sqlite(*in_memory(std::vector<TabularItem>{{{1.0f}, 0.0}}), db);
            }),
            "[SqliteWriter] " + db + why);
  EXPECT_FALSE(std::filesystem::exists(db));  // nothing was created
}

TEST(Sqlite, RoundTripOfImagesInTwoTables) {
  if (!sqlite_available()) GTEST_SKIP() << kNoSqlite;
  TempDir dir;
  std::vector<ImageItem> items;
  for (int64_t i = 0; i < 20; ++i) items.push_back(gradient_image(1 + 2 * (i % 2), 3, 4, i));
  auto source = in_memory(items);
  const std::string db = dir.file("data.sqlite");
  write_sqlite(*source, db, "train");
  write_sqlite(*partial(source, 0, 5), db, "test");
  auto train = SqliteDataset<ImageItem>::open(db, "train");
  auto test = SqliteDataset<ImageItem>::open(db, "test");
  ASSERT_EQ(train->size(), 20u);
  ASSERT_EQ(test->size(), 5u);
  for (size_t i = 0; i < items.size(); ++i) {
    const ImageItem back = train->at(i);
    EXPECT_EQ(back.pixels, items[i].pixels);
    EXPECT_EQ(back.channels, items[i].channels);
    EXPECT_EQ(back.label, items[i].label);
  }
  EXPECT_EQ(train->get(20), std::nullopt);
  // Rewriting a table replaces it.
  write_sqlite(*partial(source, 0, 2), db, "train");
  EXPECT_EQ(SqliteDataset<ImageItem>::open(db, "train")->size(), 2u);
}

TEST(Sqlite, ConcurrentReadsThroughTheLoader) {
  if (!sqlite_available()) GTEST_SKIP() << kNoSqlite;
  TempDir dir;
  std::vector<TabularItem> rows;
  for (int i = 0; i < 200; ++i)
    rows.push_back(
        {{static_cast<float>(i), static_cast<float>(-i), 0.5f}, static_cast<double>(i % 3)});
  write_sqlite(*in_memory(rows), dir.file("t.db"));
  auto ds = SqliteDataset<TabularItem>::open(dir.file("t.db"));
  const auto collect = [&](size_t workers) {
    DataLoader loader(ds, std::make_shared<TabularBatcher>(),
                      DataLoaderConfig().batch_size(16).shuffle(5).workers(workers));
    std::vector<float> out;
    for (TabularBatch& b : loader.epoch(2)) {
      const auto f = b.features.to_vector<float>();
      out.insert(out.end(), f.begin(), f.end());
    }
    return out;
  };
  const auto ref = collect(0);
  EXPECT_EQ(ref.size(), 600u);
  EXPECT_EQ(collect(3), ref);
}

TEST(Sqlite, WriterRollsBackWithoutCommitAndErrors) {
  if (!sqlite_available()) GTEST_SKIP() << kNoSqlite;
  TempDir dir;
  const std::string db = dir.file("w.db");
  {
    SqliteWriter w(db, "partial");
    const std::vector<uint8_t> blob{1, 2, 3};
    w.append(blob);
    EXPECT_EQ(w.count(), 1u);
  }  // destroyed before commit
  EXPECT_NE(error_of([&] { SqliteDataset<ImageItem>::open(db, "partial"); }).find("no such table"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { SqliteWriter(db, "bad name; DROP"); }),
            "[sqlite] " + db +
                ": table name \"bad name; DROP\" must be letters, digits and '_', "
                "not starting with a digit");
  EXPECT_NE(
      error_of([&] { SqliteDataset<ImageItem>::open(dir.file("missing.db")); }).find("cannot open"),
      std::string::npos);
  // A blob that is not an ImageItem.
  {
    SqliteWriter w(db, "junk");
    const std::vector<uint8_t> blob{9, 9, 9};
    w.append(blob);
    w.commit();
    EXPECT_THROW(w.append(blob), Error);
  }
  auto junk = SqliteDataset<ImageItem>::open(db, "junk");
  EXPECT_EQ(error_of([&] { junk->at(0); }),
            "[Codec<ImageItem>] not an encoded ImageItem (3 bytes)");
}
