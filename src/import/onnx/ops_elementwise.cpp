// ONNX's elementwise operators: unary math, binary arithmetic with numpy broadcasting (Ember's
// own), Identity and Constant.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

using Unary = DynTensor (*)(const DynTensor&);
using Binary = DynTensor (*)(const DynTensor&, const DynTensor&);

OpFn unary(Unary f) {
  return [f](OpContext& c) { return one(f(c.in(0))); };
}
OpFn binary(Binary f) {
  return [f](OpContext& c) { return one(f(c.in(0), c.in(1))); };
}

// Constant: exactly one of value (a tensor) or the value_* shorthands (opset 12).
std::vector<Value> constant(OpContext& c) {
  if (c.has_attr("value")) {
    const Attribute& a = c.attr("value");
    if (a.kind != Attribute::Kind::Tensor) c.fail("attribute 'value' must be a tensor");
    return one(to_device(from_data(a.t), c.device()));
  }
  if (c.has_attr("value_float")) {
    return one(full(Shape{}, c.attr_float("value_float", 0), DType::f32, c.device()));
  }
  if (c.has_attr("value_int")) {
    return one(full(Shape{}, c.attr_int("value_int", 0), DType::i64, c.device()));
  }
  if (c.has_attr("value_floats")) {
    const std::vector<double> v = c.attr_floats("value_floats");
    const std::vector<float> f(v.begin(), v.end());
    return one(to_device(from_data(TensorData::from(f, Shape{int64_t(f.size())})), c.device()));
  }
  if (c.has_attr("value_ints")) {
    const std::vector<int64_t> v = c.attr_ints("value_ints");
    return one(to_device(from_data(TensorData::from(v, Shape{int64_t(v.size())})), c.device()));
  }
  c.fail("unsupported: a Constant without 'value', 'value_float(s)' or 'value_int(s)'");
}

}  // namespace

void register_elementwise_ops(Registry& r) {
  r.add("Identity", [](OpContext& c) { return std::vector<Value>{c.value(0)}; });
  r.add("Constant", constant);
  const std::pair<const char*, Unary> unaries[] = {
      {"Abs", abs},   {"Neg", neg},         {"Exp", exp},   {"Log", log},     {"Sqrt", sqrt},
      {"Relu", relu}, {"Sigmoid", sigmoid}, {"Tanh", tanh}, {"Floor", floor}, {"Ceil", ceil},
  };
  for (const auto& [name, f] : unaries) r.add(name, unary(f));
  const std::pair<const char*, Binary> binaries[] = {
      {"Add", add},
      {"Sub", sub},
      {"Mul", mul},
      {"MatMul", matmul},
  };
  for (const auto& [name, f] : binaries) r.add(name, binary(f));
}

}  // namespace ember::onnx
