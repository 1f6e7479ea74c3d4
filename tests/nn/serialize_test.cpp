// save(model, path) / load(model, path): round trips, strict and partial loading, dtype
// conversion, and PyTorch's state_dict (saved by Python's safetensors) loaded by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <filesystem>

#include "autodiff/fixture.hpp"

using namespace ember;

namespace {

struct Mlp {
  nn::Linear fc1;
  nn::BatchNorm1d bn;
  nn::Linear fc2;
  EMBER_MODULE(Mlp, fc1, bn, fc2)
  Tensor<2> forward(const Tensor<2>& x) const { return fc2(relu(bn(fc1(x)))); }
};

Mlp make_mlp() { return Mlp{nn::Linear(8, 16), nn::BatchNorm1d(16), nn::Linear(16, 4)}; }

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace

TEST(Serialize, RoundTripByPath) {
  Mlp a = make_mlp();
  a.forward(Tensor<2>::randn({6, 8}));  // moves the running statistics
  const std::string path = temp_path("ember_serialize_roundtrip.safetensors");
  save(a, path);
  Mlp b = make_mlp();
  const nn::LoadReport r = load(b, path);
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.loaded.size(), 9u);
  for (const auto& [ta, tb] : {std::pair{a.fc1.weight.dyn(), b.fc1.weight.dyn()},
                               {a.bn.running_mean->dyn(), b.bn.running_mean->dyn()},
                               {a.bn.num_batches_tracked->dyn(), b.bn.num_batches_tracked->dyn()},
                               {a.fc2.bias->dyn(), b.fc2.bias->dyn()}}) {
    EXPECT_TRUE(equal(ta, tb));
  }
  // Loaded parameters are still trainable leaves with their old ids.
  EXPECT_TRUE(b.fc1.weight.value().requires_grad());
  auto x = Tensor<2>::randn({3, 8});
  EXPECT_TRUE(allclose(a.valid().forward(x), b.valid().forward(x)));
  std::remove(path.c_str());
}

namespace {
// (Modules cannot be local classes: a local class may not have member templates.)
struct Other {
  nn::Linear fc1;
  nn::Linear fc3;
  EMBER_MODULE(Other, fc1, fc3)
};
}  // namespace

