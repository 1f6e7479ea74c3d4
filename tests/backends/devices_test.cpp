// Devices and transfers between backends: names, counts, the default device, x.to(dev) and
// module.to(dev) between the Cpu and LibTorch, and ops that mix devices. The tables themselves
// run once per backend (ember_device_test); this file checks what lies between backends.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>

#include <cstdlib>

#include "internal.hpp"  // src/tensor: detail::backend_for
#include "plugin.hpp"    // src/tensor: detail::load_plugin

namespace ember {
namespace {

bool have_libtorch() { return device_count(DeviceType::LibTorch) > 0; }

TEST(Devices, NamesAndCounts) {
  EXPECT_EQ(device_count(DeviceType::Cpu), 1);
  if (device_count(DeviceType::Cuda) == 0) {
    EXPECT_THROW(Device::cuda(0), Error);
  }
  EXPECT_EQ(to_string(Device::cpu()), "cpu");
  if (!have_libtorch()) {
    EXPECT_THROW(Device::libtorch(), Error);
    GTEST_SKIP() << "this Ember was built without the LibTorch backend";
  }
  EXPECT_EQ(device_count(DeviceType::LibTorch), 1);
  EXPECT_EQ(to_string(Device::libtorch()), "libtorch");
  EXPECT_EQ(Device::parse("libtorch"), Device::libtorch());
  EXPECT_THROW(Device::libtorch(1), Error);
}

TEST(Devices, DefaultDevice) {
  const Device saved = default_device();
  EXPECT_EQ(saved, Device::cpu());
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  set_default_device(Device::libtorch());
  EXPECT_EQ(Tensor<2>::zeros({2, 3}).device(), Device::libtorch());
  EXPECT_EQ(nn::Linear(3, 4).weight.dyn().device(), Device::libtorch());
  set_default_device(saved);
  EXPECT_EQ(Tensor<2>::zeros({2, 3}).device(), Device::cpu());
}

TEST(Devices, ToAndBackKeepsValuesOfEveryDtypeAndLayout) {
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                      DType::i8, DType::u8, DType::boolean}) {
    const DynTensor base = cast(arange(0, 24, 1, DType::f32), dtype);
    // Contiguous, transposed and stepped sources: the copy reads through the strides.
    for (const DynTensor& x : {reshape(base, {4, 6}), transpose(reshape(base, {4, 6}), 0, 1),
                               slice(reshape(base, {4, 6}), 1, 0, 6, 2)}) {
      const DynTensor on = to_device(x, Device::libtorch());
      EXPECT_EQ(on.device(), Device::libtorch());
      EXPECT_EQ(on.dtype(), dtype);
      EXPECT_EQ(on.to_vector<double>(), x.to_vector<double>()) << dtype_name(dtype);
      const DynTensor back = to_device(transpose(on, 0, 1), Device::cpu());
      EXPECT_EQ(back.device(), Device::cpu());
      EXPECT_EQ(back.to_vector<double>(), transpose(x, 0, 1).to_vector<double>())
          << dtype_name(dtype);
    }
  }
}

TEST(Devices, GradientsFlowAcrossATransfer) {
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  auto w = Tensor<1>::from_vector<float>({1, 2, 3}, {3}).require_grad();
  const auto loss = (w.to(Device::libtorch()) * 2.0f).sum();
  EXPECT_EQ(loss.device(), Device::libtorch());
  const Gradients grads = loss.backward();
  const Tensor<1> g = w.grad(grads);
  EXPECT_EQ(g.device(), Device::cpu());
  EXPECT_EQ(g.to_vector<float>(), std::vector<float>({2, 2, 2}));
}

TEST(Devices, MixingDevicesInOneOpNamesBoth) {
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  const auto a = Tensor<1>::ones({3});
  const auto b = Tensor<1>::ones({3}, Device::libtorch());
  try {
    (void)(a + b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[add] tensors are on different devices: cpu and libtorch");
  }
  EXPECT_THROW((void)matmul(a.reshape({1, 3}), b.reshape({3, 1})), Error);
}

TEST(Devices, ModuleToMovesEveryParameterAndGivesTheSameOutputs) {
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  Generator gen(3);
  models::FashionCnn model(Device::cpu(), &gen);
  const auto x = Tensor<4>::randn({2, 1, 28, 28}, Device::cpu(), &gen);
  model.eval();
  const std::vector<float> want = model(x).to_vector<float>();
  model.to(Device::libtorch());
  for (const nn::NamedTensor& t : nn::named_tensors(nn::module_tree(model))) {
    EXPECT_EQ(t.slot->dyn().device(), Device::libtorch()) << t.path;
  }
  const std::vector<float> got = model(x.to(Device::libtorch())).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

// ATen's own errors (here: an output it cannot resize) come out as ember::Error naming the op.
TEST(Devices, LibTorchErrorsAreEmberErrorsNamingTheOp) {
  if (!have_libtorch()) GTEST_SKIP() << "no LibTorch backend";
  Backend& be = detail::backend_for(Device::libtorch());
  const DynTensor a = ones(Shape{2, 3}, DType::f32, Device::libtorch());
  const DynTensor out = zeros(Shape{4}, DType::f32, Device::libtorch());
  try {
    be.binary(BinaryOp::Add, a.raw(), a.raw(), out.raw());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 16), "[add] libtorch: ") << e.what();
  }
  EXPECT_EQ(sum(a).item<float>(), 6.0f);  // and the backend carries on
}

// A plugin that cannot be loaded is a clear error naming every path tried and why, and the
// variable that points at the right one (hosted builds without the plugin hit this).
TEST(Devices, APluginThatCannotLoadIsAClearError) {
  ::setenv("EMBER_TEST_NO_PLUGIN", "/nonexistent/libember_nothing.so", 1);
  // libm loads, but has no backend entry point.
  const detail::LoadedPlugin p =
      detail::load_plugin("EMBER_TEST_NO_PLUGIN", {"libm.so.6"}, "ember_libtorch_backend");
  EXPECT_EQ(p.backend, nullptr);
  EXPECT_NE(p.why.find("/nonexistent/libember_nothing.so"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("libm.so.6 has no ember_libtorch_backend"), std::string::npos) << p.why;
  try {
    detail::require_plugin(p, "libtorch", "EMBER_LIBTORCH_PLUGIN");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[device] libtorch: cannot load its backend's plugin (", 0), 0u) << what;
    EXPECT_NE(what.find("set EMBER_LIBTORCH_PLUGIN"), std::string::npos) << what;
  }
  ::unsetenv("EMBER_TEST_NO_PLUGIN");
}

}  // namespace
}  // namespace ember
