// The vision layers' configs (their forwards are inline in the header).
#include "ember/nn/vision.hpp"

#include "config_json.hpp"

namespace ember::nn {

std::string PixelShuffle::to_json() const {
  return detail::JsonWriter().field("upscale_factor", upscale_factor).str();
}
PixelShuffle PixelShuffle::from_json(const std::string& json) {
  return PixelShuffle{detail::JsonReader(json, "PixelShuffle").integer("upscale_factor")};
}

std::string PixelUnshuffle::to_json() const {
  return detail::JsonWriter().field("downscale_factor", downscale_factor).str();
}
PixelUnshuffle PixelUnshuffle::from_json(const std::string& json) {
  return PixelUnshuffle{detail::JsonReader(json, "PixelUnshuffle").integer("downscale_factor")};
}

std::string Unfold::to_json() const {
  return detail::JsonWriter()
      .field("kernel_size", kernel_size)
      .field("dilation", dilation)
      .field("padding", padding)
      .field("stride", stride)
      .str();
}
Unfold Unfold::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Unfold");
  return Unfold{r.integers("kernel_size", {}), r.integers("dilation", {1}),
                r.integers("padding", {0}), r.integers("stride", {1})};
}

std::string Fold::to_json() const {
  return detail::JsonWriter()
      .field("output_size", output_size)
      .field("kernel_size", kernel_size)
      .field("dilation", dilation)
      .field("padding", padding)
      .field("stride", stride)
      .str();
}
Fold Fold::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Fold");
  return Fold{r.integers("output_size", {}), r.integers("kernel_size", {}),
              r.integers("dilation", {1}), r.integers("padding", {0}), r.integers("stride", {1})};
}

}  // namespace ember::nn
