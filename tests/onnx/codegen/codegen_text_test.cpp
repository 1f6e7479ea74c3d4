// onnx2cpp's generated text for graphs built here (which nodes become nn layers, Ember functions
// or calls; names, literals, refusals), and onnx::call, the entry point the generated code uses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen.hpp"
#include "ember/ember.hpp"
#include "ember/import/onnx_ops.hpp"

using namespace ember;
using namespace ember::onnx;

namespace {

ValueInfo input(const std::string& name, std::vector<int64_t> dims) {
  ValueInfo v;
  v.name = name;
  v.dtype_name = "FLOAT";
  v.elem_type = 1;
  v.has_shape = true;
  for (const int64_t d : dims) v.shape.push_back({d, ""});
  return v;
}

ValueInfo output(const std::string& name) {
  ValueInfo v;
  v.name = name;
  v.dtype_name = "FLOAT";
  v.elem_type = 1;
  return v;
}

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
          std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute integer(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}
Attribute real(double v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
Attribute text(std::string s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = std::move(s);
  return a;
}

TensorData filled(std::vector<int64_t> dims, float value = 0.5f) {
  Shape s;
  for (const int64_t d : dims) s.push_back(d);
  return TensorData::from(std::vector<float>(static_cast<size_t>(s.numel()), value), s);
}

ModelIR model(int64_t opset = 13) {
  ModelIR ir;
  ir.opsets[""] = opset;
  ir.graph = std::make_shared<Graph>();
  return ir;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> paths(const GeneratedModule& m) {
  std::vector<std::string> p;
  for (const auto& [path, t] : m.weights) p.push_back(path);
  std::sort(p.begin(), p.end());
  return p;
}

void expect_refused(const ModelIR& ir, const std::string& message) {
  try {
    generate_cpp(ir, "Net", "model.onnx");
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), message)) << e.what();
  }
}

void expect_refused_name(const std::string& name, const std::string& message) {
  try {
    generate_cpp(model(), name, "model.onnx");
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), message)) << e.what();
  }
}

}  // namespace