TEST(Serialize, StrictLoadListsEveryProblemAndLoadsNothing) {
  const std::string path = temp_path("ember_serialize_strict.safetensors");
  save(make_mlp(), path);
  Other other{nn::Linear(8, 15), nn::Linear(2, 2)};
  const DynTensor before = other.fc1.bias->dyn();
  try {
    load(other, path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("missing from the file: fc3.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not in the module: bn.running_mean"), std::string::npos) << msg;
    EXPECT_NE(msg.find("shape mismatch: fc1.weight is [16, 8] in the file, [15, 8] in the module"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
  EXPECT_TRUE(equal(other.fc1.bias->dyn(), before));  // untouched

  // Partial: the matching ones load, the report lists the rest.
  Other partial{nn::Linear(8, 16), nn::Linear(2, 2)};
  const nn::LoadReport r = load(partial, path, {.strict = false});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  EXPECT_EQ(r.missing, (std::vector<std::string>{"fc3.weight", "fc3.bias"}));
  EXPECT_EQ(r.unexpected.size(), 7u);
  EXPECT_THROW(load(partial, temp_path("ember_no_such_file.safetensors")), Error);
  std::remove(path.c_str());
}

TEST(Serialize, ConvertsDtypeOnLoad) {
  Mlp wide = make_mlp();
  wide.to(DType::f64);
  const std::string path = temp_path("ember_serialize_dtype.safetensors");
  save(wide, path);
  Mlp narrow = make_mlp();  // f32
  load(narrow, path);
  EXPECT_EQ(narrow.fc1.weight.dyn().dtype(), DType::f32);
  EXPECT_TRUE(
      allclose(cast(narrow.fc1.weight.dyn(), DType::f64), wide.fc1.weight.dyn(), 1e-6, 1e-7));
  EXPECT_EQ(narrow.bn.num_batches_tracked->dyn().dtype(), DType::i64);
  std::remove(path.c_str());
}

TEST(Serialize, LoadsPyTorchStateDict) {
  // fixtures/make_torch_state_dict.py: torch.nn modules named as this struct's fields.
  Mlp model = make_mlp();
  const nn::LoadReport r = load(model, EMBER_NN_FIXTURES "/torch_mlp.safetensors");
  EXPECT_EQ(r.loaded.size(), 9u);
  auto io = test::load_fixture(EMBER_NN_FIXTURES "/torch_mlp.txt");
  model.eval();
  const auto y = model.forward(Tensor<2>(cast(io.at("x"), DType::f32)));
  EXPECT_TRUE(allclose(y.dyn(), cast(io.at("y"), DType::f32), 1e-5, 1e-6))
      << "max |diff| " << amax(abs(sub(y.dyn(), cast(io.at("y"), DType::f32)))).item<float>();
}

namespace {
struct OneLayer {
  nn::Linear fc1;
  EMBER_MODULE(OneLayer, fc1)
};
}  // namespace

// ember_embed (tests/CMakeLists.txt) links fixtures/torch_mlp.safetensors into this binary.
TEST(Embedded, FileHoldsTheBytesOfTheFileEmbedded) {
  const std::span<const unsigned char> bytes = embedded_file("torch_mlp");
  std::FILE* f = std::fopen(EMBER_NN_FIXTURES "/torch_mlp.safetensors", "rb");
  ASSERT_NE(f, nullptr);
  std::vector<unsigned char> on_disk(bytes.size() + 1);
  const size_t n = std::fread(on_disk.data(), 1, on_disk.size(), f);
  std::fclose(f);
  ASSERT_EQ(n, bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), on_disk.begin()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 64, 0u);
  EXPECT_EQ(embedded_files(), std::vector<std::string>{"torch_mlp"});
  try {
    embedded_file("resnet");
    FAIL() << "no error for a name never embedded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'resnet' (embedded: torch_mlp)"), std::string::npos)
        << e.what();
  }
}

TEST(Embedded, WeightsLoadInPlaceAndMatchTheFile) {
  Mlp from_file = make_mlp();
  Mlp embedded = make_mlp();
  load(from_file, EMBER_NN_FIXTURES "/torch_mlp.safetensors");
  const nn::LoadReport r = load(embedded, io::embedded_safetensors("torch_mlp"));
  EXPECT_EQ(r.loaded.size(), 9u);
  from_file.eval();
  embedded.eval();
  auto x = Tensor<2>::randn({5, 8});
  EXPECT_TRUE(equal(from_file.forward(x).dyn(), embedded.forward(x).dyn()));
  if (default_device().type == DeviceType::Cpu) {  // zero-copy: the parameter is the bytes
    const std::span<const unsigned char> bytes = embedded_file("torch_mlp");
    const auto* w = static_cast<const unsigned char*>(embedded.fc1.weight.dyn().raw().data());
    EXPECT_TRUE(w >= bytes.data() && w < bytes.data() + bytes.size());
  }
  // An error names the embedded file.
  OneLayer wrong{nn::Linear(8, 3)};
  try {
    load(wrong, io::embedded_safetensors("torch_mlp"));
    FAIL() << "no error for a module that does not match";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedded file 'torch_mlp'"), std::string::npos)
        << e.what();
  }
}

TEST(Embedded, WeightsLoadedInPlaceCanBeUpdatedInPlace) {
  // On an OS the bytes are in .data: an in-place write (an optimizer step) must not fault.
  auto file = io::view_safetensors(embedded_file("torch_mlp"), "torch_mlp");
  DynTensor w = file.tensor("fc2.bias", Device::cpu());
  const DynTensor original = clone(w);
  const DynTensor target = full_like(w, 0.25);
  copy_into(w, target);
  EXPECT_TRUE(equal(file.tensor("fc2.bias", Device::cpu()), target));  // the bytes changed
  copy_into(w, original);  // as they were, for the other tests of this process
}
