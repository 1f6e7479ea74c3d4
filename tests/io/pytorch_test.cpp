// torch.save files: every tensor of the fixtures written by PyTorch (make_pytorch_fixtures.py)
// against the values PyTorch printed, views sharing storages, nested checkpoints, and one
// hostile file per refusal rule (make_hostile_pytorch.py), each refused with its reason. Tensors
// are read onto the default device, so this runs once per backend.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "ember/io/pytorch.hpp"
#include "ember/tensor/tensor.hpp"
#include "io_test_util.hpp"

namespace ember::io::test {
namespace {

const std::string kDir = std::string(EMBER_IO_FIXTURES) + "/pytorch/";

struct Expected {
  std::string file, name, dtype;
  Shape shape;
  std::vector<std::string> values;  // as Python printed them
};

std::vector<Expected> read_expected(const std::string& dir) {
  std::ifstream in(dir + "expected.txt");
  std::vector<Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Expected e;
    std::string shape;
    s >> e.file >> e.name >> e.dtype >> shape;
    std::vector<int64_t> dims;
    std::istringstream d(shape.substr(1, shape.size() - 2));
    for (std::string dim; std::getline(d, dim, ',');) dims.push_back(std::stoll(dim));
    e.shape = Shape(dims);
    for (std::string v; s >> v;) e.values.push_back(v);
    out.push_back(std::move(e));
  }
  return out;
}

// The same names, and the same values in each tensor.
void expect_same_tensors(const PytorchFile& a, const PytorchFile& b) {
  EXPECT_EQ(a.names(), b.names());
  for (const std::string& n : a.names())
    EXPECT_EQ(a.tensor(n, Device::cpu(), DType::f64).to_vector<double>(),
              b.tensor(n, Device::cpu(), DType::f64).to_vector<double>())
        << n;
}

// PyTorch 1.13 wrote the files of pytorch/, PyTorch 2.11 those of pytorch/torch2/ (its archives
// add .format_version, .storage_alignment, byteorder and .data/serialization_id records).
TEST(Pytorch, EveryTensorOfTheFixturesMatchesPyTorch) {
  for (const std::string& dir : {kDir, kDir + "torch2/"}) {
    SCOPED_TRACE(dir);
    const std::vector<Expected> expected = read_expected(dir);
    ASSERT_EQ(expected.size(), 74u) << "expected.txt is missing or short";
    std::map<std::string, PytorchFile> files;
    for (const Expected& e : expected) {
      SCOPED_TRACE(e.file + " " + e.name);
      if (!files.count(e.file)) files.emplace(e.file, load_pytorch(dir + e.file));
      const PytorchFile& f = files.at(e.file);
      ASSERT_TRUE(f.contains(e.name));
      const DynTensor t = f.tensor(e.name);
      EXPECT_EQ(t.device(), default_device());
      EXPECT_EQ(dtype_name(t.dtype()), e.dtype);
      EXPECT_EQ(t.shape(), e.shape);
      ASSERT_EQ(static_cast<size_t>(t.numel()), e.values.size());
      if (is_floating(t.dtype())) {
        const std::vector<double> got = cast(t, DType::f64).to_vector<double>();
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], std::stod(e.values[i])) << i;
      } else {
        const std::vector<int64_t> got = cast(t, DType::i64).to_vector<int64_t>();
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], std::stoll(e.values[i])) << i;
      }
    }
    // Every tensor of each file is listed in expected.txt: nothing extra is made up.
    for (const auto& [file, f] : files) {
      size_t listed = 0;
      for (const Expected& e : expected) listed += e.file == file;
      EXPECT_EQ(f.size(), listed) << file;
    }
  }
}

TEST(Pytorch, ViewsShareOneStorageWithTheirOffsetsAndStrides) {
  const PytorchFile f = load_pytorch(kDir + "views.pt");
  const PytorchTensorInfo& t = f.info("t");
  EXPECT_EQ(t.shape, Shape({8, 6}));
  EXPECT_EQ(t.strides, Strides({1, 8}));
  EXPECT_EQ(f.info("expanded").strides, Strides({0, 1}));
  EXPECT_EQ(f.info("slice").strides, Strides({16, 3}));
  EXPECT_EQ(f.info("slice").offset, 8);
  EXPECT_EQ(f.info("col").storage, f.info("base").storage);
  EXPECT_EQ(f.info("element").shape, Shape({}));
  // On the Cpu a view shares the file's memory: no copy of the storage per view.
  const DynTensor base = f.tensor("base", Device::cpu()), row = f.tensor("row", Device::cpu());
  EXPECT_EQ(row.raw().data(), static_cast<const float*>(base.raw().data()) + 16);
  // Values follow the view: the transpose's [3, 2] is base's [2, 3].
  EXPECT_EQ(f.tensor("t").to_vector<float>()[3 * 6 + 2], base.to_vector<float>()[2 * 8 + 3]);
}