// Conv -> BatchNormalization -> Relu -> Flatten -> Gemm: three nn layers, a function, a call.
TEST(OnnxCodegenText, LayersFunctionsAndCalls) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("x", {1, 3, 8, 8})};
  g.outputs = {output("logits")};
  g.initializers["conv1.weight"] = filled({4, 3, 3, 3});
  g.initializers["conv1.bias"] = filled({4});
  for (const char* s : {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"})
    g.initializers[s] = filled({4});
  g.initializers["fc.weight"] = filled({10, 64});
  g.initializers["fc.bias"] = filled({10});
  g.nodes = {
      node("Conv", {"x", "conv1.weight", "conv1.bias"}, {"c"},
           {{"strides", ints({2, 2})},
            {"pads", ints({1, 1, 1, 1})},
            {"kernel_shape", ints({3, 3})}}),
      node("BatchNormalization", {"c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
           {"b"}, {{"epsilon", real(static_cast<double>(1e-3f))}}),
      node("Relu", {"b"}, {"r"}), node("Flatten", {"r"}, {"f"}, {{"axis", integer(1)}}),
      node("Gemm", {"f", "fc.weight", "fc.bias"}, {"logits"}, {{"transB", integer(1)}})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_TRUE(contains(m.header, "ember::nn::Conv2d conv1;")) << m.header;
  EXPECT_TRUE(contains(m.header, "ember::nn::BatchNorm2d bn;")) << m.header;
  EXPECT_TRUE(contains(m.header, "ember::nn::Linear fc;")) << m.header;
  EXPECT_TRUE(contains(m.header, "EMBER_MODULE(Net, conv1, bn, fc)")) << m.header;
  EXPECT_TRUE(contains(m.header, "ember::DynTensor logits;")) << m.header;
  EXPECT_TRUE(contains(m.header, "Outputs forward(const ember::DynTensor& x) const;")) << m.header;
  EXPECT_TRUE(contains(m.source,
                       "conv1(nn::Conv2dConfig(3, 4, {3, 3}).stride({2, 2}).padding({1, 1}), "
                       "device)"))
      << m.source;
  EXPECT_TRUE(contains(m.source, "bn(nn::BatchNormConfig(4).epsilon(0.001f), device)")) << m.source;
  EXPECT_TRUE(contains(m.source, "fc(nn::LinearConfig(64, 10), device)")) << m.source;
  EXPECT_TRUE(contains(m.source, "eval();")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor c = conv1.forward(x);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor b = bn.forward(c);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor r = relu(b);")) << m.source;
  EXPECT_TRUE(contains(m.source,
                       "const DynTensor f = onnx::call(\"Flatten\", {r}, {{\"axis\", 1}}, "
                       "kOpset)[0];"))
      << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor logits = fc.forward(f);")) << m.source;
  EXPECT_TRUE(contains(m.source, "return {logits};")) << m.source;
  EXPECT_EQ(m.layers, 3);
  EXPECT_EQ(m.functions, 1);
  EXPECT_EQ(m.calls, 1);
  const std::vector<std::string> want = {
      "bn.bias",    "bn.num_batches_tracked", "bn.running_mean", "bn.running_var", "bn.weight",
      "conv1.bias", "conv1.weight",           "fc.bias",         "fc.weight"};
  EXPECT_EQ(paths(m), want);
}

// A node a layer cannot express (asymmetric pads, transB = 0, a training BatchNormalization)
// keeps its initialisers as Params and runs through onnx::call, or is refused while the
// executor has no such operator.
TEST(OnnxCodegenText, NotLayers) {
  ModelIR ir = model(15);
  Graph& g = *ir.graph;
  g.inputs = {input("x", {1, 3, 8, 8}), input("y", {2, 6})};
  g.outputs = {output("c"), output("l"), output("b")};
  g.initializers["w"] = filled({4, 3, 3, 3});
  g.initializers["fc"] = filled({6, 5});
  for (const char* s : {"s", "o", "m", "v"}) g.initializers[s] = filled({4});
  g.nodes = {node("Conv", {"x", "w"}, {"c"}, {{"pads", ints({0, 0, 1, 1})}}),
             node("Gemm", {"y", "fc"}, {"l"}),
             node("BatchNormalization", {"c", "s", "o", "m", "v"}, {"b"},
                  {{"training_mode", integer(1)}})};
  if (registry().find("", "Conv", 15) && registry().find("", "Gemm", 15) &&
      registry().find("", "BatchNormalization", 15)) {
    const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
    EXPECT_EQ(m.layers, 0);
    EXPECT_TRUE(contains(m.header, "ember::nn::Param<4> w;")) << m.header;
    EXPECT_TRUE(contains(m.source, R"("Conv", {x, w.dyn()}, {{"pads", onnx::Ints{0, 0, 1, 1}}})"))
        << m.source;
    EXPECT_TRUE(contains(m.source, R"("Gemm", {y, fc.dyn()}, {}, kOpset)")) << m.source;
    EXPECT_TRUE(contains(m.source, R"({{"training_mode", 1}})")) << m.source;
  } else {
    expect_refused(ir, "onnx2cpp: unsupported operators: ");
  }
}

// A layer's initialiser read by another node is read through the layer.
TEST(OnnxCodegenText, SharedWeightReadThroughTheLayer) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("x", {2, 8}), input("z", {4, 8})};
  g.outputs = {output("y"), output("s")};
  g.initializers["w"] = filled({4, 8});
  g.nodes = {node("Gemm", {"x", "w"}, {"y"}, {{"transB", integer(1)}}),
             node("Add", {"w", "z"}, {"s"})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_TRUE(contains(m.source, "linear(nn::LinearConfig(8, 4).bias(false), device)")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor s = add(linear.weight.dyn(), z);")) << m.source;
  EXPECT_EQ(paths(m), std::vector<std::string>{"linear.weight"});
}

// PyTorch's exports: Identity nodes of deduplicated initialisers read as the initialiser; each
// layer given one gets its own copy; layers named after the node's scope.
TEST(OnnxCodegenText, DeduplicatedBiasesAndScopes) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("x", {1, 3, 8, 8})};
  g.outputs = {output("y")};
  g.initializers["onnx::Conv_1"] = filled({4, 3, 3, 3});
  g.initializers["onnx::Conv_2"] = filled({4});
  g.initializers["onnx::Conv_3"] = filled({4, 4, 3, 3});
  Node conv1 = node("Conv", {"x", "onnx::Conv_1", "onnx::Conv_2"}, {"/conv1/Conv_output_0"});
  conv1.name = "/conv1/Conv";
  Node conv2 = node("Conv", {"/conv1/Conv_output_0", "onnx::Conv_3", "onnx::Conv_4"}, {"y"});
  conv2.name = "/layer1/layer1.0/conv2/Conv";
  g.nodes = {node("Identity", {"onnx::Conv_2"}, {"onnx::Conv_4"}), conv1, conv2};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_EQ(m.layers, 2);
  EXPECT_FALSE(contains(m.source, "onnx_Conv_4")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor conv1_Conv = conv1.forward(x);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor y = layer1_0_conv2.forward(conv1_Conv);"))
      << m.source;
  EXPECT_EQ(paths(m), (std::vector<std::string>{"conv1.bias", "conv1.weight", "layer1_0_conv2.bias",
                                                "layer1_0_conv2.weight"}));
}

// MatMul by a constant [in, out] then Add of a constant [out]: nn::Linear holding W^T.
TEST(OnnxCodegenText, MatMulAddIsLinear) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("x", {2, 5, 3})};
  g.outputs = {output("z")};
  g.initializers["onnx::MatMul_7"] =
      TensorData::from(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  g.initializers["fc.bias"] = filled({2});
  g.nodes = {node("MatMul", {"x", "onnx::MatMul_7"}, {"m"}), node("Add", {"fc.bias", "m"}, {"y"}),
             node("Relu", {"y"}, {"z"})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_EQ(m.layers, 1);
  EXPECT_TRUE(contains(m.source, "fc(nn::LinearConfig(3, 2), device)")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor y = fc.forward(x);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor z = relu(y);")) << m.source;  // y is typed
  ASSERT_EQ(paths(m), (std::vector<std::string>{"fc.bias", "fc.weight"}));
  for (const auto& [path, t] : m.weights) {
    if (path == "fc.weight") {
      EXPECT_EQ(t.shape, Shape({2, 3}));
      EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 3, 5, 2, 4, 6}));
    }
  }
}

// More fields than one EMBER_MODULE lists: nested parts of 256.
TEST(OnnxCodegenText, ManyFieldsInParts) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("x", {2})};
  std::string last = "x";
  for (int i = 0; i < 300; ++i) {
    std::string p = "p", v = "v";  // (not "p" + ...: GCC 12's -Wrestrict false positive)
    p += std::to_string(i);
    v += std::to_string(i);
    g.initializers[p] = filled({2});
    g.nodes.push_back(node("Add", {last, p}, {v}));
    last = v;
  }
  g.outputs = {output(last)};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_EQ(m.fields, 300);
  EXPECT_TRUE(contains(m.header, "  struct Part1 {\n    ember::nn::Param<1> p256;")) << m.header;
  EXPECT_TRUE(contains(m.header, "EMBER_MODULE(Net, part0, part1)")) << m.header;
  EXPECT_TRUE(contains(m.source, "Net::Part1::Part1(Device device)")) << m.source;
  EXPECT_TRUE(contains(m.source, "add(v298, part1.p299.dyn())")) << m.source;
  EXPECT_EQ(m.weights[299].first, "part1.p299");
}

