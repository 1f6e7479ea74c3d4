// ONNX's control flow (If, Loop, Scan), sequence ops, optional ops, and the training domain's
// optimizer steps (ai.onnx.preview.training: Adagrad, Adam, Momentum).
//
// Subgraphs run through OpContext::run_graph, which sees the node's scope. Conditions and trip
// counts are read to the host (control flow needs them there); everything else stays on the
// device. Sequences are Values of Kind::Sequence; an empty optional is a Value of Kind::None.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

const Graph& graph_attr(const OpContext& c, const char* name) {  // no temporary: g++ 13 would warn
  const Attribute& a = c.attr(name);
  if (a.kind != Attribute::Kind::Graph || !a.g) c.fail("attribute '", name, "' must be a graph");
  return *a.g;
}

// Required attributes (attr raises when absent; attr_int/attr_float check the kind).
int64_t required_int(const OpContext& c, const std::string& name) {
  c.attr(name);
  return c.attr_int(name, 0);
}
double required_float(const OpContext& c, const std::string& name) {
  c.attr(name);
  return c.attr_float(name, 0);
}

// A one-element tensor's truth (If's and Loop's conditions).
bool truth(const OpContext& c, const Value& v, const char* what) {
  if (v.kind != Value::Kind::Tensor || v.tensor.numel() != 1) {
    c.fail(what, " must be a tensor of one element");
  }
  return v.tensor.to_vector<double>()[0] != 0;
}

const DynTensor& tensor_of(const OpContext& c, const Value& v, const std::string& what) {
  if (v.kind != Value::Kind::Tensor) c.fail(what, " must be a tensor");
  return v.tensor;
}

const std::vector<DynTensor>& sequence_of(const OpContext& c, size_t i) {
  const Value& v = c.value(i);
  if (v.kind != Value::Kind::Sequence) c.fail("input ", i, " must be a sequence");
  return v.sequence;
}

// Runs `body` and checks it gave `count` outputs.
std::vector<Value> run_body(const OpContext& c, const Graph& body, std::vector<Value> inputs,
                            size_t count) {
  if (inputs.size() != body.inputs.size()) {
    c.fail("the subgraph '", body.name, "' takes ", body.inputs.size(), " inputs, the node gives ",
           inputs.size());
  }
  std::vector<Value> outs = c.run_graph(body, std::move(inputs));
  if (outs.size() != count) {
    c.fail("the subgraph '", body.name, "' gives ", outs.size(), " outputs, ", count, " expected");
  }
  return outs;
}

// The scan output of zero iterations: empty along `axis`, its other dims as the body declares
// them (unknown ones 0).
DynTensor empty_scan_output(const OpContext& c, const ValueInfo& declared, int64_t axis) {
  Shape shape;
  for (const Dim& d : declared.shape) shape.push_back(std::max<int64_t>(d.size, 0));
  const int64_t rank = shape.rank();
  if (axis < 0) axis += rank + 1;
  if (axis < 0 || axis > rank) c.fail("scan output axis ", axis, " is out of range");
  Shape out;
  for (int64_t d = 0; d <= rank; ++d) {
    if (d == axis) out.push_back(0);
    if (d < rank) out.push_back(shape[static_cast<int>(d)]);
  }
  return zeros(out, declared.known_dtype ? declared.dtype : DType::f32, c.device());
}

// ---- If ----

std::vector<Value> if_op(OpContext& c) {
  const bool cond = truth(c, c.value(0), "the condition");
  const Graph& branch = graph_attr(c, cond ? "then_branch" : "else_branch");
  return run_body(c, branch, {}, c.node().outputs.size());
}

// ---- Loop ----

