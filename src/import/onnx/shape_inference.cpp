// Ember's type and shape inference over the ONNX IR (shape_inference.hpp). One rule per operator
// family; every rule reads the input types and, for shape-like inputs (Reshape's shape, axes,
// pads, repeats, starts/ends), the tracked values of small integer tensors: Constant nodes,
// initialisers and what Shape, Gather, Concat, Unsqueeze, Squeeze, Slice and Cast make of them.
#include "shape_inference.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace ember::onnx {

int64_t onnx_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 1;
    case DType::u8:
      return 2;
    case DType::i8:
      return 3;
    case DType::i32:
      return 6;
    case DType::i64:
      return 7;
    case DType::boolean:
      return 9;
    case DType::f16:
      return 10;
    case DType::f64:
      return 11;
    case DType::bf16:
      return 16;
    default:
      return 0;
  }
}

std::string shape_text(const ValueInfo& v) {
  if (!v.has_shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    const Dim& d = v.shape[i];
    s += (i ? ", " : "") + (d.size >= 0        ? std::to_string(d.size)
                            : d.symbol.empty() ? "?"
                                               : d.symbol);
  }
  return s + "]";
}

namespace {

constexpr int64_t kBool = 9, kInt64 = 7, kFloat = 1;
// Integer values tracked element by element: shapes and axes, not data.
constexpr int64_t kMaxTracked = 64;

using Dims = std::vector<Dim>;
using Ints = std::vector<int64_t>;

// One element of a tracked integer tensor: a value (negative ones too: Reshape's -1, axes), a
// symbol (a dim of a Shape), or unknown.
struct Item {
  std::optional<int64_t> value;
  std::string symbol;
};
using Items = std::vector<Item>;
Item item_of(const Dim& d) { return d.size >= 0 ? Item{d.size, ""} : Item{std::nullopt, d.symbol}; }
Dim dim_of(const Item& i) {
  return i.value && *i.value >= 0 ? Dim{*i.value, ""} : Dim{-1, i.value ? "" : i.symbol};
}
Items items_of(const Dims& ds) {
  Items out;
  for (const Dim& d : ds) out.push_back(item_of(d));
  return out;
}
Dims dims_of(const Items& is) {
  Dims out;
  for (const Item& i : is) out.push_back(dim_of(i));
  return out;
}

// Sizes, pads and strides come from untrusted files: arithmetic on them is done in 128 bits
// (no formula here multiplies more than two 64-bit values), and a result that is negative or
// past 2^62 is an unknown dim rather than a wrapped one.
__extension__ typedef __int128 Wide;
constexpr Wide kMaxSize = Wide{1} << 62;

Dim known(Wide n) { return n >= 0 && n <= kMaxSize ? Dim{static_cast<int64_t>(n), ""} : Dim{}; }
bool is_known(const Dim& d) { return d.size >= 0; }
bool same(const Dim& a, const Dim& b) {
  return is_known(a) ? a.size == b.size : !a.symbol.empty() && a.symbol == b.symbol;
}

ValueInfo tensor(int64_t elem, Dims shape) {
  ValueInfo v;
  v.elem_type = elem;
  v.has_shape = true;
  v.shape = std::move(shape);
  return v;
}
ValueInfo of_rank(int64_t elem, int64_t rank) {
  if (rank < 0) {
    ValueInfo v;
    v.elem_type = elem;
    return v;
  }
  return tensor(elem, Dims(static_cast<size_t>(rank)));
}
ValueInfo with_elem(ValueInfo v, int64_t elem) {
  v.elem_type = elem;
  return v;
}
int64_t rank_of(const ValueInfo& v) {
  return v.has_shape ? static_cast<int64_t>(v.shape.size()) : -1;
}

// numpy broadcasting of dims: 1 yields to anything; a known size beats a symbol (the symbol must
// equal it at run time); two different symbols or sizes give unknown.
Dim broadcast_dim(const std::vector<Dim>& ds) {
  std::optional<Dim> out;
  for (const Dim& d : ds) {
    if (is_known(d) && d.size == 1) continue;
    if (!out) {
      out = d;
    } else if (is_known(d) && !is_known(*out)) {
      out = d;
    } else if (!same(d, *out) && !(!is_known(d) && is_known(*out))) {
      return Dim{};
    }
  }
  return out.value_or(known(1));
}

std::optional<Dims> broadcast(const std::vector<const ValueInfo*>& in) {
  size_t rank = 0;
  for (const ValueInfo* v : in) {
    if (!v->has_shape) return std::nullopt;
    rank = std::max(rank, v->shape.size());
  }
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    std::vector<Dim> ds;
    for (const ValueInfo* v : in) {
      const size_t pad = rank - v->shape.size();
      if (i >= pad) ds.push_back(v->shape[i - pad]);
    }
    out[i] = broadcast_dim(ds);
  }
  return out;
}

// Merges two types one value may have (If's branches, a Loop's first and later iterations).
ValueInfo merge(const ValueInfo& a, const ValueInfo& b) {
  ValueInfo out;
  out.elem_type = a.elem_type == b.elem_type ? a.elem_type : 0;
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return out;
  out.has_shape = true;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    out.shape.push_back(same(a.shape[i], b.shape[i]) ? a.shape[i] : Dim{});
  }
  return out;
}

int64_t attr_i(const Node& n, const char* name, int64_t fallback) {
  const auto it = n.attributes.find(name);
  return it != n.attributes.end() && it->second.kind == Attribute::Kind::Int ? it->second.i
                                                                             : fallback;
}
std::optional<Ints> attr_is(const Node& n, const char* name) {
  const auto it = n.attributes.find(name);
  if (it == n.attributes.end() || it->second.kind != Attribute::Kind::Ints) return std::nullopt;
  return it->second.ints;
}
std::string attr_s(const Node& n, const char* name, const char* fallback) {
  const auto it = n.attributes.find(name);
  return it != n.attributes.end() && it->second.kind == Attribute::Kind::String ? it->second.s
                                                                                : fallback;
}

