// The vision layers' configs (their forwards are inline in the header).
#include "ember/nn/vision.hpp"

#include <utility>

#include "config_json.hpp"
#include "ember/core/error.hpp"

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

namespace {

// PyTorch's mode strings.
constexpr std::pair<InterpolateMode, const char*> kModes[] = {
    {InterpolateMode::Nearest, "nearest"},   {InterpolateMode::Linear, "linear"},
    {InterpolateMode::Bilinear, "bilinear"}, {InterpolateMode::NearestExact, "nearest-exact"},
    {InterpolateMode::Bicubic, "bicubic"},   {InterpolateMode::Trilinear, "trilinear"},
    {InterpolateMode::Area, "area"}};

}  // namespace

DynTensor Upsample::forward(const DynTensor& x) const {
  EMBER_CHECK(size.empty() != scale_factor.empty(),
              "[Upsample] needs exactly one of size and scale_factor, got ", size.size(),
              " sizes and ", scale_factor.size(), " scale factors");
  return size.empty() ? interpolate(x, scale_factor, mode, align_corners)
                      : interpolate(x, size, mode, align_corners);
}

std::string Upsample::to_json() const {
  const char* name = "nearest";
  for (const auto& [m, n] : kModes) {
    if (m == mode) name = n;
  }
  detail::JsonWriter w;
  if (!size.empty()) w.field("size", size);
  if (!scale_factor.empty()) w.field("scale_factor", scale_factor);
  return w.field("mode", name).field("align_corners", align_corners).str();
}
Upsample Upsample::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Upsample");
  Upsample u;
  u.size = r.integers("size", {});
  u.scale_factor = r.numbers("scale_factor", {});
  const std::string name = r.string("mode", "nearest");
  bool found = false;
  for (const auto& [m, n] : kModes) {
    if (name == n) {
      u.mode = m;
      found = true;
    }
  }
  EMBER_CHECK(found, "[Upsample] unknown mode \"", name, "\"");
  u.align_corners = r.boolean("align_corners", false);
  return u;
}

template <int N>
std::string AdaptiveMaxPool<N>::to_json() const {
  return detail::JsonWriter().field("output_size", output_size).str();
}
template <int N>
AdaptiveMaxPool<N> AdaptiveMaxPool<N>::from_json(const std::string& json) {
  return AdaptiveMaxPool<N>{
      detail::JsonReader(json, "AdaptiveMaxPool").integers("output_size", {})};
}

template struct AdaptiveMaxPool<1>;
template struct AdaptiveMaxPool<2>;
template struct AdaptiveMaxPool<3>;

std::string CosineSimilarity::to_json() const {
  return detail::JsonWriter().field("dim", dim).field("eps", eps).str();
}
CosineSimilarity CosineSimilarity::from_json(const std::string& json) {
  const detail::JsonReader r(json, "CosineSimilarity");
  return CosineSimilarity{r.integer("dim", 1), r.number("eps", 1e-8)};
}

std::string PairwiseDistance::to_json() const {
  return detail::JsonWriter().field("p", p).field("eps", eps).field("keepdim", keepdim).str();
}
PairwiseDistance PairwiseDistance::from_json(const std::string& json) {
  const detail::JsonReader r(json, "PairwiseDistance");
  return PairwiseDistance{r.number("p", 2.0), r.number("eps", 1e-6), r.boolean("keepdim", false)};
}

}  // namespace ember::nn
