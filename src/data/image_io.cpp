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
// jerror.h after jpeglib.h: it needs its types.
#include <jerror.h>
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

// The decoded size, checked from the header before anything is decoded: a 65535 x 65535 header
// would otherwise allocate up to 17 GB.
void check_size(const std::string& path, const char* format, uint64_t w, uint64_t h, uint64_t c,
                uint64_t max_bytes) {
  EMBER_CHECK(w > 0 && h > 0, "[read_image] ", path, ": bad ", format, " size ", w, " x ", h);
  EMBER_CHECK(w * h * c <= max_bytes, "[read_image] ", path, ": ", format, " of ", w, " x ", h,
              " x ", c, " channels = ", w * h * c, " bytes decoded, over the limit of ", max_bytes,
              " (read_image's max_bytes)");
}

ImageItem decode_png(const std::vector<uint8_t>& bytes, const std::string& path, int channels,
                     uint64_t max_bytes) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  EMBER_CHECK(png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) != 0,
              "[read_image] ", path, ": bad PNG: ", png.message);
  // libpng's state is freed on every way out (png_image_free is a no-op once it is freed).
  struct Free {
    png_image* png;
    ~Free() { png_image_free(png); }
  } free_png{&png};
  int c = channels;
  if (c == 0) {
    const bool color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    const bool alpha = (png.format & PNG_FORMAT_FLAG_ALPHA) != 0;
    c = color ? (alpha ? 4 : 3) : 1;
  }
  check_size(path, "PNG", png.width, png.height, static_cast<uint64_t>(c), max_bytes);
  png.format = c == 1 ? PNG_FORMAT_GRAY : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  std::vector<uint8_t> hwc(static_cast<size_t>(png.width) * png.height * static_cast<size_t>(c));
  EMBER_CHECK(png_image_finish_read(&png, nullptr, hwc.data(), 0, nullptr) != 0, "[read_image] ",
              path, ": bad PNG: ", png.message);
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
void jpeg_on_message(j_common_ptr) {}
// Warnings (corrupt but decodable data, common in real files) stay quiet, except a file cut
// short: libjpeg would pad it with grey, PIL refuses it ("image file is truncated"), so do we.
void jpeg_on_emit(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

// Only trivially destructible locals between setjmp and the decoder: a longjmp skips no
// destructor. `hwc` lives in the caller. Returns false with `err.message` set on failure.
// Returns false with `err.message` set on failure; `too_big` is set when the header's size is over
// `max_bytes` (checked before the decoder allocates anything for the image).
bool jpeg_decode(const uint8_t* data, size_t size, int channels, uint64_t max_bytes,
                 std::vector<uint8_t>& hwc, int64_t& c, int64_t& h, int64_t& w, bool& too_big,
                 JpegError& err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.output_message = jpeg_on_message;
  err.mgr.emit_message = jpeg_on_emit;
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
  c = channels;
  h = cinfo.image_height;
  w = cinfo.image_width;
  too_big = static_cast<uint64_t>(c * h * w) > max_bytes;
  if (too_big) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_start_decompress(&cinfo);
  c = cinfo.output_components;
  h = cinfo.output_height;
  w = cinfo.output_width;
  // Within the limit; a bad_alloc still leaves nothing of libjpeg's behind.
  try {
    hwc.resize(static_cast<size_t>(c * h * w));
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
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

ImageItem read_image(const std::string& path, int channels, uint64_t max_bytes) {
  EMBER_CHECK(channels == 0 || channels == 1 || channels == 3, "[read_image] ", path,
              ": channels must be 0 (as stored), 1 or 3, got ", channels);
  const std::vector<uint8_t> bytes = read_file(path, "read_image");
  const auto starts = [&](std::initializer_list<uint8_t> magic) {
    return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
  };
  if (starts({0x89, 'P', 'N', 'G'})) return decode_png(bytes, path, channels, max_bytes);
  EMBER_CHECK(starts({0xFF, 0xD8, 0xFF}), "[read_image] ", path,
              ": not a PNG or JPEG file (unknown first bytes)");
  ImageItem im;
  JpegError err;
  std::vector<uint8_t> hwc;
  bool too_big = false;
  const bool ok = jpeg_decode(bytes.data(), bytes.size(), channels, max_bytes, hwc, im.channels,
                              im.height, im.width, too_big, err);
  if (too_big)
    check_size(path, "JPEG", static_cast<uint64_t>(im.width), static_cast<uint64_t>(im.height),
               static_cast<uint64_t>(im.channels), max_bytes);
  EMBER_CHECK(ok, "[read_image] ", path, ": bad JPEG: ", static_cast<const char*>(err.message));
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