TEST(Pytorch, NestedCheckpointsNameTensorsByPathOrFromAChosenKey) {
  const PytorchFile whole = load_pytorch(kDir + "nested.pt");
  EXPECT_EQ(whole.top_level_keys(),
            (std::vector<std::string>{"model", "optimizer", "epoch", "lr", "name"}));
  EXPECT_TRUE(whole.contains("model.1.running_var"));
  EXPECT_TRUE(whole.contains("optimizer.state.0.exp_avg_sq"));
  std::map<std::string, std::string> values(whole.values().begin(), whole.values().end());
  EXPECT_EQ(values["epoch"], "3");
  EXPECT_EQ(values["lr"], "0.001");
  EXPECT_EQ(values["name"], "'mlp'");
  EXPECT_EQ(values["optimizer.param_groups.0.betas"], "(0.90000000000000002, 0.999)");

  const PytorchFile model = load_pytorch(kDir + "nested.pt", "model");
  EXPECT_EQ(model.names(), (std::vector<std::string>{
                               "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                               "1.running_var", "1.num_batches_tracked", "2.weight", "2.bias"}));
  EXPECT_EQ(model.dtype("1.num_batches_tracked"), DType::i64);
  EXPECT_EQ(model.info("0.weight").torch_dtype, "torch.float32");
  expect_error([&] { load_pytorch(kDir + "nested.pt", "state_dict"); },
               {"[pytorch] ", "nested.pt: no top-level key 'state_dict'",
                "'model', 'optimizer', 'epoch', 'lr', 'name'"});
  expect_error([&] { (void)model.tensor("0.weights"); }, {"no tensor named '0.weights'"});
}

TEST(Pytorch, ProtocolFourAndMemoryBuffersReadAsTheFileDoes) {
  const PytorchFile p2 = load_pytorch(kDir + "nested.pt");
  const PytorchFile p4 = parse_pytorch(read_file(kDir + "protocol4.pt"), "p4");
  EXPECT_EQ(p4.path(), "p4");
  EXPECT_EQ(p2.values(), p4.values());
  expect_same_tensors(p2, p4);
}

TEST(Pytorch, Zip64ArchivesAndUnalignedRecordsReadTheSame) {
  // zip64.pt: nested.pt's records with ZIP64 sizes, offsets and end record, no longer aligned.
  const PytorchFile plain = load_pytorch(kDir + "nested.pt");
  const PytorchFile zip64 = load_pytorch(kDir + "zip64.pt");
  expect_same_tensors(plain, zip64);
}

TEST(Pytorch, TheFormatIsToldFromTheFirstBytes) {
  EXPECT_TRUE(is_pytorch_file(kDir + "nested.pt"));
  EXPECT_TRUE(is_pytorch_file(kDir + "hostile/compressed.pt"));
  EXPECT_FALSE(is_pytorch_file(std::string(EMBER_IO_FIXTURES) + "/python_written.safetensors"));
  EXPECT_FALSE(is_pytorch_file(kDir + "missing.pt"));
  // A safetensors header length whose low bytes spell "PK\3\4" is still safetensors: its JSON
  // opens at byte 8.
  TempDir dir;
  write_file(dir.file("pk.safetensors"), st_bytes("{}", "", 0x04034B50));
  EXPECT_FALSE(is_pytorch_file(dir.file("pk.safetensors")));
}

TEST(Pytorch, EveryHostileFileIsRefusedWithItsReason) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"os_system.pt", {"the global 'posix.system'", "refused", "never run"}},
      {"builtins_eval.pt", {"the global 'builtins.eval'", "refused"}},
      {"stack_global_exec.pt", {"the global 'builtins.exec'", "refused"}},
      {"whole_module.pt", {"the global 'torch.nn.modules.linear.Linear'", "refused"}},
      {"persistent_not_storage.pt", {"a persistent id that is not a storage", "('module', 'os')"}},
      {"storage_too_short.pt", {"storage '0' is too short", "32 bytes", "64 elements of 4 bytes"}},
      {"strides_out_of_bounds.pt", {"size [4, 4] with stride [4, 1]", "storage '0'", "holds 8"}},
      {"offset_out_of_bounds.pt", {"at offset 6", "reaches past the end of storage '0'"}},
      {"negative_stride.pt", {"with stride [-1] has a negative entry"}},
      {"huge_sizes.pt", {"has more than 2^63 elements"}},
      {"rank_13.pt", {"the size has 13 dimensions, more than Ember's maximum of 12"}},
      {"missing_record.pt", {"storage '7' has no record 'archive/data/7'"}},
      {"complex_storage.pt", {"torch.ComplexFloatStorage has no Ember dtype"}},
      {"nesting_bomb.pt", {"nests more than 100 levels deep", "recursion bomb"}},
      {"self_holding.pt", {"nests more than 100 levels deep", "holds itself"}},
      {"shared_bomb.pt", {"would not end", "recursion bomb"}},
      {"memo_missing.pt", {"the memo has no entry 5"}},
      {"truncated_pickle.pt", {"the pickle is truncated"}},
      {"unknown_opcode.pt", {"opcode 0xff", "refused"}},
      {"instance_build.pt", {"NEWOBJ calls torch.FloatStorage", "not a function Ember rebuilds"}},
      {"compressed.pt", {"is compressed (method 8)", "uncompressed"}},
      {"no_data_pkl.pt", {"no 'archive/data.pkl' record"}},
      {"truncated_archive.pt", {"not a zip archive", "truncated"}},
      {"legacy_format.pt", {"legacy format", "re-save it with a newer PyTorch"}},
      {"torchscript.pt", {"TorchScript archive", "state_dict()"}},
  };
  for (const auto& [name, needles] : table) {
    SCOPED_TRACE(name);
    const std::string path = kDir + "hostile/" + name;  // clang 14: no lambda capture of a binding
    std::vector<std::string> all = needles;
    all.push_back("[pytorch] " + path + ": ");
    expect_error([&] { load_pytorch(path); }, all);
  }
  // A bool storage is checked when a tensor is made of it: 2 is no C++ bool.
  const PytorchFile f = load_pytorch(kDir + "hostile/bool_not_0_or_1.pt");
  expect_error([&] { (void)f.tensor("w"); }, {"tensor 'w' is bool but byte 2", "holds 2"});
  // And files that are no archive at all.
  expect_error([] { parse_pytorch({}, "empty"); }, {"[pytorch] empty: not a torch.save file"});
  expect_error([] { parse_pytorch(st_bytes("{}", ""), "st"); }, {"looks like a safetensors file"});
}

}  // namespace
}  // namespace ember::io::test