// Inputs: M (max trip count), cond, then the loop-carried values; either of M and cond may be
// omitted. The body takes (iteration, cond, carried...) and gives (cond, carried..., scan
// elements...); the scan elements of all iterations are stacked along a new first axis.
// The body's condition counts only when the node has a cond input (ONNX's table of the four
// cases); with neither M nor cond, the loop runs forever, as the spec says.
std::vector<Value> loop(OpContext& c) {
  const Graph& body = graph_attr(c, "body");
  if (c.num_inputs() < 2) c.fail("Loop needs its M and cond inputs (either may be empty)");
  // Exporters often write INT64_MAX for "no limit": read M as an integer, not a double.
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (c.has(0)) {
    const std::vector<int64_t> m = c.ints(0);
    if (m.size() != 1) c.fail("M must hold one value, got ", m.size());
    max_trips = m[0];
  }
  const bool has_cond = c.has(1);
  bool cond = !has_cond || truth(c, c.value(1), "the condition");
  const size_t n_carried = c.num_inputs() - 2;
  if (body.outputs.size() < 1 + n_carried) {
    c.fail("the body gives ", body.outputs.size(), " outputs, fewer than its ", n_carried,
           " loop-carried values and the condition");
  }
  const size_t n_scan = body.outputs.size() - 1 - n_carried;
  std::vector<Value> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(c.value(2 + i));
  std::vector<std::vector<DynTensor>> scans(n_scan);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    std::vector<Value> in;
    in.push_back(Value::of(full(Shape{}, i, DType::i64, c.device())));
    in.push_back(Value::of(full(Shape{}, cond, DType::boolean, c.device())));
    for (Value& v : carried) in.push_back(std::move(v));
    std::vector<Value> outs = run_body(c, body, std::move(in), body.outputs.size());
    if (has_cond) cond = truth(c, outs[0], "the body's condition");
    for (size_t k = 0; k < n_carried; ++k) carried[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < n_scan; ++k) {
      scans[k].push_back(tensor_of(c, outs[1 + n_carried + k], "a scan output"));
    }
  }
  std::vector<Value> results = std::move(carried);
  for (size_t k = 0; k < n_scan; ++k) {
    results.push_back(Value::of(scans[k].empty()
                                    ? empty_scan_output(c, body.outputs[1 + n_carried + k], 0)
                                    : stack(scans[k], 0)));
  }
  return results;
}

// ---- Scan ----

struct ScanLayout {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

// The common part of every Scan: `length` iterations over `xs` (sliced along their axes, from
// the end where reversed), with `states` carried. Returns the final states, then the scan
// outputs stacked along their axes (in reverse order where asked).
std::vector<Value> run_scan(const OpContext& c, const Graph& body, std::vector<Value> states,
                            const std::vector<DynTensor>& xs, const ScanLayout& layout,
                            int64_t length) {
  const size_t n_states = states.size();
  if (body.outputs.size() < n_states) c.fail("the body gives fewer outputs than its states");
  const size_t n_out = body.outputs.size() - n_states;
  std::vector<std::vector<DynTensor>> scans(n_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> in = std::move(states);
    for (size_t j = 0; j < xs.size(); ++j) {
      const int64_t at = layout.in_reverse[j] ? length - 1 - t : t;
      in.push_back(Value::of(select(xs[j], layout.in_axes[j], at)));
    }
    std::vector<Value> outs = run_body(c, body, std::move(in), body.outputs.size());
    states.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_states));
    for (size_t k = 0; k < n_out; ++k) {
      scans[k].push_back(tensor_of(c, outs[n_states + k], "a scan output"));
    }
  }
  std::vector<Value> results = std::move(states);
  for (size_t k = 0; k < n_out; ++k) {
    const int64_t axis = k < layout.out_axes.size() ? layout.out_axes[k] : 0;
    if (scans[k].empty()) {
      results.push_back(Value::of(empty_scan_output(c, body.outputs[n_states + k], axis)));
      continue;
    }
    if (k < layout.out_reverse.size() && layout.out_reverse[k]) {
      std::reverse(scans[k].begin(), scans[k].end());
    }
    results.push_back(Value::of(stack(scans[k], axis)));
  }
  return results;
}

