// The ONNX loader and executor on bad input: models built here with the protobuf classes (a tiny
// Add + Relu graph, then broken one way each), written to a scratch folder and loaded. Every
// failure must be an ember::Error naming the file and the values involved; nothing may crash.
// Also: run() on every device against hand-computed values, dynamic batch sizes, parameters.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "onnx/onnx_pb.h"

namespace ember::test {
namespace {

namespace fs = std::filesystem;
namespace pb = ::onnx;

fs::path scratch() {
  static const fs::path dir = [] {
    std::string pattern = (fs::temp_directory_path() / "ember_onnx_test_XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
    return fs::path(pattern);
  }();
  return dir;
}

void add_input(pb::GraphProto* g, const std::string& name, int elem, std::vector<int64_t> dims,
               const std::string& symbol = "") {
  pb::ValueInfoProto* v = g->add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (i == 0 && !symbol.empty()) {
      d->set_dim_param(symbol);
    } else {
      d->set_dim_value(dims[i]);
    }
  }
}

// y = relu(x + w): x [batch, 3] float, w [3] an initialiser.
pb::ModelProto tiny_model() {
  pb::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  pb::GraphProto* g = m.mutable_graph();
  g->set_name("tiny");
  add_input(g, "x", pb::TensorProto::FLOAT, {0, 3}, "batch");
  pb::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(pb::TensorProto::FLOAT);
  w->add_dims(3);
  for (float f : {0.5f, -1.0f, 2.0f}) w->add_float_data(f);
  pb::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("x");
  add->add_input("w");
  add->add_output("s");
  pb::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("s");
  relu->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

std::string write(const pb::ModelProto& m, const std::string& name) {
  const fs::path dir = scratch() / name;
  fs::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  m.SerializeToOstream(&out);
  return path;
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing " << needles[0];
  } catch (const Error& e) {
    for (const std::string& n : needles) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message: " << e.what() << "\nexpected to contain: " << n;
    }
  }
}

DynTensor x_of(const std::vector<float>& v, int64_t batch) {
  return from_data(TensorData::from(v, Shape{batch, 3}));
}

TEST(OnnxLoader, RunsWithADynamicBatch) {
  const onnx::Model m = onnx::load(write(tiny_model(), "ok"));
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].shape[0].symbol, "batch");
  EXPECT_EQ(m.opset(), 17);
  for (int64_t batch : {1, 2}) {
    std::vector<float> x(size_t(batch * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 2.5f;
    const auto out = m.run({{"x", x_of(x, batch)}});
    const std::vector<float> y = out.at("y").to_vector<float>();
    const float w[3] = {0.5f, -1.0f, 2.0f};
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], std::max(0.0f, x[i] + w[i % 3])) << i;
  }
}

TEST(OnnxLoader, InitialisersAreTrainableParameters) {
  onnx::Model m = onnx::load(write(tiny_model(), "params"));
  ASSERT_TRUE(m.parameters().count("w"));
  DynTensor& w = m.parameters().at("w");
  w = require_grad(w);
  const DynTensor y = m.run({{"x", x_of({1, 1, 1}, 1)}}).at("y");
  const Gradients g = backward(sum(y));
  // d sum(relu(x + w)) / dw = [1, 0, 1] at x = 1: (1.5, 0, 3) before relu.
  EXPECT_EQ(g.get(w).to_vector<float>(), (std::vector<float>{1, 0, 1}));
}

