// The backward of gelu (both forms) and silu: the one-pass kernel where the backend has it (Cuda),
// the composite rule elsewhere, both against the float64 rule, for f32, bf16 and f16; and with
// create_graph (the composite, recorded) giving the same first derivative.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include <ember/ember.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

TEST(ActivationGrad, GeluAndSiluBackwardMatchFloat64) {
  const std::vector<std::pair<std::string, std::function<DynTensor(const DynTensor&)>>> ops = {
      {"gelu", [](const DynTensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const DynTensor& x) { return gelu(x, true); }},
      {"silu", [](const DynTensor& x) { return silu(x); }}};
  const DynTensor x64 = make_input(Shape{33, 61}, DType::f64, Layout::Contiguous, -5, 5, 81);
  const DynTensor g64 = make_input(Shape{33, 61}, DType::f64, Layout::Contiguous, -1, 1, 82);
  for (const auto& [name, f] : ops) {
    const DynTensor xr = require_grad(x64);
    const DynTensor want = backward(sum(mul(f(xr), g64))).get(xr);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(name + " " + std::string(dtype_name(dt)));
      const DynTensor x = require_grad(cast(x64, dt));
      const DynTensor got = backward(sum(mul(f(x), cast(g64, dt)))).get(x);
      EXPECT_EQ(got.dtype(), dt);
      // The reference at the rounded inputs' gradient scale: |f'| <= 1.13 here.
      const double tol = dt == DType::f32 ? 1e-5 : (dt == DType::bf16 ? 4e-2 : 5e-3);
      const DynTensor xq = require_grad(cast(cast(x64, dt), DType::f64));
      const DynTensor at_rounded =
          backward(sum(mul(f(xq), cast(cast(g64, dt), DType::f64)))).get(xq);
      EXPECT_LT(max_abs_diff(got, at_rounded), tol);
      EXPECT_LT(max_abs_diff(got, want), dt == DType::f32 ? 1e-4 : 20 * tol);
      BackwardOptions o;
      o.create_graph = true;
      const DynTensor composed = backward(sum(mul(f(x), cast(g64, dt))), o).get(x);
      EXPECT_LT(max_abs_diff(composed, at_rounded), tol);
    }
  }
}

}  // namespace
