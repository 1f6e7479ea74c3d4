// Max pooling's backward against a scatter of the same gradient to the same argmax indices,
// bit for bit, with i64 indices (the API's) and i32 (what max_pool2d keeps for its gradient): the
// 2x2 / stride-2 vector path (whole vectors of windows, a scalar tail, odd sizes whose last row and
// column are in no window) and the general loop beside it.
#include <cmath>
#include <cstring>
#include <string>

#include "test_util.hpp"

namespace ember::test {
namespace {

TEST(PoolKernels, MaxPoolBackwardIsTheScatterOfTheGradient) {
  // Bit for bit where windows overlap needs the ordered kernel: atomics (Cuda's default) add the
  // overlaps in a varying order.
  const bool was_deterministic = deterministic_algorithms();
  use_deterministic_algorithms(true);
  struct Restore {
    bool on;
    ~Restore() { use_deterministic_algorithms(on); }
  } restore{was_deterministic};
  struct Case {
    Shape x;
    int64_t k, s;
  };
  const std::vector<Case> cases = {
      {Shape{3, 4, 26, 26}, 2, 2},  // the CNN's first pool: 13 = 8 + a tail of 5
      {Shape{2, 3, 27, 35}, 2, 2},  // odd: row 26 and column 34 in no window; 17 = 16 + 1
      {Shape{1, 2, 6, 16}, 2, 2},   // exactly one vector a row
      {Shape{2, 2, 11, 11}, 2, 2},  // rows of 5: the general loop
      {Shape{2, 2, 9, 20}, 3, 2},   // overlapping windows: the general loop
  };
  uint32_t seed = 5100;
  for (const Case& c : cases) {
    for (const DType index_dtype : {DType::i64, DType::i32}) {
      const std::string what =
          to_string(c.x) + " k" + std::to_string(c.k) + " " + std::string(dtype_name(index_dtype));
      const DynTensor x = make_input(c.x, DType::f32, Layout::Contiguous, -3, 3, seed++);
      PoolParams p;
      p.spatial = 2;
      p.kernel[0] = p.kernel[1] = c.k;
      p.stride[0] = p.stride[1] = c.s;
      const ValuesIndices r = max_pool(x, p, index_dtype);
      ASSERT_EQ(r.indices.dtype(), index_dtype) << what;
      // The same maxima and positions whichever index type holds them.
      EXPECT_EQ(r.values.to_vector<double>(), max_pool(x, p).values.to_vector<double>()) << what;
      EXPECT_EQ(r.indices.to_vector<int64_t>(), max_pool(x, p).indices.to_vector<int64_t>())
          << what;
      std::vector<double> gv =
          make_input(r.values.shape(), DType::f32, Layout::Contiguous, -2, 2, seed++)
              .to_vector<double>();
      gv[1] = -0.0;  // lands as +0, as 0 + (-0) does
      gv[gv.size() - 1] = NAN;
      const DynTensor g = cast(from_data(TensorData::from(gv, r.values.shape())), DType::f32);
      const std::vector<double> got = max_pool_backward(g, r.indices, c.x, p).to_vector<double>();
      const std::vector<int64_t> idx = r.indices.to_vector<int64_t>();
      const int64_t plane_in = c.x[2] * c.x[3], plane_out = r.values.size(2) * r.values.size(3);
      // Summed in float in the kernel's order, where overlapping windows add up.
      std::vector<float> want(got.size(), 0.0f);
      for (size_t o = 0; o < idx.size(); ++o) {
        const int64_t plane = static_cast<int64_t>(o) / plane_out;
        want[static_cast<size_t>(plane * plane_in + idx[o])] += static_cast<float>(gv[o]);
      }
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
          continue;
        }
        EXPECT_EQ(got[i], want[i]) << what << " element " << i;
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ember::test