// The sequence length shared by every scan input along its axis (negative axes from opset 11).
int64_t scan_length(const OpContext& c, const std::vector<DynTensor>& xs,
                    std::vector<int64_t>* axes) {
  int64_t length = -1;
  for (size_t j = 0; j < xs.size(); ++j) {
    int64_t& a = (*axes)[j];
    const int64_t rank = xs[j].rank();
    if (a < -rank || a >= rank) c.fail("scan input ", j, " has no axis ", a, ": ", xs[j].shape());
    if (a < 0) a += rank;
    const int64_t n = xs[j].size(static_cast<int>(a));
    if (length >= 0 && n != length) {
      c.fail("scan inputs differ in length: ", length, " and ", n, " (input ", j, ")");
    }
    length = n;
  }
  return length < 0 ? 0 : length;
}

// Scan from opset 9: states, then num_scan_inputs inputs scanned along scan_input_axes.
std::vector<Value> scan9(OpContext& c) {
  const Graph& body = graph_attr(c, "body");
  const auto n_scan = static_cast<size_t>(required_int(c, "num_scan_inputs"));
  if (n_scan > c.num_inputs()) c.fail("num_scan_inputs ", n_scan, " is more than the inputs");
  const size_t n_states = c.num_inputs() - n_scan;
  const size_t n_out = body.outputs.size() >= n_states ? body.outputs.size() - n_states : 0;
  ScanLayout layout{c.attr_ints("scan_input_axes", std::vector<int64_t>(n_scan, 0)),
                    c.attr_ints("scan_input_directions", std::vector<int64_t>(n_scan, 0)),
                    c.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0)),
                    c.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0))};
  if (layout.in_axes.size() != n_scan || layout.in_reverse.size() != n_scan ||
      layout.out_axes.size() != n_out || layout.out_reverse.size() != n_out) {
    c.fail("scan_input_axes/directions need ", n_scan, " values, scan_output_axes/directions ",
           n_out);
  }
  std::vector<Value> states;
  for (size_t i = 0; i < n_states; ++i) states.push_back(c.value(i));
  std::vector<DynTensor> xs;
  for (size_t j = 0; j < n_scan; ++j) xs.push_back(c.in(n_states + j));
  const int64_t length = scan_length(c, xs, &layout.in_axes);
  return run_scan(c, body, std::move(states), xs, layout, length);
}

// Scan of opset 8: every input and output has a batch axis first (scanned along axis 1), and
// the optional sequence_lens (input 0) gives each batch entry's length; scan outputs past it are
// zeros, as ONNX Runtime writes them.
std::vector<Value> scan8(OpContext& c) {
  const Graph& body = graph_attr(c, "body");
  const auto n_scan = static_cast<size_t>(required_int(c, "num_scan_inputs"));
  if (n_scan + 1 > c.num_inputs()) c.fail("num_scan_inputs ", n_scan, " is more than the inputs");
  const size_t n_states = c.num_inputs() - 1 - n_scan;
  ScanLayout layout{std::vector<int64_t>(n_scan, 0),
                    c.attr_ints("directions", std::vector<int64_t>(n_scan, 0)),
                    {},
                    {}};
  if (layout.in_reverse.size() != n_scan) c.fail("directions needs ", n_scan, " values");
  std::vector<DynTensor> inputs;
  for (size_t i = 0; i < n_states + n_scan; ++i) inputs.push_back(c.in(1 + i));
  if (inputs.empty() || inputs[0].rank() == 0) c.fail("Scan-8's inputs need a batch axis");
  const int64_t batch = inputs[0].size(0);
  if (batch == 0) c.fail("unsupported: Scan-8 over an empty batch");
  std::vector<DynTensor> xs_all(inputs.begin() + static_cast<std::ptrdiff_t>(n_states),
                                inputs.end());
  std::vector<int64_t> axes(n_scan, 1);
  const int64_t max_length = scan_length(c, xs_all, &axes);
  std::vector<int64_t> lengths(static_cast<size_t>(batch), max_length);
  if (c.has(0)) lengths = c.ints(0);
  if (static_cast<int64_t>(lengths.size()) != batch) {
    c.fail("sequence_lens has ", lengths.size(), " values for a batch of ", batch);
  }
  std::vector<std::vector<DynTensor>> per_output;  // [output][batch entry]
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    if (len < 0 || len > max_length) c.fail("sequence_lens[", b, "] = ", len, " is out of range");
    std::vector<Value> states;
    std::vector<DynTensor> xs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DynTensor entry = select(inputs[i], 0, b);
      if (i < n_states) {
        states.push_back(Value::of(entry));
      } else {
        xs.push_back(slice(entry, 0, 0, len));
      }
    }
    std::vector<Value> outs = run_scan(c, body, std::move(states), xs, layout, len);
    per_output.resize(outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      DynTensor o = tensor_of(c, outs[k], "a Scan-8 output");
      if (k >= n_states && len < max_length) {  // pad the scan output to the longest sequence
        Shape pad_shape = o.shape();
        pad_shape[0] = max_length - len;
        o = cat({o, zeros(pad_shape, o.dtype(), o.device())}, 0);
      }
      per_output[k].push_back(o);
    }
  }
  std::vector<Value> results;
  for (size_t k = 0; k < per_output.size(); ++k) {
    results.push_back(Value::of(stack(per_output[k], 0)));
  }
  return results;
}

