// classify: names the clothes in 28x28 grey PNG or JPEG images with the Fashion-MNIST CNN, whose
// weights are linked into this executable (ember_embed in CMakeLists.txt).
//   classify [--logits] [--weights model.safetensors] image.png...
// --weights reads another file instead; --logits also prints the ten logits of each image.
// Weights with int8 layers (ember quantize) run as models::FashionCnnInt8.
#include <cstdio>
#include <cstring>
#include <ember/data/idx.hpp>
#include <ember/data/image.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/nn/serialize.hpp>
#include <optional>
#include <string>
#include <vector>

using namespace ember;

namespace {

// The training job's input transform (tools/ember: ImageBatcherConfig().normalize(...)).
constexpr float kMean = 0.2860f, kStd = 0.3530f;

Tensor<4> pixels_to_input(const data::ImageItem& image, const std::string& path) {
  EMBER_CHECK(image.channels == 1 && image.height == 28 && image.width == 28, "[classify] ", path,
              ": the model takes 28x28 grey images, this one is ", image.width, "x", image.height);
  std::vector<float> x(image.pixels.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = (image.pixels[i] / 255.0f - kMean) / kStd;
  return Tensor<4>::from_vector<float>(x, {1, 1, 28, 28});
}

int run(int argc, char** argv) {
  bool logits = false;
  std::string weights;
  std::vector<std::string> images;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--logits") == 0) {
      logits = true;
    } else if (std::strcmp(argv[i], "--weights") == 0 && i + 1 < argc) {
      weights = argv[++i];
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "classify: unknown option %s\n", argv[i]);
      return 2;
    } else {
      images.emplace_back(argv[i]);
    }
  }
  if (images.empty()) {
    std::fprintf(stderr, "usage: classify [--logits] [--weights model.safetensors] image.png...\n");
    return 2;
  }
  const io::SafetensorsFile file =
      weights.empty() ? io::embedded_safetensors("fashion_cnn") : io::load_safetensors(weights);
  // Int8 weights (ember quantize) are told by their scales.
  const bool int8 = file.contains("fc1.weight_scale");
  std::optional<models::FashionCnn> model;
  std::optional<models::FashionCnnInt8> quantized;
  if (int8) {
    load(quantized.emplace(Device::cpu()), file);
  } else {
    load(model.emplace(Device::cpu()), file);
  }
  const std::vector<std::string>& names = data::FashionMnist::classes();
  for (const std::string& path : images) {
    const Tensor<4> x = pixels_to_input(data::read_image(path, 1), path);
    const Tensor<2> out = int8 ? (*quantized)(x) : (*model)(x);
    const std::vector<float> z = out.to_vector<float>();
    const std::vector<float> p = softmax(out, 1).to_vector<float>();
    const auto k = static_cast<size_t>(out.argmax(1).to_vector<int64_t>()[0]);
    std::printf("%s: %s (%.1f%%)", path.c_str(), names[k].c_str(), 100.0 * p[k]);
    if (logits) {
      for (float v : z) std::printf(" %.9g", static_cast<double>(v));
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 1;
  }
}
