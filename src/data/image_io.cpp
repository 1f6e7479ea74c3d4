// PNG through libpng's simplified API (its errors come back as messages, no longjmp), JPEG through
// libjpeg(-turbo) with an error manager that longjmps out of the decoder. Files are read whole and
// decoded from memory; the format is chosen by the first bytes.
#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>

// jpeglib.h uses size_t and FILE without including their headers.
#include <jpeglib.h>
#include <png.h>

#include "ember/core/error.hpp"
#include "ember/data/image.hpp"
#include "file_util.hpp"

namespace ember::data {

namespace {

// Interleaved (H, W, C) <-> channels-first (C, H, W).
std::vector<uint8_t> to_planar(const uint8_t* hwc, int64_t c, int64_t h, int64_t w) {
  std::vector<uint8_t> out(static_cast<size_t>(c * h * w));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) out[static_cast<size_t>((k * h + y) * w + x)] = *hwc++;
  return out;
}
std::vector<uint8_t> to_interleaved(const ImageItem& im) {
  std::vector<uint8_t> out(im.pixels.size());
  size_t i = 0;
  for (int64_t y = 0; y < im.height; ++y)
    for (int64_t x = 0; x < im.width; ++x)
      for (int64_t k = 0; k < im.channels; ++k) out[i++] = im.at(k, y, x);
  return out;
}

void check_item(const char* what, const std::string& path, const ImageItem& im, bool allow4) {
  EMBER_CHECK(im.channels == 1 || im.channels == 3 || (allow4 && im.channels == 4), "[", what, "] ",
              path, ": cannot write ", im.channels, " channels (", allow4 ? "1, 3 or 4" : "1 or 3",
              ")");
  EMBER_CHECK(im.height > 0 && im.width > 0 && im.height <= 65535 && im.width <= 65535, "[", what,
              "] ", path, ": bad image size ", im.height, " x ", im.width);
  EMBER_CHECK(static_cast<int64_t>(im.pixels.size()) == im.channels * im.height * im.width, "[",
              what, "] ", path, ": ", im.pixels.size(), " pixel values for a ", im.channels, " x ",
              im.height, " x ", im.width, " image");
}

ImageItem decode_png(const std::vector<uint8_t>& bytes, const std::string& path, int channels) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  EMBER_CHECK(png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) != 0,
              "[read_image] ", path, ": bad PNG: ", png.message);
  int c = channels;
  if (c == 0) {
    const bool color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    const bool alpha = (png.format & PNG_FORMAT_FLAG_ALPHA) != 0;
    c = color ? (alpha ? 4 : 3) : 1;
  }
  png.format = c == 1 ? PNG_FORMAT_GRAY : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  std::vector<uint8_t> hwc(PNG_IMAGE_SIZE(png));
  if (png_image_finish_read(&png, nullptr, hwc.data(), 0, nullptr) == 0) {
    const std::string message = png.message;
    png_image_free(&png);
    EMBER_FAIL("[read_image] ", path, ": bad PNG: ", message);
  }
  ImageItem im;
  im.channels = c;
  im.height = png.height;
  im.width = png.width;
  im.pixels = to_planar(hwc.data(), c, im.height, im.width);
  return im;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}
void jpeg_on_message(j_common_ptr) {}  // warnings (corrupt but decodable data) stay quiet

// Only trivially destructible locals between setjmp and the decoder: a longjmp skips no
// destructor. `hwc` lives in the caller. Returns false with `err.message` set on failure.
bool jpeg_decode(const uint8_t* data, size_t size, int channels, std::vector<uint8_t>& hwc,
                 int64_t& c, int64_t& h, int64_t& w, JpegError& err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.output_message = jpeg_on_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (channels == 0) channels = cinfo.num_components == 1 ? 1 : 3;
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(err.message, sizeof err.message, "CMYK JPEGs are not supported");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  c = cinfo.output_components;
  h = cinfo.output_height;
  w = cinfo.output_width;
  hwc.resize(static_cast<size_t>(c * h * w));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = hwc.data() + static_cast<size_t>(cinfo.output_scanline) * c * w;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

bool jpeg_encode(std::FILE* file, const uint8_t* hwc, int c, int h, int w, int quality,
                 JpegError& err) {
  jpeg_compress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.output_message = jpeg_on_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto row = const_cast<JSAMPROW>(hwc + static_cast<size_t>(cinfo.next_scanline) * c * w);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

ImageItem read_image(const std::string& path, int channels) {
  EMBER_CHECK(channels == 0 || channels == 1 || channels == 3, "[read_image] ", path,
              ": channels must be 0 (as stored), 1 or 3, got ", channels);
  const std::vector<uint8_t> bytes = read_file(path, "read_image");
  const auto starts = [&](std::initializer_list<uint8_t> magic) {
    return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
  };
  if (starts({0x89, 'P', 'N', 'G'})) return decode_png(bytes, path, channels);
  EMBER_CHECK(starts({0xFF, 0xD8, 0xFF}), "[read_image] ", path,
              ": not a PNG or JPEG file (unknown first bytes)");
  ImageItem im;
  JpegError err;
  std::vector<uint8_t> hwc;
  EMBER_CHECK(
      jpeg_decode(bytes.data(), bytes.size(), channels, hwc, im.channels, im.height, im.width, err),
      "[read_image] ", path, ": bad JPEG: ", static_cast<const char*>(err.message));
  im.pixels = to_planar(hwc.data(), im.channels, im.height, im.width);
  return im;
}

void write_png(const std::string& path, const ImageItem& image) {
  check_item("write_png", path, image, true);
  const std::vector<uint8_t> hwc = to_interleaved(image);
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1   ? PNG_FORMAT_GRAY
               : image.channels == 3 ? PNG_FORMAT_RGB
                                     : PNG_FORMAT_RGBA;
  EMBER_CHECK(png_image_write_to_file(&png, path.c_str(), 0, hwc.data(), 0, nullptr) != 0,
              "[write_png] ", path, ": ", png.message);
}

void write_jpeg(const std::string& path, const ImageItem& image, int quality) {
  check_item("write_jpeg", path, image, false);
  EMBER_CHECK(quality >= 1 && quality <= 100, "[write_jpeg] ", path,
              ": quality must be in 1..100, got ", quality);
  const std::vector<uint8_t> hwc = to_interleaved(image);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  EMBER_CHECK(file != nullptr, "[write_jpeg] ", path, ": cannot create: ", std::strerror(errno));
  JpegError err;
  const bool ok =
      jpeg_encode(file, hwc.data(), static_cast<int>(image.channels),
                  static_cast<int>(image.height), static_cast<int>(image.width), quality, err);
  const bool closed = std::fclose(file) == 0;
  EMBER_CHECK(ok, "[write_jpeg] ", path, ": ", static_cast<const char*>(err.message));
  EMBER_CHECK(closed, "[write_jpeg] ", path, ": write failed: ", std::strerror(errno));
}

}  // namespace ember::data