// ---- Sequences ----

// A position input (int32 or int64, one value) in [-n, n) (or [-n, n] for insertion).
int64_t position(const OpContext& c, size_t i, int64_t n, bool insertion) {
  const std::vector<int64_t> p = c.ints(i);
  if (p.size() != 1) c.fail("the position must hold one value, got ", p.size());
  const int64_t hi = insertion ? n : n - 1;
  if (p[0] < -n || p[0] > hi) c.fail("position ", p[0], " is out of range for ", n, " tensors");
  return p[0] < 0 ? p[0] + n : p[0];
}

std::vector<Value> sequence_construct(OpContext& c) {
  std::vector<DynTensor> seq;
  for (size_t i = 0; i < c.num_inputs(); ++i) seq.push_back(c.in(i));
  return {Value::of_sequence(std::move(seq))};
}

std::vector<Value> sequence_insert(OpContext& c) {
  std::vector<DynTensor> seq = sequence_of(c, 0);
  const auto n = static_cast<int64_t>(seq.size());
  const int64_t at = c.has(2) ? position(c, 2, n, true) : n;
  seq.insert(seq.begin() + at, c.in(1));
  return {Value::of_sequence(std::move(seq))};
}

std::vector<Value> sequence_erase(OpContext& c) {
  std::vector<DynTensor> seq = sequence_of(c, 0);
  const auto n = static_cast<int64_t>(seq.size());
  if (n == 0) c.fail("cannot erase from an empty sequence");
  const int64_t at = c.has(1) ? position(c, 1, n, false) : n - 1;
  seq.erase(seq.begin() + at);
  return {Value::of_sequence(std::move(seq))};
}

std::vector<Value> sequence_at(OpContext& c) {
  const std::vector<DynTensor>& seq = sequence_of(c, 0);
  return one(seq[static_cast<size_t>(position(c, 1, static_cast<int64_t>(seq.size()), false))]);
}

std::vector<Value> sequence_length(OpContext& c) {
  const auto n = static_cast<int64_t>(sequence_of(c, 0).size());
  return one(full(Shape{}, n, DType::i64, c.device()));
}

// Without `split`: pieces of 1 along axis (squeezed unless keepdims); a scalar split: pieces of
// that size (the last may be smaller); a 1-D split: those sizes.
std::vector<Value> split_to_sequence(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t rank = x.rank();
  int64_t axis = c.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  std::vector<DynTensor> pieces;
  if (!c.has(1)) {
    pieces = split(x, 1, axis);
    if (c.attr_int("keepdims", 1) == 0) {
      for (DynTensor& p : pieces) p = squeeze(p, axis);
    }
  } else if (c.in(1).rank() == 0) {
    const int64_t size = c.ints(1)[0];
    if (size <= 0) c.fail("split ", size, " must be positive");
    pieces = split(x, size, axis);
  } else {
    const std::vector<int64_t> sizes = c.ints(1);
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    if (total != x.size(static_cast<int>(axis))) {
      c.fail("split sizes sum to ", total, ", the axis has ", x.size(static_cast<int>(axis)));
    }
    pieces = split(x, sizes, axis);
  }
  return {Value::of_sequence(std::move(pieces))};
}

