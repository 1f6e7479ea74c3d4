// Writes the seed corpora of the idx, csv, image and cli fuzz targets with Ember's own writers:
//   ninja -C build fuzz_make_seeds && build/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus
// Each seed is a small valid input (a few hundred bytes to a few KB). The safetensors corpus came
// from corrupt_test.cpp (docs/IO.md) and is copied into cli's.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ember/data/csv.hpp"
#include "ember/data/idx.hpp"
#include "ember/data/image.hpp"
#include "ember/nn/serialize.hpp"
#include "tiny_learner.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ember;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void idx_seeds(const fs::path& dir) {
  auto array = [](data::IdxType type, std::vector<int64_t> dims) {
    data::IdxArray a;
    a.type = type;
    a.dims = std::move(dims);
    a.data.resize(static_cast<size_t>(a.numel()) * data::idx_type_size(type));
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 37);
    return a;
  };
  data::write_idx((dir / "images_u8_2x4x4").string(), array(data::IdxType::u8, {2, 4, 4}));
  data::write_idx((dir / "images_u8_2x4x4.gz").string(), array(data::IdxType::u8, {2, 4, 4}));
  data::write_idx((dir / "labels_u8_5").string(), array(data::IdxType::u8, {5}));
  data::write_idx((dir / "labels_u8_5.gz").string(), array(data::IdxType::u8, {5}));
  data::write_idx((dir / "i8_3").string(), array(data::IdxType::i8, {3}));
  data::write_idx((dir / "i16_2x2").string(), array(data::IdxType::i16, {2, 2}));
  data::write_idx((dir / "i32_2x1x2").string(), array(data::IdxType::i32, {2, 1, 2}));
  data::write_idx((dir / "f32_3x2").string(), array(data::IdxType::f32, {3, 2}));
  data::write_idx((dir / "f64_2.gz").string(), array(data::IdxType::f64, {2}));
  data::write_idx((dir / "u8_empty_0x3").string(), array(data::IdxType::u8, {0, 3}));
}

void csv_seeds(const fs::path& dir) {
  write_text(dir / "label_first.csv", "label,x,y\n0,1.5,2\n1,-3,4e2\n2,0.25,inf\n");
  write_text(dir / "no_header.csv", "1,2,3\n4,5,6\n");
  write_text(dir / "quoted.csv", "\"la,bel\",\"x \"\"1\"\"\"\n\"1\",\" 2.5\"\n0,nan\n");
  write_text(dir / "crlf_blank.csv", "label,a\r\n3,1\r\n\r\n4,-0\r\n");
  write_text(dir / "big_values.csv", "label,a\n9223372036854775807,1e308\n-1,-1e-320\n");
}

void image_seeds(const fs::path& dir) {
  auto item = [](int64_t c, int64_t h, int64_t w) {
    data::ImageItem it;
    it.channels = c;
    it.height = h;
    it.width = w;
    it.pixels.resize(static_cast<size_t>(c * h * w));
    for (size_t i = 0; i < it.pixels.size(); ++i) it.pixels[i] = static_cast<uint8_t>(i * 29);
    return it;
  };
  data::write_png((dir / "grey_5x4.png").string(), item(1, 5, 4));
  data::write_png((dir / "rgb_3x6.png").string(), item(3, 3, 6));
  data::write_png((dir / "rgba_4x4.png").string(), item(4, 4, 4));
  data::write_jpeg((dir / "grey_8x8.jpg").string(), item(1, 8, 8), 90);
  data::write_jpeg((dir / "rgb_9x7.jpg").string(), item(3, 9, 7), 75);
}

void cli_seeds(const fs::path& dir, const fs::path& safetensors_dir) {
  fuzz::TinyLearner tiny;
  save(tiny.model, (dir / "tiny_model.safetensors").string(), {{"model", "Tiny"}});
  tiny.learner->save_checkpoint((dir / "tiny_checkpoint.safetensors").string());
  for (const char* f : {"ValidFileLoads.safetensors", "seed_ember_written.safetensors"}) {
    fs::copy_file(safetensors_dir / f, dir / f, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s tests/fuzz/corpus\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* t : {"idx", "csv", "image", "cli"}) fs::create_directories(root / t);
  idx_seeds(root / "idx");
  csv_seeds(root / "csv");
  image_seeds(root / "image");
  cli_seeds(root / "cli", root / "safetensors");
  std::printf("seeds written under %s\n", root.c_str());
  return 0;
}