// A negative axis counts from the end; nullopt when out of range or the rank is unknown.
std::optional<int64_t> axis_in(int64_t axis, int64_t rank) {
  if (rank < 0) return std::nullopt;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return axis;
}

std::optional<int64_t> product(const Dims& ds, size_t from, size_t to) {
  Wide p = 1;
  for (size_t i = from; i < to; ++i) {
    if (!is_known(ds[i])) return std::nullopt;
    p *= ds[i].size;
    if (p > kMaxSize) return std::nullopt;
  }
  return static_cast<int64_t>(p);
}

// For b > 0.
Wide ceil_div(Wide a, Wide b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

class Inference {
 public:
  Inference(int64_t opset, const std::map<std::string, ValueInfo>& outer,
            const std::map<std::string, Items>& outer_data)
      : opset_(opset), types_(outer), data_(outer_data) {}

  std::map<std::string, ValueInfo> run(const Graph& g) {
    for (const auto& [name, t] : g.initializers) {
      Dims shape;
      for (int64_t d : t.shape.vec()) shape.push_back(known(d));
      types_[name] = tensor(onnx_type_of(t.dtype), shape);
      track_constant(name, t);
    }
    for (const ValueInfo& v : g.inputs) {
      if (g.initializers.count(v.name) && v.has_shape) continue;  // the tensor's own shape
      // An untyped subgraph input keeps what the enclosing scope says of it.
      if (v.elem_type == 0 && !v.has_shape && types_.count(v.name)) continue;
      types_[v.name] = v;
    }
    for (const Node& n : g.nodes) node(n);
    return types_;
  }

 private:
  const ValueInfo& in(const Node& n, size_t i) const {
    static const ValueInfo unknown;
    if (i >= n.inputs.size() || n.inputs[i].empty()) return unknown;
    const auto it = types_.find(n.inputs[i]);
    return it == types_.end() ? unknown : it->second;
  }
  bool has_in(const Node& n, size_t i) const { return i < n.inputs.size() && !n.inputs[i].empty(); }
  // The tracked elements of input i (a scalar tracks as one element).
  const Items* data(const Node& n, size_t i) const {
    if (!has_in(n, i)) return nullptr;
    const auto it = data_.find(n.inputs[i]);
    return it == data_.end() ? nullptr : &it->second;
  }
  // Input i's elements when all are known integers.
  std::optional<Ints> ints(const Node& n, size_t i) const {
    const Items* d = data(n, i);
    if (d == nullptr) return std::nullopt;
    Ints out;
    for (const Item& x : *d) {
      if (!x.value) return std::nullopt;
      out.push_back(*x.value);
    }
    return out;
  }
  // An attribute before `since`, an input from it on (axes, split, pads, ...).
  std::optional<Ints> attr_or_input(const Node& n, const char* attr, size_t input,
                                    int64_t since) const {
    return opset_ < since ? attr_is(n, attr) : ints(n, input);
  }

  void set(const Node& n, size_t i, ValueInfo v) {
    if (i < n.outputs.size() && !n.outputs[i].empty()) types_[n.outputs[i]] = std::move(v);
  }
  void set_data(const Node& n, size_t i, Items d) {
    if (i < n.outputs.size() && !n.outputs[i].empty() &&
        static_cast<int64_t>(d.size()) <= kMaxTracked) {
      data_[n.outputs[i]] = std::move(d);
    }
  }
  void track_constant(const std::string& name, const TensorData& t) {
    if (t.shape.rank() > 1 || t.numel() > kMaxTracked) return;
    if (t.dtype != DType::i64 && t.dtype != DType::i32) return;
    Items d;
    for (int64_t x : t.to_vector<int64_t>()) d.push_back(Item{x, ""});
    data_[name] = std::move(d);
  }

  void node(const Node& n) {
    for (size_t i = 0; i < n.outputs.size(); ++i) set(n, i, ValueInfo{});
    if (!normal_domain(n.domain).empty()) return;
    const std::string& op = n.op_type;
    const auto rule = rules().find(op);
    if (rule != rules().end()) (this->*(rule->second))(n);
  }

  using Rule = void (Inference::*)(const Node&);
  static const std::map<std::string, Rule>& rules() {
    static const std::map<std::string, Rule> table = [] {
      std::map<std::string, Rule> r;
      for (const char* op : {"Identity",
                             "Relu",
                             "Sigmoid",
                             "Tanh",
                             "Exp",
                             "Log",
                             "Abs",
                             "Neg",
                             "Sqrt",
                             "Floor",
                             "Ceil",
                             "Reciprocal",
                             "Sin",
                             "Cos",
                             "Tan",
                             "Asin",
                             "Acos",
                             "Atan",
                             "Sinh",
                             "Cosh",
                             "Asinh",
                             "Acosh",
                             "Atanh",
                             "Erf",
                             "Sign",
                             "Round",
                             "LeakyRelu",
                             "Elu",
                             "Selu",
                             "Celu",
                             "HardSigmoid",
                             "HardSwish",
                             "Softplus",
                             "Softsign",
                             "Mish",
                             "Gelu",
                             "ThresholdedRelu",
                             "Shrink",
                             "Clip",
                             "Softmax",
                             "LogSoftmax",
                             "Hardmax",
                             "LRN",
                             "InstanceNormalization",
                             "GroupNormalization",
                             "MeanVarianceNormalization",
                             "CumSum",
                             "Trilu",
                             "ReverseSequence",
                             "BitwiseNot",
                             "ScatterElements",
                             "ScatterND",
                             "Scatter"}) {
        r[op] = &Inference::same_as_first;
      }
      for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "Min", "Max", "Sum",
                             "Mean", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
        r[op] = &Inference::broadcasting;
      }
      for (const char* op :
           {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
        r[op] = &Inference::comparison;
      }
      for (const char* op : {"Not", "IsNaN", "IsInf"}) r[op] = &Inference::predicate;
      for (const char* op :
           {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
            "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
        r[op] = &Inference::reduce;
      }
      for (const char* op : {"Conv", "MaxPool", "AveragePool", "LpPool"}) {
        r[op] = &Inference::windowed;
      }
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
        r[op] = &Inference::global_pool;
      }
      for (const char* op : {"LSTM", "GRU", "RNN"}) r[op] = &Inference::recurrent;
      r["Dropout"] = &Inference::dropout;
      r["BatchNormalization"] = &Inference::first_output_same;
      r["LayerNormalization"] = &Inference::first_output_same;
      r["Cast"] = &Inference::cast;
      r["CastLike"] = &Inference::cast;
      r["Where"] = &Inference::where;
      r["MatMul"] = &Inference::matmul;
      r["Gemm"] = &Inference::gemm;
      r["ConvTranspose"] = &Inference::conv_transpose;
      r["Flatten"] = &Inference::flatten;
      r["Reshape"] = &Inference::reshape;
      r["Shape"] = &Inference::shape;
      r["Size"] = &Inference::size;
      r["Transpose"] = &Inference::transpose;
      r["Squeeze"] = &Inference::squeeze;
      r["Unsqueeze"] = &Inference::unsqueeze;
      r["Concat"] = &Inference::concat;
      r["Gather"] = &Inference::gather;
      r["GatherElements"] = &Inference::gather_elements;
      r["Slice"] = &Inference::slice;
      r["Split"] = &Inference::split;
      r["Expand"] = &Inference::expand;
      r["Constant"] = &Inference::constant;
      r["ConstantOfShape"] = &Inference::constant_of_shape;
      r["Range"] = &Inference::range;
      r["ArgMax"] = &Inference::arg_reduce;
      r["ArgMin"] = &Inference::arg_reduce;
      r["TopK"] = &Inference::top_k;
      r["Pad"] = &Inference::pad;
      r["Tile"] = &Inference::tile;
      r["NonZero"] = &Inference::non_zero;
      r["If"] = &Inference::if_node;
      r["Loop"] = &Inference::loop;
      return r;
    }();
    return table;
  }

  // ---- Elementwise ----
  void same_as_first(const Node& n) { set(n, 0, in(n, 0)); }
  void first_output_same(const Node& n) { set(n, 0, in(n, 0)); }
  void dropout(const Node& n) {
    set(n, 0, in(n, 0));
    set(n, 1, with_elem(in(n, 0), kBool));
  }
  ValueInfo broadcast_of(const Node& n, size_t from, int64_t elem) const {
    std::vector<const ValueInfo*> ins;
    for (size_t i = from; i < n.inputs.size(); ++i) ins.push_back(&in(n, i));
    const auto shape = broadcast(ins);
    return shape ? tensor(elem, *shape) : of_rank(elem, -1);
  }
  void broadcasting(const Node& n) {
    set(n, 0, broadcast_of(n, 0, in(n, 0).elem_type));
    // Integer arithmetic on tracked shapes (a Reshape to [batch, sequence, heads * dim]).
    const std::string& op = n.op_type;
    const Items *a = data(n, 0), *b = data(n, 1);
    if (!a || !b || n.inputs.size() != 2 ||
        (op != "Add" && op != "Sub" && op != "Mul" && op != "Div"))
      return;
    if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return;
    Items out;
    for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
      const Item& x = (*a)[a->size() == 1 ? 0 : i];
      const Item& y = (*b)[b->size() == 1 ? 0 : i];
      out.push_back(combine(op, x, y));
    }
    set_data(n, 0, out);
  }
  static Item combine(const std::string& op, const Item& x, const Item& y) {
    if (x.value && y.value) {
      const Wide a = *x.value, b = *y.value;
      const Wide r = op == "Add" ? a + b : op == "Sub" ? a - b : op == "Mul" ? a * b : -1;
      if (op == "Div") return a >= 0 && b > 0 ? Item{*x.value / *y.value, ""} : Item{};
      if (r < -kMaxSize || r > kMaxSize) return {};
      return {static_cast<int64_t>(r), ""};
    }
    // A symbol times or divided by 1, plus or minus 0, stays itself.
    const bool identity =
        (y.value && ((op == "Mul" || op == "Div") ? *y.value == 1 : *y.value == 0));
    if (identity && !x.symbol.empty()) return x;
    if (op == "Mul" && x.value == 1 && !y.symbol.empty()) return y;
    return {};
  }
  void comparison(const Node& n) { set(n, 0, broadcast_of(n, 0, kBool)); }
  void predicate(const Node& n) { set(n, 0, with_elem(in(n, 0), kBool)); }
  void where(const Node& n) { set(n, 0, broadcast_of(n, 0, in(n, 1).elem_type)); }
  void cast(const Node& n) {
    const int64_t to = n.op_type == "Cast" ? attr_i(n, "to", 0) : in(n, 1).elem_type;
    set(n, 0, with_elem(in(n, 0), to));
    if (const Items* d = data(n, 0); d && (to == kInt64 || to == 6)) set_data(n, 0, *d);
  }

  // ---- Linear algebra ----
  void matmul(const Node& n) {
    const ValueInfo &a = in(n, 0), &b = in(n, 1);
    if (!a.has_shape || !b.has_shape || a.shape.empty() || b.shape.empty()) {
      set(n, 0, of_rank(a.elem_type, -1));
      return;
    }
    Dims as = a.shape, bs = b.shape;
    const bool vec_a = as.size() == 1, vec_b = bs.size() == 1;
    if (vec_a) as.insert(as.begin(), known(1));
    if (vec_b) bs.push_back(known(1));
    const ValueInfo batch_a = tensor(0, Dims(as.begin(), as.end() - 2));
    const ValueInfo batch_b = tensor(0, Dims(bs.begin(), bs.end() - 2));
    Dims out = *broadcast({&batch_a, &batch_b});
    if (!vec_a) out.push_back(as[as.size() - 2]);
    if (!vec_b) out.push_back(bs.back());
    set(n, 0, tensor(a.elem_type, out));
  }
  void gemm(const Node& n) {
    const ValueInfo &a = in(n, 0), &b = in(n, 1);
    if (rank_of(a) != 2 || rank_of(b) != 2) {
      set(n, 0, of_rank(a.elem_type, 2));
      return;
    }
    const Dim m = a.shape[attr_i(n, "transA", 0) ? 1 : 0];
    const Dim k = b.shape[attr_i(n, "transB", 0) ? 0 : 1];
    set(n, 0, tensor(a.elem_type, {m, k}));
  }

  // ---- Convolution and pooling ----
  // Output size of one spatial dim (ONNX's formula, auto_pad and ceil_mode included).
  static Dim window_out(const Dim& size, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                        const std::string& auto_pad, bool ceil_mode) {
    if (!is_known(size) || k < 1 || s < 1 || d < 1) return Dim{};
    const Wide span = Wide{d} * (k - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return known(ceil_div(size.size, s));
    if (auto_pad == "VALID") return known(std::max<Wide>(0, ceil_div(size.size - span + 1, s)));
    const Wide room = Wide{size.size} + pb + pe - span;
    if (room < 0) return Dim{};
    Wide out = (ceil_mode ? ceil_div(room, s) : room / s) + 1;
    // A last window starting in the end padding is dropped (PyTorch's and ONNX's rule).
    if (ceil_mode && (out - 1) * s >= Wide{size.size} + pb) --out;
    return known(out);
  }
  void windowed(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const bool conv = n.op_type == "Conv";
    if (!x.has_shape || x.shape.size() < 3) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    const size_t spatial = x.shape.size() - 2;
    std::optional<Ints> kernel = attr_is(n, "kernel_shape");
    const ValueInfo& w = in(n, 1);
    if (!kernel && conv && w.has_shape && w.shape.size() == x.shape.size()) {
      const Dims ks(w.shape.begin() + 2, w.shape.end());
      Ints k;
      for (const Dim& d : ks) k.push_back(d.size);
      if (std::all_of(k.begin(), k.end(), [](int64_t v) { return v >= 0; })) kernel = k;
    }
    Dims out{x.shape[0], x.shape[1]};
    if (conv) out[1] = w.has_shape && !w.shape.empty() ? w.shape[0] : Dim{};
    const Ints strides = attr_is(n, "strides").value_or(Ints(spatial, 1));
    const Ints dilations = attr_is(n, "dilations").value_or(Ints(spatial, 1));
    const Ints pads = attr_is(n, "pads").value_or(Ints(2 * spatial, 0));
    const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
    const bool ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
    const bool sane = kernel && kernel->size() == spatial && strides.size() == spatial &&
                      dilations.size() == spatial && pads.size() == 2 * spatial;
    for (size_t i = 0; i < spatial; ++i) {
      out.push_back(sane ? window_out(x.shape[2 + i], (*kernel)[i], strides[i], dilations[i],
                                      pads[i], pads[spatial + i], auto_pad, ceil_mode)
                         : Dim{});
    }
    set(n, 0, tensor(x.elem_type, out));
    if (n.op_type == "MaxPool") set(n, 1, tensor(kInt64, out));
  }
  void conv_transpose(const Node& n) {
    const ValueInfo &x = in(n, 0), &w = in(n, 1);
    if (!x.has_shape || x.shape.size() < 3 || rank_of(w) != rank_of(x)) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    const size_t spatial = x.shape.size() - 2;
    const int64_t group = attr_i(n, "group", 1);
    Dims out{x.shape[0], is_known(w.shape[1]) ? known(Wide{w.shape[1].size} * group) : Dim{}};
    const Ints strides = attr_is(n, "strides").value_or(Ints(spatial, 1));
    const Ints dilations = attr_is(n, "dilations").value_or(Ints(spatial, 1));
    const Ints pads = attr_is(n, "pads").value_or(Ints(2 * spatial, 0));
    const Ints extra = attr_is(n, "output_padding").value_or(Ints(spatial, 0));
    const auto output_shape = attr_is(n, "output_shape");
    const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
    const bool sane = strides.size() == spatial && dilations.size() == spatial &&
                      pads.size() == 2 * spatial && extra.size() == spatial;
    for (size_t i = 0; i < spatial; ++i) {
      const Dim& size = x.shape[2 + i];
      const Dim& k = w.shape[2 + i];
      if (output_shape && output_shape->size() == spatial) {
        out.push_back(known((*output_shape)[i]));
      } else if (!sane || !is_known(size) || !is_known(k)) {
        out.push_back(Dim{});
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out.push_back(known(Wide{size.size} * strides[i]));
      } else {
        const Wide p = auto_pad == "VALID" ? 0 : Wide{pads[i]} + pads[spatial + i];
        out.push_back(known(Wide{strides[i]} * (size.size - 1) + extra[i] +
                            Wide{k.size - 1} * dilations[i] + 1 - p));
      }
    }
    set(n, 0, tensor(x.elem_type, out));
  }
  void global_pool(const Node& n) {
    const ValueInfo& x = in(n, 0);
    if (!x.has_shape || x.shape.size() < 2) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    Dims out{x.shape[0], x.shape[1]};
    out.resize(x.shape.size(), known(1));
    set(n, 0, tensor(x.elem_type, out));
  }

  // ---- Reductions ----
  // The output of reducing `axes` (all when empty); nullopt axes: unknown which.
  ValueInfo reduced(const ValueInfo& x, const std::optional<Ints>& axes, bool keepdims,
                    int64_t elem) const {
    if (!x.has_shape) return of_rank(elem, -1);
    const int64_t rank = rank_of(x);
    if (!axes) return keepdims ? of_rank(elem, rank) : of_rank(elem, -1);
    std::set<int64_t> which;
    for (int64_t a : *axes) {
      const auto ax = axis_in(a, rank);
      if (!ax) return of_rank(elem, -1);
      which.insert(*ax);
    }
    Dims out;
    for (int64_t i = 0; i < rank; ++i) {
      if (which.empty() || which.count(i)) {
        if (keepdims) out.push_back(known(1));
      } else {
        out.push_back(x.shape[static_cast<size_t>(i)]);
      }
    }
    return tensor(elem, out);
  }
  void reduce(const Node& n) {
    const bool as_input = n.op_type == "ReduceSum" ? opset_ >= 13 : opset_ >= 18;
    std::optional<Ints> axes = as_input ? ints(n, 1) : attr_is(n, "axes");
    if (!axes && (as_input ? !has_in(n, 1) : true)) axes = Ints{};  // absent: all axes
    if (axes && axes->empty() && attr_i(n, "noop_with_empty_axes", 0)) {
      set(n, 0, in(n, 0));
      return;
    }
    set(n, 0, reduced(in(n, 0), axes, attr_i(n, "keepdims", 1) != 0, in(n, 0).elem_type));
  }
  void arg_reduce(const Node& n) {
    set(n, 0, reduced(in(n, 0), Ints{attr_i(n, "axis", 0)}, attr_i(n, "keepdims", 1) != 0, kInt64));
  }
  void top_k(const Node& n) {
    const ValueInfo& x = in(n, 0);
    ValueInfo out = x;
    const auto k = opset_ >= 10 ? ints(n, 1) : std::optional<Ints>(Ints{attr_i(n, "k", -1)});
    if (const auto ax = axis_in(attr_i(n, "axis", -1), rank_of(x))) {
      out.shape[static_cast<size_t>(*ax)] = k && k->size() == 1 ? known((*k)[0]) : Dim{};
    } else {
      out = of_rank(x.elem_type, rank_of(x));
    }
    set(n, 0, out);
    set(n, 1, with_elem(out, kInt64));
  }

  // ---- Shapes ----
  void shape(const Node& n) {
    const ValueInfo& x = in(n, 0);
    if (!x.has_shape) {
      set(n, 0, of_rank(kInt64, 1));
      return;
    }
    const int64_t rank = rank_of(x);
    int64_t start = opset_ >= 15 ? attr_i(n, "start", 0) : 0;
    int64_t end = opset_ >= 15 ? attr_i(n, "end", rank) : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    const Dims part(x.shape.begin() + start, x.shape.begin() + end);
    set(n, 0, tensor(kInt64, {known(end - start)}));
    set_data(n, 0, items_of(part));
  }
  void size(const Node& n) {
    set(n, 0, tensor(kInt64, {}));
    const ValueInfo& x = in(n, 0);
    if (x.has_shape) {
      if (const auto p = product(x.shape, 0, x.shape.size())) set_data(n, 0, {Item{*p, ""}});
    }
  }
  void flatten(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const int64_t rank = rank_of(x);
    int64_t axis = attr_i(n, "axis", 1);
    if (rank < 0) {
      set(n, 0, of_rank(x.elem_type, 2));
      return;
    }
    if (axis < 0) axis += rank;
    axis = std::clamp<int64_t>(axis, 0, rank);
    const auto dim = [&](size_t from, size_t to) {
      if (to == from + 1) return x.shape[from];  // a single dim keeps its symbol
      const auto p = product(x.shape, from, to);
      return p ? known(*p) : Dim{};
    };
    set(n, 0, tensor(x.elem_type, {dim(0, axis), dim(axis, rank)}));
  }
  void reshape(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const Items* target = data(n, 1);
    if (target == nullptr) {
      const ValueInfo& s = in(n, 1);
      set(n, 0,
          of_rank(x.elem_type, rank_of(s) == 1 && is_known(s.shape[0]) ? s.shape[0].size : -1));
      return;
    }
    const bool allow_zero = opset_ >= 14 && attr_i(n, "allowzero", 0) != 0;
    Dims out;
    std::optional<size_t> infer_at;
    for (size_t i = 0; i < target->size(); ++i) {
      const Item& d = (*target)[i];
      if (d.value == 0 && !allow_zero) {
        out.push_back(x.has_shape && i < x.shape.size() ? x.shape[i] : Dim{});
      } else if (d.value == -1) {
        infer_at = i;  // -1: the size that keeps the element count
        out.push_back(Dim{});
      } else {
        out.push_back(dim_of(d));
      }
    }
    if (infer_at && x.has_shape) out[*infer_at] = inferred_dim(x.shape, out, *infer_at);
    set(n, 0, tensor(x.elem_type, out));
  }
  // Reshape's -1: known when both element counts are; the input's symbol when everything else
  // cancels (a [batch, 384] -> [-1, 384] keeps "batch").
  static Dim inferred_dim(const Dims& from, const Dims& to, size_t at) {
    std::vector<Dim> rest_from = from, rest_to;
    for (size_t i = 0; i < to.size(); ++i) {
      if (i != at) rest_to.push_back(to[i]);
    }
    // Cancel equal dims (a symbol on both sides, or equal sizes).
    for (auto it = rest_to.begin(); it != rest_to.end();) {
      const auto match = std::find_if(rest_from.begin(), rest_from.end(),
                                      [&](const Dim& d) { return same(d, *it); });
      if (match == rest_from.end()) {
        ++it;
        continue;
      }
      rest_from.erase(match);
      it = rest_to.erase(it);
    }
    const auto pf = product(rest_from, 0, rest_from.size());
    const auto pt = product(rest_to, 0, rest_to.size());
    if (pf && pt && *pt > 0 && *pf % *pt == 0) return known(*pf / *pt);
    if (rest_from.size() == 1 && !is_known(rest_from[0]) && pt && *pt == 1) return rest_from[0];
    return Dim{};
  }
  void transpose(const Node& n) {
    const ValueInfo& x = in(n, 0);
    if (!x.has_shape) {
      set(n, 0, x);
      return;
    }
    Ints perm = attr_is(n, "perm").value_or(Ints{});
    if (perm.empty()) {
      for (int64_t i = rank_of(x) - 1; i >= 0; --i) perm.push_back(i);
    }
    Dims out;
    for (int64_t p : perm) {
      const auto ax = axis_in(p, rank_of(x));
      out.push_back(ax ? x.shape[static_cast<size_t>(*ax)] : Dim{});
    }
    set(n, 0, tensor(x.elem_type, out));
  }
  void squeeze(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const bool as_input = opset_ >= 13;
    const std::optional<Ints> axes = as_input ? ints(n, 1) : attr_is(n, "axes");
    const bool all_ones = as_input ? !has_in(n, 1) : !attr_is(n, "axes");
    if (!x.has_shape || (!axes && !all_ones)) {
      set(n, 0, of_rank(x.elem_type, -1));
      return;
    }
    std::set<int64_t> drop;
    for (int64_t a : axes.value_or(Ints{})) {
      const auto ax = axis_in(a, rank_of(x));
      if (!ax) return;
      drop.insert(*ax);
    }
    Dims out;
    for (size_t i = 0; i < x.shape.size(); ++i) {
      if (all_ones && !is_known(x.shape[i])) {
        set(n, 0, of_rank(x.elem_type, -1));  // which dims are 1 is not known
        return;
      }
      const bool gone = all_ones ? x.shape[i].size == 1 : drop.count(static_cast<int64_t>(i)) > 0;
      if (!gone) out.push_back(x.shape[i]);
    }
    set(n, 0, tensor(x.elem_type, out));
    if (const Items* d = data(n, 0); d && d->size() == 1) set_data(n, 0, *d);
  }
  void unsqueeze(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const std::optional<Ints> axes = opset_ >= 13 ? ints(n, 1) : attr_is(n, "axes");
    if (!x.has_shape || !axes) {
      set(n, 0, of_rank(x.elem_type, -1));
      return;
    }
    const int64_t rank = rank_of(x) + static_cast<int64_t>(axes->size());
    std::set<int64_t> ones;
    for (int64_t a : *axes) {
      const auto ax = axis_in(a, rank);
      if (!ax) return;
      ones.insert(*ax);
    }
    Dims out;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i) out.push_back(ones.count(i) ? known(1) : x.shape[next++]);
    set(n, 0, tensor(x.elem_type, out));
    if (const Items* d = data(n, 0); d && rank <= 1) set_data(n, 0, *d);
  }
  void concat(const Node& n) {
    const ValueInfo& first = in(n, 0);
    const auto ax = axis_in(attr_i(n, "axis", 0), rank_of(first));
    Items joined;
    bool all_data = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Items* d = data(n, i);
      if (d == nullptr) all_data = false;
      if (d) joined.insert(joined.end(), d->begin(), d->end());
    }
    if (!ax) {
      set(n, 0, of_rank(first.elem_type, rank_of(first)));
      return;
    }
    Dims out = first.shape;
    Wide total = 0;
    bool sum_known = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueInfo& v = in(n, i);
      if (rank_of(v) != rank_of(first)) {
        set(n, 0, of_rank(first.elem_type, rank_of(first)));
        return;
      }
      const Dim& d = v.shape[static_cast<size_t>(*ax)];
      sum_known = sum_known && is_known(d);
      total += std::max<int64_t>(d.size, 0);
      for (size_t j = 0; j < out.size(); ++j) {
        if (static_cast<int64_t>(j) != *ax && !same(out[j], v.shape[j])) {
          out[j] = is_known(v.shape[j]) ? v.shape[j] : is_known(out[j]) ? out[j] : Dim{};
        }
      }
    }
    // One input along the axis keeps its symbol ("sequence" concatenated with nothing).
    out[static_cast<size_t>(*ax)] = sum_known              ? known(total)
                                    : n.inputs.size() == 1 ? first.shape[static_cast<size_t>(*ax)]
                                                           : Dim{};
    set(n, 0, tensor(first.elem_type, out));
    if (all_data && rank_of(first) <= 1) set_data(n, 0, joined);
  }
  void gather(const Node& n) {
    const ValueInfo &x = in(n, 0), &idx = in(n, 1);
    const auto ax = axis_in(attr_i(n, "axis", 0), rank_of(x));
    if (!ax || !idx.has_shape) {
      set(n, 0, of_rank(x.elem_type, -1));
      return;
    }
    Dims out(x.shape.begin(), x.shape.begin() + *ax);
    out.insert(out.end(), idx.shape.begin(), idx.shape.end());
    out.insert(out.end(), x.shape.begin() + *ax + 1, x.shape.end());
    set(n, 0, tensor(x.elem_type, out));
    // Shape(x)[i]: a dim of a tracked shape.
    const Items* d = data(n, 0);
    const auto which = ints(n, 1);
    if (d && which && *ax == 0 && rank_of(x) == 1) {
      Items picked;
      for (int64_t i : *which) {
        if (i < 0) i += static_cast<int64_t>(d->size());
        if (i < 0 || i >= static_cast<int64_t>(d->size())) return;
        picked.push_back((*d)[static_cast<size_t>(i)]);
      }
      set_data(n, 0, picked);
    }
  }
  void gather_elements(const Node& n) { set(n, 0, with_elem(in(n, 1), in(n, 0).elem_type)); }
  void slice(const Node& n) {
    const ValueInfo& x = in(n, 0);
    if (!x.has_shape) {
      set(n, 0, x);
      return;
    }
    const bool as_input = opset_ >= 10;
    const auto starts = as_input ? ints(n, 1) : attr_is(n, "starts");
    const auto ends = as_input ? ints(n, 2) : attr_is(n, "ends");
    std::optional<Ints> axes = as_input ? ints(n, 3) : attr_is(n, "axes");
    std::optional<Ints> steps = as_input ? ints(n, 4) : std::nullopt;
    const bool no_axes = as_input ? !has_in(n, 3) : !attr_is(n, "axes");
    const bool no_steps = !as_input || !has_in(n, 4);
    ValueInfo out = x;
    if (!starts || !ends || (!axes && !no_axes) || (!steps && !no_steps) ||
        starts->size() != ends->size()) {
      for (Dim& d : out.shape) d = Dim{};  // which dims change is not known
      set(n, 0, out);
      return;
    }
    if (!axes) {
      axes = Ints{};
      for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
    }
    if (!steps) steps = Ints(starts->size(), 1);
    if (axes->size() != starts->size() || steps->size() != starts->size()) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    const Items* d = data(n, 0);
    for (size_t i = 0; i < starts->size(); ++i) {
      const auto ax = axis_in((*axes)[i], rank_of(x));
      if (!ax || (*steps)[i] == 0) {
        set(n, 0, of_rank(x.elem_type, rank_of(x)));
        return;
      }
      const Dim& size = x.shape[static_cast<size_t>(*ax)];
      Dim& o = out.shape[static_cast<size_t>(*ax)];
      o = is_known(size) ? known(slice_length(size.size, (*starts)[i], (*ends)[i], (*steps)[i]))
                         : Dim{};
      // Slicing a tracked 1-D shape: the selected elements.
      if (d && rank_of(x) == 1 && is_known(size) && static_cast<int64_t>(d->size()) == size.size) {
        Items picked;
        const int64_t step = (*steps)[i];
        int64_t s = (*starts)[i], e = (*ends)[i];
        clamp_range(size.size, step, s, e);
        for (int64_t j = s; step > 0 ? j < e : j > e; j += step) {
          picked.push_back((*d)[static_cast<size_t>(j)]);
        }
        set_data(n, 0, picked);
      }
    }
    set(n, 0, out);
  }
  // ONNX Slice's clamping of start and end to a dim of `size`.
  static void clamp_range(int64_t size, int64_t step, int64_t& start, int64_t& end) {
    if (size <= 0) {  // nothing to select (and std::clamp needs lo <= hi)
      start = end = 0;
      return;
    }
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, size);
      end = std::clamp<int64_t>(end, 0, size);
    } else {
      start = std::clamp<int64_t>(start, 0, size - 1);
      end = std::clamp<int64_t>(end, -1, size - 1);
    }
  }
  static int64_t slice_length(int64_t size, int64_t start, int64_t end, int64_t step) {
    clamp_range(size, step, start, end);
    const Wide len =
        step > 0 ? ceil_div(Wide{end} - start, step) : ceil_div(Wide{start} - end, -Wide{step});
    return static_cast<int64_t>(std::max<Wide>(0, len));
  }
  void split(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const auto ax = axis_in(attr_i(n, "axis", 0), rank_of(x));
    const size_t parts = n.outputs.size();
    for (size_t i = 0; i < parts; ++i) set(n, i, of_rank(x.elem_type, rank_of(x)));
    if (!ax) return;
    std::optional<Ints> sizes = opset_ >= 13 ? ints(n, 1) : attr_is(n, "split");
    const bool given = opset_ >= 13 ? has_in(n, 1) : attr_is(n, "split").has_value();
    const Dim& whole = x.shape[static_cast<size_t>(*ax)];
    if (!given && is_known(whole) && parts > 0) {
      // Equal parts; from opset 18 the last may be smaller (ceil division).
      const Wide each = ceil_div(whole.size, static_cast<Wide>(parts));
      sizes = Ints{};
      for (size_t i = 0; i < parts; ++i) {
        const Wide part = std::max<Wide>(0, std::min(each, whole.size - each * Wide(i)));
        sizes->push_back(static_cast<int64_t>(part));
      }
    }
    for (size_t i = 0; i < parts; ++i) {
      ValueInfo part = x;
      part.shape[static_cast<size_t>(*ax)] =
          sizes && sizes->size() == parts ? known((*sizes)[i]) : Dim{};
      set(n, i, part);
    }
  }
  void expand(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const Items* target = data(n, 1);
    if (target == nullptr) {
      set(n, 0, of_rank(x.elem_type, -1));
      return;
    }
    const ValueInfo shape = tensor(0, dims_of(*target));
    set(n, 0, broadcast_of_two(x, shape, x.elem_type));
  }
  static ValueInfo broadcast_of_two(const ValueInfo& a, const ValueInfo& b, int64_t elem) {
    const auto shape = broadcast({&a, &b});
    return shape ? tensor(elem, *shape) : of_rank(elem, -1);
  }
  void tile(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const auto repeats = ints(n, 1);
    if (!x.has_shape || !repeats || repeats->size() != x.shape.size()) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    Dims out;
    for (size_t i = 0; i < x.shape.size(); ++i) {
      out.push_back((*repeats)[i] == 1     ? x.shape[i]
                    : is_known(x.shape[i]) ? known(Wide{x.shape[i].size} * (*repeats)[i])
                                           : Dim{});
    }
    set(n, 0, tensor(x.elem_type, out));
  }
  void pad(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const auto pads = opset_ >= 11 ? ints(n, 1) : attr_is(n, "pads");
    const bool has_axes = opset_ >= 18 && has_in(n, 3);
    if (!x.has_shape || !pads || has_axes || pads->size() != 2 * x.shape.size()) {
      set(n, 0, of_rank(x.elem_type, rank_of(x)));
      return;
    }
    const size_t r = x.shape.size();
    Dims out;
    for (size_t i = 0; i < r; ++i) {
      const Wide add = Wide{(*pads)[i]} + (*pads)[r + i];
      out.push_back(add == 0               ? x.shape[i]
                    : is_known(x.shape[i]) ? known(x.shape[i].size + add)
                                           : Dim{});
    }
    set(n, 0, tensor(x.elem_type, out));
  }
  void non_zero(const Node& n) {
    const int64_t rank = rank_of(in(n, 0));
    set(n, 0, tensor(kInt64, {rank >= 0 ? known(rank) : Dim{}, Dim{}}));
  }

  // ---- Constants ----
  void constant(const Node& n) {
    for (const auto& [name, a] : n.attributes) {
      if (a.kind == Attribute::Kind::Tensor) {
        Dims shape;
        for (int64_t d : a.t.shape.vec()) shape.push_back(known(d));
        set(n, 0, tensor(onnx_type_of(a.t.dtype), shape));
        if (!n.outputs.empty()) track_constant(n.outputs[0], a.t);
      } else if (name == "value_int") {
        set(n, 0, tensor(kInt64, {}));
        set_data(n, 0, {Item{a.i, ""}});
      } else if (name == "value_ints") {
        set(n, 0, tensor(kInt64, {known(static_cast<int64_t>(a.ints.size()))}));
        Items d;
        for (int64_t v : a.ints) d.push_back(Item{v, ""});
        set_data(n, 0, d);
      } else if (name == "value_float") {
        set(n, 0, tensor(kFloat, {}));
      } else if (name == "value_floats") {
        set(n, 0, tensor(kFloat, {known(static_cast<int64_t>(a.floats.size()))}));
      }
    }
  }
  void constant_of_shape(const Node& n) {
    int64_t elem = kFloat;
    const auto it = n.attributes.find("value");
    if (it != n.attributes.end() && it->second.kind == Attribute::Kind::Tensor) {
      elem = onnx_type_of(it->second.t.dtype);
    }
    const Items* d = data(n, 0);
    const ValueInfo& s = in(n, 0);
    if (d) {
      set(n, 0, tensor(elem, dims_of(*d)));
    } else {
      set(n, 0, of_rank(elem, rank_of(s) == 1 && is_known(s.shape[0]) ? s.shape[0].size : -1));
    }
  }
  void range(const Node& n) {
    const auto start = ints(n, 0), limit = ints(n, 1), delta = ints(n, 2);
    Dim len;
    if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1 &&
        (*delta)[0] != 0) {
      const int64_t s = (*start)[0], l = (*limit)[0], dl = (*delta)[0];
      len = known(
          std::max<Wide>(0, dl > 0 ? ceil_div(Wide{l} - s, dl) : ceil_div(Wide{s} - l, -Wide{dl})));
    } else if (start == Ints{0} && delta == Ints{1} && data(n, 1) && data(n, 1)->size() == 1) {
      len = dim_of(data(n, 1)->front());  // arange(sequence): position ids
    }
    set(n, 0, tensor(in(n, 0).elem_type, {len}));
  }

  // ---- Recurrent layers: ONNX's layouts, [seq, dirs, batch, hidden] (layout 1: batch first) ----
  void recurrent(const Node& n) {
    const ValueInfo& x = in(n, 0);
    const int64_t hidden = attr_i(n, "hidden_size", -1);
    const Dim h = hidden > 0 ? known(hidden) : Dim{};
    const Dim dirs = known(attr_s(n, "direction", "forward") == "bidirectional" ? 2 : 1);
    const bool batch_first = attr_i(n, "layout", 0) != 0;
    Dim seq, batch;
    if (rank_of(x) == 3) {
      seq = x.shape[batch_first ? 1 : 0];
      batch = x.shape[batch_first ? 0 : 1];
    }
    set(n, 0,
        tensor(x.elem_type, batch_first ? Dims{batch, seq, dirs, h} : Dims{seq, dirs, batch, h}));
    const Dims state = batch_first ? Dims{batch, dirs, h} : Dims{dirs, batch, h};
    set(n, 1, tensor(x.elem_type, state));
    set(n, 2, tensor(x.elem_type, state));
  }

  // ---- Control flow: the subgraphs inferred with this scope's types ----
  std::map<std::string, ValueInfo> sub(const Graph& g, const std::vector<ValueInfo>& inputs) {
    Graph bound = g;  // the body's declared inputs replaced by what this node feeds them
    for (size_t i = 0; i < bound.inputs.size() && i < inputs.size(); ++i) {
      if (!bound.inputs[i].has_shape && bound.inputs[i].elem_type == 0) {
        const std::string name = bound.inputs[i].name;
        bound.inputs[i] = inputs[i];
        bound.inputs[i].name = name;
      }
    }
    Inference inner(opset_, types_, data_);
    return inner.run(bound);
  }
  static ValueInfo output_of(const Graph& g, const std::map<std::string, ValueInfo>& types,
                             size_t i) {
    if (i >= g.outputs.size()) return {};
    const auto it = types.find(g.outputs[i].name);
    return it == types.end() ? ValueInfo{} : it->second;
  }
  const Graph* graph_attr(const Node& n, const char* name) const {
    const auto it = n.attributes.find(name);
    return it != n.attributes.end() && it->second.g ? it->second.g.get() : nullptr;
  }
  void if_node(const Node& n) {
    const Graph* then_g = graph_attr(n, "then_branch");
    const Graph* else_g = graph_attr(n, "else_branch");
    if (then_g == nullptr || else_g == nullptr) return;
    const auto then_t = sub(*then_g, {}), else_t = sub(*else_g, {});
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      set(n, i, merge(output_of(*then_g, then_t, i), output_of(*else_g, else_t, i)));
    }
  }
  void loop(const Node& n) {
    const Graph* body = graph_attr(n, "body");
    if (body == nullptr) return;
    // Body inputs: iteration number, condition, then the carried values.
    std::vector<ValueInfo> feed{tensor(kInt64, {}), tensor(kBool, {})};
    const size_t carried = n.inputs.size() > 2 ? n.inputs.size() - 2 : 0;
    for (size_t i = 0; i < carried; ++i) feed.push_back(in(n, 2 + i));
    const auto types = sub(*body, feed);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ValueInfo out = output_of(*body, types, i + 1);
      if (i < carried) {
        // Zero iterations return the initial value: both must agree.
        set(n, i, merge(in(n, 2 + i), out));
      } else {
        ValueInfo scan = of_rank(out.elem_type, out.has_shape ? rank_of(out) + 1 : -1);
        if (out.has_shape) std::copy(out.shape.begin(), out.shape.end(), scan.shape.begin() + 1);
        set(n, i, scan);
      }
    }
  }

  int64_t opset_;
  std::map<std::string, ValueInfo> types_;
  std::map<std::string, Items> data_;
};

}  // namespace

std::map<std::string, ValueInfo> infer_types(const Graph& g, int64_t opset,
                                             const std::map<std::string, ValueInfo>& outer) {
  std::map<std::string, ValueInfo> types = Inference(opset, outer, {}).run(g);
  for (auto& [name, v] : types) {
    v.name = name;
    if (v.elem_type != 0) {
      v.dtype_name = type_name(v.elem_type);
      v.known_dtype = dtype_of(v.elem_type, &v.dtype);
    } else if (v.dtype_name.empty()) {
      v.dtype_name = "unknown";
      v.known_dtype = false;
    }
  }
  return types;
}

}  // namespace ember::onnx