// new_axis = 1 stacks (the axis may then be one past the last), else concatenates.
std::vector<Value> concat_from_sequence(OpContext& c) {
  const std::vector<DynTensor>& seq = sequence_of(c, 0);
  if (seq.empty()) c.fail("cannot concatenate an empty sequence");
  const bool new_axis = c.attr_int("new_axis", 0) != 0;
  const int64_t rank = seq[0].rank() + (new_axis ? 1 : 0);
  int64_t axis = required_int(c, "axis");
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  return one(new_axis ? stack(seq, axis) : cat(seq, axis));
}

// The body runs once per element of the first input; sequence inputs give their i-th element,
// tensor inputs themselves. Each body output is gathered into a sequence.
std::vector<Value> sequence_map(OpContext& c) {
  const Graph& body = graph_attr(c, "body");
  const size_t n = sequence_of(c, 0).size();
  for (size_t j = 1; j < c.num_inputs(); ++j) {
    const Value& v = c.value(j);
    if (v.kind == Value::Kind::Sequence && v.sequence.size() != n) {
      c.fail("input ", j, " has ", v.sequence.size(), " tensors, input 0 has ", n);
    }
  }
  std::vector<std::vector<DynTensor>> outs(c.node().outputs.size());
  for (size_t i = 0; i < n; ++i) {
    std::vector<Value> in;
    for (size_t j = 0; j < c.num_inputs(); ++j) {
      const Value& v = c.value(j);
      in.push_back(v.kind == Value::Kind::Sequence ? Value::of(v.sequence[i]) : v);
    }
    std::vector<Value> got = run_body(c, body, std::move(in), outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      outs[k].push_back(tensor_of(c, got[k], "a SequenceMap body output"));
    }
  }
  std::vector<Value> results;
  for (auto& s : outs) results.push_back(Value::of_sequence(std::move(s)));
  return results;
}

// ---- Optionals ----

std::vector<Value> optional(OpContext& c) {
  if (c.has(0)) return {c.value(0)};
  if (!c.has_attr("type")) c.fail("an Optional without input needs its 'type' attribute");
  return {Value{}};
}

std::vector<Value> optional_has_element(OpContext& c) {
  return one(full(Shape{}, c.has(0), DType::boolean, c.device()));
}

std::vector<Value> optional_get_element(OpContext& c) {
  if (!c.has(0)) c.fail("the optional is empty");
  return {c.value(0)};
}

// ---- ai.onnx.preview.training: one optimizer step on n tensors at once ----
// Inputs R (learning rate), T (update count, int64), then n X's, n G's and the state tensors;
// outputs the n new X's, then the new states. Formulas are ONNX's; T stays on the device.

struct StepInputs {
  DynTensor r, t;
  size_t n;
};

StepInputs step_inputs(const OpContext& c, size_t groups) {
  if (c.num_inputs() < 2 + groups || (c.num_inputs() - 2) % groups != 0) {
    c.fail("expects R, T and ", groups, " groups of tensors, got ", c.num_inputs(), " inputs");
  }
  return {c.in(0), c.in(1), (c.num_inputs() - 2) / groups};
}

// norm_coefficient * X + G: the gradient of the L2 regulariser added.
DynTensor regularized(const OpContext& c, const DynTensor& x, const DynTensor& g) {
  return add(mul(x, c.attr_float("norm_coefficient", 0.0)), g);
}