// ONNX names become identifiers: invalid characters, leading digits, keywords, Ember's own names
// and collisions; Constant nodes become buffers with their values in the constructor.
TEST(OnnxCodegenText, NamesAndConstants) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("0", {2, 3})};
  g.outputs = {output("a/b"), output("k")};
  Attribute shape;
  shape.kind = Attribute::Kind::Ints;
  shape.ints = {3, -1};
  g.nodes = {node("Relu", {"0"}, {"class"}),
             node("Relu", {"class"}, {"relu"}),
             node("Relu", {"relu"}, {"a.b"}),
             node("Relu", {"a.b"}, {"a/b"}),
             node("Constant", {}, {"k"}, {{"value_ints", shape}}),
             node("Constant", {}, {"half"}, {{"value_float", real(0.5)}}),
             node("Reshape", {"a/b", "k"}, {"r"}),
             node("Mul", {"r", "half"}, {"unused"})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_TRUE(contains(m.source, "const DynTensor class_ = relu(v0);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor relu_ = relu(class_);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor a_b = relu(relu_);")) << m.source;
  EXPECT_TRUE(contains(m.source, "const DynTensor a_b_2 = relu(a_b);")) << m.source;
  EXPECT_TRUE(contains(m.source, "k(Tensor<1, Int>::from_vector<int64_t>({3, -1}, {2}, device))"))
      << m.source;
  EXPECT_TRUE(contains(m.source, "half(Tensor<0>::from_vector<float>({0.5f}, {}, device))"))
      << m.source;
  EXPECT_TRUE(contains(m.source, "mul(r, half.dyn())")) << m.source;
  EXPECT_TRUE(contains(m.source, "return {a_b_2, k.dyn()};")) << m.source;
  EXPECT_TRUE(contains(m.header, "ember::nn::Buffer<1, ember::Int> k;")) << m.header;
  EXPECT_TRUE(contains(m.header, "ember::DynTensor a_b;")) << m.header;
  EXPECT_TRUE(contains(m.header, "Outputs forward(const ember::DynTensor& v0) const;")) << m.header;
  EXPECT_EQ(paths(m), (std::vector<std::string>{"half", "k"}));
}

