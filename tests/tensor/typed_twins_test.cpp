// The typed Tensor<D> wrappers that are written by hand (include/ember/tensor/conv_ops.hpp) must
// take exactly the parameters of the DynTensor op they forward to: a parameter added to one and
// not the other (as conv2d's relu flag once was) stops this file from compiling. The elementwise
// wrappers need no check: they are generated from the registry rows.
#include <type_traits>

#include "ember/ember.hpp"

namespace ember {
namespace {

// The DynTensor signature a typed signature stands for: every Tensor<D, K> becomes a DynTensor.
template <class T>
struct Erased {
  using type = T;
};
template <int D, class K>
struct Erased<Tensor<D, K>> {
  using type = DynTensor;
};
template <int D, class K>
struct Erased<const Tensor<D, K>&> {
  using type = const DynTensor&;
};
template <int D, class K>
struct Erased<TypedValuesIndices<D, K>> {
  using type = ValuesIndices;
};
template <class F>
struct ErasedSignature;
template <class R, class... Args>
struct ErasedSignature<R (*)(Args...)> {
  using type = typename Erased<R>::type (*)(typename Erased<Args>::type...);
};
template <auto typed>
using Twin = typename ErasedSignature<decltype(typed)>::type;

// static_cast picks the DynTensor overload with exactly these parameters, or fails to compile.
#define EMBER_EXPECT_TWIN(typed, dyn) \
  static_assert(std::is_same_v<Twin<&typed>, decltype(static_cast<Twin<&typed>>(&dyn))>)

// Overloaded typed names (conv1d/2d/3d also take Padding::Same / Valid) are named with their
// signature: a parameter added to one side only still fails to compile.
#define EMBER_EXPECT_TWIN_OF(Sig, typed, dyn)                             \
  static_assert(std::is_same_v<Sig, decltype(static_cast<Sig>(&typed))>); \
  static_assert(std::is_same_v<typename ErasedSignature<Sig>::type,       \
                               decltype(static_cast<typename ErasedSignature<Sig>::type>(&dyn))>)
template <int D, int W>
using ConvSig = Tensor<D> (*)(const Tensor<D>&, const Tensor<W>&, const Tensor<1>&,
                              const SpatialArg&, const SpatialArg&, const SpatialArg&, int64_t,
                              bool);
template <int D, int W>
using ConvPaddingSig = Tensor<D> (*)(const Tensor<D>&, const Tensor<W>&, const Tensor<1>&,
                                     const SpatialArg&, Padding, const SpatialArg&, int64_t);
using Conv1dSig = ConvSig<3, 3>;
using Conv2dSig = ConvSig<4, 4>;
using Conv3dSig = ConvSig<5, 5>;
using Conv1dPaddingSig = ConvPaddingSig<3, 3>;
using Conv2dPaddingSig = ConvPaddingSig<4, 4>;
using Conv3dPaddingSig = ConvPaddingSig<5, 5>;
EMBER_EXPECT_TWIN_OF(Conv1dSig, conv1d<3>, conv1d);
EMBER_EXPECT_TWIN_OF(Conv2dSig, conv2d<4>, conv2d);
EMBER_EXPECT_TWIN_OF(Conv3dSig, conv3d<5>, conv3d);
EMBER_EXPECT_TWIN_OF(Conv1dPaddingSig, conv1d<3>, conv1d);
EMBER_EXPECT_TWIN_OF(Conv2dPaddingSig, conv2d<4>, conv2d);
EMBER_EXPECT_TWIN_OF(Conv3dPaddingSig, conv3d<5>, conv3d);
EMBER_EXPECT_TWIN(conv_transpose1d<3>, conv_transpose1d);
EMBER_EXPECT_TWIN(conv_transpose2d<4>, conv_transpose2d);
EMBER_EXPECT_TWIN(conv_transpose3d<5>, conv_transpose3d);
EMBER_EXPECT_TWIN(max_pool1d<3>, max_pool1d);
EMBER_EXPECT_TWIN(max_pool2d<4>, max_pool2d);
EMBER_EXPECT_TWIN(max_pool1d_with_indices<3>, max_pool1d_with_indices);
EMBER_EXPECT_TWIN(max_pool2d_with_indices<4>, max_pool2d_with_indices);
EMBER_EXPECT_TWIN(avg_pool1d<3>, avg_pool1d);
EMBER_EXPECT_TWIN(avg_pool2d<4>, avg_pool2d);
EMBER_EXPECT_TWIN(adaptive_avg_pool1d<3>, adaptive_avg_pool1d);
EMBER_EXPECT_TWIN(adaptive_avg_pool2d<4>, adaptive_avg_pool2d);

// Statistics (statistics_ops.hpp): the wrappers that take their op's parameters one to one.
EMBER_EXPECT_TWIN((cummax<2, Float>), cummax);
EMBER_EXPECT_TWIN((cummin<2, Int>), cummin);
EMBER_EXPECT_TWIN((logcumsumexp<2, Float>), logcumsumexp);

// Matrix and shape ops (include/ember/tensor/shape_ops.hpp).
EMBER_EXPECT_TWIN((tril<2, Float>), tril);
EMBER_EXPECT_TWIN((triu<3, Float>), triu);
EMBER_EXPECT_TWIN(bmm<Float>, bmm);
EMBER_EXPECT_TWIN((baddbmm<3, Float>), baddbmm);
EMBER_EXPECT_TWIN((addmm<1, Float>), addmm);
EMBER_EXPECT_TWIN((roll<2, Float>), roll);
EMBER_EXPECT_TWIN((kron<2, 1, Float>), kron);
EMBER_EXPECT_TWIN((diagonal<3, Float>), diagonal);
EMBER_EXPECT_TWIN(trace<Float>, trace);
EMBER_EXPECT_TWIN((cross<2, Float>), cross);
// Vision and distance ops (include/ember/tensor/vision_ops.hpp).
EMBER_EXPECT_TWIN(normalize<3>, normalize);
EMBER_EXPECT_TWIN(cosine_similarity<3>, cosine_similarity);
EMBER_EXPECT_TWIN(cdist<3>, cdist);
EMBER_EXPECT_TWIN(pixel_shuffle<4>, pixel_shuffle);
EMBER_EXPECT_TWIN(pixel_unshuffle<4>, pixel_unshuffle);
EMBER_EXPECT_TWIN(unfold<4>, unfold);
EMBER_EXPECT_TWIN(fold<3>, fold);
EMBER_EXPECT_TWIN(max_pool3d<5>, max_pool3d);
EMBER_EXPECT_TWIN(max_pool3d_with_indices<5>, max_pool3d_with_indices);
EMBER_EXPECT_TWIN(adaptive_max_pool1d<3>, adaptive_max_pool1d);
EMBER_EXPECT_TWIN(adaptive_max_pool2d<4>, adaptive_max_pool2d);
EMBER_EXPECT_TWIN(adaptive_max_pool3d<5>, adaptive_max_pool3d);
EMBER_EXPECT_TWIN(adaptive_max_pool2d_with_indices<4>, adaptive_max_pool2d_with_indices);

}  // namespace
}  // namespace ember