std::vector<Value> adagrad(OpContext& c) {
  const StepInputs s = step_inputs(c, 3);
  const double decay = c.attr_float("decay_factor", 0.0), eps = c.attr_float("epsilon", 1e-6);
  std::vector<Value> xs, hs;
  for (size_t i = 0; i < s.n; ++i) {
    const DynTensor& x = c.in(2 + i);
    const DynTensor r = div(cast(s.r, x.dtype()), add(mul(cast(s.t, x.dtype()), decay), 1.0));
    const DynTensor g = regularized(c, x, c.in(2 + s.n + i));
    const DynTensor h = add(c.in(2 + 2 * s.n + i), mul(g, g));
    xs.push_back(Value::of(sub(x, div(mul(r, g), add(sqrt(h), eps)))));
    hs.push_back(Value::of(h));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<Value> momentum(OpContext& c) {
  const StepInputs s = step_inputs(c, 3);
  const double alpha = required_float(c, "alpha"), beta = required_float(c, "beta");
  const std::string mode = c.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov") c.fail("unsupported: mode '", mode, "'");
  std::vector<Value> xs, vs;
  for (size_t i = 0; i < s.n; ++i) {
    const DynTensor& x = c.in(2 + i);
    const DynTensor r = cast(s.r, x.dtype());
    // The first step (T = 0) takes the whole gradient.
    const DynTensor beta_t = where(gt(s.t, 0), full(Shape{}, beta, x.dtype(), c.device()), 1.0);
    const DynTensor g = regularized(c, x, c.in(2 + s.n + i));
    const DynTensor v = add(mul(c.in(2 + 2 * s.n + i), alpha), mul(beta_t, g));
    const DynTensor step = mode == "standard" ? v : add(g, mul(v, alpha));
    xs.push_back(Value::of(sub(x, mul(r, step))));
    vs.push_back(Value::of(v));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

std::vector<Value> adam(OpContext& c) {
  const StepInputs s = step_inputs(c, 4);
  const double alpha = c.attr_float("alpha", 0.9), beta = c.attr_float("beta", 0.999),
               eps = c.attr_float("epsilon", 1e-6),
               post = c.attr_float("norm_coefficient_post", 0.0);
  std::vector<Value> xs, vs, hs;
  for (size_t i = 0; i < s.n; ++i) {
    const DynTensor& x = c.in(2 + i);
    const DynTensor r = cast(s.r, x.dtype()), t = cast(s.t, x.dtype());
    const DynTensor g = regularized(c, x, c.in(2 + s.n + i));
    const DynTensor v = add(mul(c.in(2 + 2 * s.n + i), alpha), mul(g, 1.0 - alpha));
    const DynTensor h = add(mul(c.in(2 + 3 * s.n + i), beta), mul(mul(g, g), 1.0 - beta));
    // Bias correction from the second step on (T > 0).
    const DynTensor corrected = div(mul(r, sqrt(sub(1.0, pow(beta, t)))), sub(1.0, pow(alpha, t)));
    const DynTensor r_t = where(gt(s.t, 0), corrected, r);
    const DynTensor x_new = sub(x, mul(r_t, div(v, add(sqrt(h), eps))));
    xs.push_back(Value::of(mul(x_new, 1.0 - post)));
    vs.push_back(Value::of(v));
    hs.push_back(Value::of(h));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void register_control_ops(Registry& r) {
  r.add("", "If", if_op, 1);
  r.add("", "Loop", loop, 1);
  r.add("", "Scan", scan8, 8);
  r.add("", "Scan", scan9, 9);

  r.add(
      "", "SequenceEmpty", [](OpContext&) { return std::vector<Value>{Value::of_sequence({})}; },
      11);
  r.add("", "SequenceConstruct", sequence_construct, 11);
  r.add("", "SequenceInsert", sequence_insert, 11);
  r.add("", "SequenceErase", sequence_erase, 11);
  r.add("", "SequenceAt", sequence_at, 11);
  r.add("", "SequenceLength", sequence_length, 11);
  r.add("", "SplitToSequence", split_to_sequence, 11);
  r.add("", "ConcatFromSequence", concat_from_sequence, 11);
  r.add("", "SequenceMap", sequence_map, 17);

  r.add("", "Optional", optional, 15);
  r.add("", "OptionalHasElement", optional_has_element, 15);
  r.add("", "OptionalGetElement", optional_get_element, 15);

  const std::string training = "ai.onnx.preview.training";
  r.add(training, "Adagrad", adagrad, 1);
  r.add(training, "Momentum", momentum, 1);
  r.add(training, "Adam", adam, 1);
}

}  // namespace ember::onnx