// Attributes are written as literals that compile to the importer's exact values.
TEST(OnnxCodegenText, AttributeLiterals) {
  ModelIR ir = model(2);
  Graph& g = *ir.graph;
  g.inputs = {input("x", {2, 3})};
  g.outputs = {output("p")};
  g.nodes = {node("Pad", {"x"}, {"p"},
                  {{"mode", text("a\"b\\c\n")},
                   {"pads", ints({0, INT64_MIN, 0, 1})},
                   {"value", real(static_cast<double>(0.1f))},
                   {"other", real(0.1)}})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_TRUE(contains(m.source, R"({"mode", "a\"b\\c\012"})")) << m.source;
  EXPECT_TRUE(contains(m.source, R"({"pads", onnx::Ints{0, INT64_MIN, 0, 1}})")) << m.source;
  EXPECT_TRUE(contains(m.source, R"({"value", 0.1f})")) << m.source;
  EXPECT_TRUE(contains(m.source, R"({"other", 0.1})")) << m.source;
}

// If's branches inline, reading outer values by name; a name both branches define is told apart.
TEST(OnnxCodegenText, IfBranchesInline) {
  ModelIR ir = model();
  Graph& g = *ir.graph;
  g.inputs = {input("c", {}), input("x", {2})};
  g.inputs[0].dtype_name = "BOOL";
  g.inputs[0].elem_type = 9;
  g.inputs[0].dtype = DType::boolean;
  g.outputs = {output("y")};
  auto branch = [](const std::string& op) {
    Attribute a;
    a.kind = Attribute::Kind::Graph;
    auto sub = std::make_shared<Graph>();
    sub->nodes = {node(op, {"x"}, {"t"})};
    sub->outputs = {output("t")};
    a.g = sub;
    return a;
  };
  g.nodes = {
      node("If", {"c"}, {"y"}, {{"then_branch", branch("Relu")}, {"else_branch", branch("Neg")}})};
  const GeneratedModule m = generate_cpp(ir, "Net", "net.onnx");
  EXPECT_TRUE(contains(m.source,
                       "  DynTensor y;\n"
                       "  if (c.item<bool>()) {  // node 'y' (If)\n"
                       "    const DynTensor t = relu(x);\n"
                       "    y = t;\n"
                       "  } else {\n"
                       "    const DynTensor t_2 = neg(x);\n"
                       "    y = t_2;\n"
                       "  }\n"
                       "  return {y};\n"))
      << m.source;
  EXPECT_EQ(m.control, 1);
  EXPECT_EQ(m.functions, 2);
}

TEST(OnnxCodegenText, Refusals) {
  {
    ModelIR ir = model();
    Graph& g = *ir.graph;
    g.inputs = {input("c", {1})};
    g.outputs = {output("y")};
    Attribute branch;
    branch.kind = Attribute::Kind::Graph;
    branch.g = std::make_shared<Graph>();
    g.nodes = {node("Scan", {"c"}, {"y"}, {{"body", branch}, {"num_scan_inputs", integer(1)}})};
    expect_refused(ir, "onnx2cpp: Scan is not supported yet");
  }
  {
    ModelIR ir = model();
    Graph& g = *ir.graph;
    g.inputs = {input("x", {1})};
    g.outputs = {output("y")};
    g.nodes = {node("SequenceConstruct", {"x"}, {"s"}), node("SequenceAt", {"s", "x"}, {"y"})};
    expect_refused(ir, "onnx2cpp: sequence and optional values are not supported yet");
  }
  {
    ModelIR ir = model();
    ir.opsets["com.example"] = 1;
    Graph& g = *ir.graph;
    g.inputs = {input("x", {1})};
    g.outputs = {output("z")};
    Node other = node("Thing", {"y"}, {"z"});
    other.domain = "com.example";
    g.nodes = {node("NoSuchOp", {"x"}, {"t"}), node("NoSuchOp", {"t"}, {"y"}), other};
    expect_refused(ir,
                   "onnx2cpp: unsupported operators: NoSuchOp (ai.onnx opset 13, 2 nodes), "
                   "Thing (com.example opset 1, 1 node)");
  }
  {
    ModelIR ir = model();
    Graph& g = *ir.graph;
    g.inputs = {input("x", {1})};
    g.outputs = {output("y")};
    g.nodes = {node("Add", {"x", "z"}, {"y"}), node("Relu", {"y"}, {"z"})};
    expect_refused(ir, "onnx2cpp: the graph '' has a cycle");
  }
  expect_refused_name("3d", "onnx2cpp: the name '3d' is not a C++ identifier");
  expect_refused_name("class", "onnx2cpp: the name 'class' is a C++ keyword or a name the");
  expect_refused_name("Tensor", "onnx2cpp: the name 'Tensor' is a C++ keyword or a name the");
}

// ---- onnx::call ----

TEST(OnnxCall, RunsTheImportersOperator) {
  const DynTensor x = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).dyn();
  const DynTensor t = call("Transpose", {x}, {{"perm", Ints{1, 0}}}, 13)[0];
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));

  const std::vector<DynTensor> parts = call("Split", {x}, {{"axis", 1}}, 13, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].to_vector<float>(), (std::vector<float>{3, 6}));

  // An omitted optional input: ReduceSum without axes sums everything (keepdims by default).
  const DynTensor s = call("ReduceSum", {x, DynTensor()}, {}, 13)[0];
  EXPECT_EQ(s.shape(), Shape({1, 1}));
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>{21});
  EXPECT_EQ(s.device(), default_device());
}

TEST(OnnxCall, ErrorsNameTheOperator) {
  const DynTensor x = Tensor<1>::zeros({3}).dyn();
  try {
    call("NoSuchOp", {x}, {}, 13);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "unsupported operator")) << e.what();
    EXPECT_TRUE(contains(e.what(), "NoSuchOp")) << e.what();
  }
  try {
    call("Transpose", {x}, {{"perm", 1.5f}}, 13);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[onnx] node 'onnx::call' (Transpose)")) << e.what();
  }
  EXPECT_THROW(call("Relu", {x}, {}, 13, 0), Error);
}