// Constant nodes and nodes of constants only are computed once at load (constant folding); the
// result must be the same as computing them per run.
TEST(OnnxLoader, ConstantSubgraphsFold) {
  pb::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  for (const char* name : {"c1", "c2"}) {
    pb::NodeProto* c = g->add_node();
    c->set_op_type("Constant");
    c->add_output(name);
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(pb::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(pb::TensorProto::FLOAT);
    a->mutable_t()->add_dims(3);
    for (float f : {1.0f, 2.0f, 3.0f}) a->mutable_t()->add_float_data(f);
  }
  pb::NodeProto* sum = g->add_node();
  sum->set_op_type("Add");
  sum->add_input("c1");
  sum->add_input("c2");
  sum->add_output("c3");
  pb::NodeProto* out = g->add_node();
  out->set_op_type("Mul");
  out->add_input("y");
  out->add_input("c3");
  out->add_output("z");
  g->mutable_output(0)->set_name("z");
  const onnx::Model model = onnx::load(write(m, "fold"));
  // relu(x + w) * (c1 + c2), w = [0.5, -1, 2], c1 + c2 = [2, 4, 6].
  EXPECT_EQ(model.run({{"x", x_of({1, 1, 1}, 1)}}).at("z").to_vector<float>(),
            (std::vector<float>{3, 0, 18}));
}

TEST(OnnxLoader, BadInputsToRun) {
  const std::string path = write(tiny_model(), "inputs");
  const onnx::Model m = onnx::load(path);
  expect_error(
      [&] {
        m.run({{"y", x_of({1, 2, 3}, 1)}});
      },
      {path, "the model has no input 'y' (its inputs: 'x')"});
  expect_error([&] { m.run({}); }, {"input 'x' is missing"});
  expect_error(
      [&] {
        m.run({{"x", cast(x_of({1, 2, 3}, 1), DType::i64)}});
      },
      {"input 'x' must be float32 (FLOAT), got int64"});
  expect_error(
      [&] {
        m.run({{"x", from_data(TensorData::from(std::vector<float>{1, 2}, Shape{2}))}});
      },
      {"input 'x' must have rank 2, got shape [2]"});
  expect_error(
      [&] {
        m.run({{"x", zeros(Shape{1, 4}, DType::f32)}});
      },
      {"input 'x' must have size 3 in dim 1, got shape [1, 4]"});
}

// Two inputs declared [batch, 3]: one dim_param names one size, so mismatched batches fail
// before anything runs, naming both inputs.
TEST(OnnxLoader, ASymbolIsOneSizeAcrossInputs) {
  pb::ModelProto model = tiny_model();
  pb::GraphProto* g = model.mutable_graph();
  g->mutable_initializer()->Clear();
  add_input(g, "w", pb::TensorProto::FLOAT, {0, 3}, "batch");
  const std::string path = write(model, "symbols");
  const onnx::Model m = onnx::load(path);
  const DynTensor two = x_of({1, 2, 3, 4, 5, 6}, 2);
  EXPECT_EQ(m.run({{"x", two}, {"w", two}}).at("y").shape(), (Shape{2, 3}));
  expect_error(
      [&] {
        m.run({{"x", two}, {"w", x_of({1, 2, 3}, 1)}});
      },
      {path, "input 'w' dim 0 (batch) is 1, but input 'x' dim 0 gave batch = 2"});
}

TEST(OnnxLoader, CorruptAndTruncatedFiles) {
  const pb::ModelProto good = tiny_model();
  std::string bytes;
  good.SerializeToString(&bytes);
  const fs::path dir = scratch() / "corrupt";
  fs::create_directories(dir);
  for (size_t cut : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    const std::string path = (dir / ("cut" + std::to_string(cut) + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << bytes.substr(0, cut);
    expect_error([&] { onnx::load(path); }, {path, "not a valid ONNX model"});
  }
  const std::string garbage = (dir / "garbage.onnx").string();
  std::ofstream(garbage, std::ios::binary) << "\xff\xff\xff\xff this is not protobuf";
  expect_error([&] { onnx::load(garbage); }, {garbage, "not a valid ONNX model"});
  expect_error([&] { onnx::load((dir / "missing.onnx").string()); }, {"missing.onnx"});
  expect_error([&] { onnx::load(dir.string()); }, {"not a regular file (a directory)"});
}

TEST(OnnxLoader, BrokenGraphs) {
  pb::ModelProto cyc = tiny_model();
  cyc.mutable_graph()->mutable_node(0)->set_input(0, "y");  // add reads relu's output
  const std::string cyc_path = write(cyc, "cycle");
  expect_error([&] { onnx::load(cyc_path); }, {cyc_path, "has a cycle through node 'add' (Add)"});

  pb::ModelProto missing = tiny_model();
  missing.mutable_graph()->clear_initializer();
  const std::string missing_path = write(missing, "missing_init");
  expect_error([&] { onnx::load(missing_path); },
               {missing_path,
                "node 'add' (Add) reads 'w', which no node, graph input or initialiser defines"});

  pb::ModelProto twice = tiny_model();
  twice.mutable_graph()->mutable_node(1)->set_output(0, "s");
  twice.mutable_graph()->mutable_output(0)->set_name("s");
  expect_error([&] { onnx::load(write(twice, "twice")); }, {"value 's' is produced by two nodes"});

  pb::ModelProto old = tiny_model();
  old.set_ir_version(2);
  expect_error([&] { onnx::load(write(old, "ir2")); },
               {"unsupported IR version 2 (Ember reads 3 to 14)"});
}

TEST(OnnxLoader, EveryUnsupportedOpListedAtOnce) {
  pb::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  for (const char* op : {"NoSuchOp", "AlsoMissing", "NoSuchOp"}) {
    pb::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->add_input("y");
    n->add_output(std::string("out_") + op + std::to_string(g->node_size()));
  }
  pb::NodeProto* custom = g->add_node();
  custom->set_op_type("Thing");
  custom->set_domain("com.example");
  custom->add_input("y");
  custom->add_output("t");
  m.add_opset_import()->set_domain("com.example");
  m.mutable_opset_import(1)->set_version(3);
  const std::string path = write(m, "unsupported");
  expect_error([&] { onnx::load(path); },
               {path, "unsupported operators: ", "NoSuchOp (ai.onnx opset 17, 2 nodes)",
                "AlsoMissing (ai.onnx opset 17, 1 node)", "Thing (com.example opset 3, 1 node)"});
  const onnx::ModelSummary s = onnx::inspect(path);
  EXPECT_EQ(s.unsupported.size(), 3u);
  EXPECT_EQ(s.op_histogram.at("Add"), 1);
  EXPECT_EQ(s.op_histogram.at("NoSuchOp"), 2);
  EXPECT_EQ(s.op_histogram.at("com.example:Thing"), 1);
  EXPECT_EQ(s.num_parameters, 3);
}

TEST(OnnxLoader, AbsurdSizes) {
  pb::ModelProto big = tiny_model();
  auto* w = big.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  expect_error([&] { onnx::load(write(big, "overflow")); }, {"tensor 'w' is absurdly large"});

  pb::ModelProto wrong = tiny_model();
  wrong.mutable_graph()->mutable_initializer(0)->set_dims(0, 1000000);
  expect_error([&] { onnx::load(write(wrong, "count")); },
               {"tensor 'w' of shape [1000000] has 3 values in float_data, expected 1000000"});
  // A shape that would take 256 GiB is refused by its count before any of it is allocated
  // (a fuzzer's finding: the buffer used to be sized first).
  wrong.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 36);
  expect_error([&] { onnx::load(write(wrong, "count_huge")); },
               {"has 3 values in float_data, expected 68719476736"});

  pb::ModelProto raw = tiny_model();
  auto* r = raw.mutable_graph()->mutable_initializer(0);
  r->clear_float_data();
  r->set_raw_data(std::string(7, '\0'));
  expect_error([&] { onnx::load(write(raw, "raw")); },
               {"tensor 'w' of shape [3] has 7 bytes of raw data, expected 12"});

  pb::ModelProto neg = tiny_model();
  neg.mutable_graph()->mutable_initializer(0)->set_dims(0, -3);
  expect_error([&] { onnx::load(write(neg, "negative")); }, {"tensor 'w' has a negative dim -3"});

  onnx::LoadOptions small;
  small.max_file_bytes = 10;
  const std::string path = write(tiny_model(), "limit");
  expect_error([&] { onnx::load(path, Device::cpu(), small); }, {"is over the limit of 10 bytes"});
}

// Shape inference on hostile attributes (inspect runs it): zero strides, pads and kernels near
// 2^63, repeats that overflow. No crash and no wrapped size: the dims come out unknown.
TEST(OnnxLoader, ShapeInferenceSurvivesAbsurdAttributes) {
  pb::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  pb::GraphProto* g = m.mutable_graph();
  add_input(g, "x", pb::TensorProto::FLOAT, {1, 1, 4000000000000000000, 5});
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const auto pool = [&](const std::string& out, std::vector<int64_t> strides,
                        std::vector<int64_t> pads, std::vector<int64_t> kernel) {
    pb::NodeProto* n = g->add_node();
    n->set_op_type("MaxPool");
    n->add_input("x");
    n->add_output(out);
    auto add_ints = [&](const char* name, const std::vector<int64_t>& v) {
      pb::AttributeProto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(pb::AttributeProto::INTS);
      for (int64_t i : v) a->add_ints(i);
    };
    add_ints("strides", strides);
    add_ints("pads", pads);
    add_ints("kernel_shape", kernel);
    g->add_output()->set_name(out);
  };
  pool("zero_stride", {0, 0}, {0, 0, 0, 0}, {2, 2});
  pool("huge_pads", {1, 1}, {huge, huge, huge, huge}, {2, 2});
  pool("huge_kernel", {1, 1}, {0, 0, 0, 0}, {huge, huge});
  pb::TensorProto* repeats = g->add_initializer();
  repeats->set_name("repeats");
  repeats->set_data_type(pb::TensorProto::INT64);
  repeats->add_dims(4);
  for (int64_t r : {huge, int64_t{2}, int64_t{3}, huge}) repeats->add_int64_data(r);
  pb::NodeProto* tile = g->add_node();
  tile->set_op_type("Tile");
  tile->add_input("x");
  tile->add_input("repeats");
  tile->add_output("tiled");
  g->add_output()->set_name("tiled");
  const onnx::ModelSummary s = onnx::inspect(write(m, "absurd_attributes"));
  ASSERT_EQ(s.outputs.size(), 4u);
  for (const onnx::ValueInfo& v : s.outputs) {
    ASSERT_TRUE(v.has_shape) << v.name;
    ASSERT_EQ(v.shape.size(), 4u) << v.name;
    for (const onnx::Dim& d : v.shape) EXPECT_LE(d.size, int64_t{1} << 62) << v.name;
  }
  EXPECT_EQ(s.outputs[0].shape[3].size, -1);  // zero stride: unknown
  EXPECT_EQ(s.outputs[3].shape[0].size, -1);  // 1 * (2^63 - 1) repeats: past 2^62, unknown
  EXPECT_EQ(s.outputs[3].shape[1].size, 2);
}

// The weights in a file beside the model: read when confined to the model's folder, refused
// otherwise (ONNX's CVE-2022-25882 and CVE-2024-27318 were paths out of it).
pb::ModelProto external_model(const std::string& location, int64_t offset = 0) {
  pb::ModelProto m = tiny_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(pb::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* off = w->add_external_data();
  off->set_key("offset");
  off->set_value(std::to_string(offset));
  return m;
}

void write_weights(const fs::path& file) {
  const float w[3] = {0.5f, -1.0f, 2.0f};
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof w);
}

TEST(OnnxLoader, ExternalDataStaysInTheModelFolder) {
  const std::string ok = write(external_model("weights.bin"), "external");
  write_weights(fs::path(ok).parent_path() / "weights.bin");
  const onnx::Model m = onnx::load(ok);
  EXPECT_EQ(m.run({{"x", x_of({0, 0, 0}, 1)}}).at("y").to_vector<float>(),
            (std::vector<float>{0.5f, 0, 2}));

  const std::string sub = write(external_model("data/w.bin"), "external_sub");
  fs::create_directories(fs::path(sub).parent_path() / "data");
  write_weights(fs::path(sub).parent_path() / "data" / "w.bin");
  EXPECT_NO_THROW(onnx::load(sub));

  write_weights(scratch() / "outside.bin");
  expect_error([&] { onnx::load(write(external_model("../outside.bin"), "dotdot")); },
               {"external data '../outside.bin' of tensor 'w' leaves the model's folder"});
  const std::string abs_path = (scratch() / "outside.bin").string();
  expect_error([&] { onnx::load(write(external_model(abs_path), "absolute")); },
               {"is an absolute path"});
  const std::string link = write(external_model("link.bin"), "symlink");
  fs::create_symlink(scratch() / "outside.bin", fs::path(link).parent_path() / "link.bin");
  expect_error([&] { onnx::load(link); },
               {"external data 'link.bin'", "goes through a symbolic link"});
  const std::string dirlink = write(external_model("d/outside.bin"), "dirlink");
  fs::create_directory_symlink(scratch(), fs::path(dirlink).parent_path() / "d");
  expect_error([&] { onnx::load(dirlink); }, {"goes through a symbolic link"});
  const std::string hard = write(external_model("hard.bin"), "hardlink");
  fs::create_hard_link(scratch() / "outside.bin", fs::path(hard).parent_path() / "hard.bin");
  expect_error([&] { onnx::load(hard); }, {"has other hard links"});
  expect_error([&] { onnx::load(write(external_model("nothing.bin"), "nofile")); },
               {"external data 'nothing.bin' of tensor 'w' does not exist"});
  const std::string past = write(external_model("weights.bin", 8), "past_end");
  write_weights(fs::path(past).parent_path() / "weights.bin");
  expect_error([&] { onnx::load(past); }, {"external data of tensor 'w' (offset 8, length 4)"});
}

}  // namespace
}  // namespace ember::test
