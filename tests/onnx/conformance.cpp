// The ONNX conformance runner: every test folder (model.onnx + test_data_set_*/input_*.pb,
// output_*.pb) under the given data folders, loaded and run on one device, outputs compared with
// ONNX's backend-test tolerances (rtol 1e-3, atol 1e-7; integers and bools exact). Prints
// PASS / FAIL / UNSUPPORTED / EXCLUDED per test and counts per folder.
//
//   onnx_conformance --data /usr/share/libonnx-testdata/data/node [--device cuda:0]
//       [--filter substring] [--exclusions tests/onnx/exclusions.txt (repeatable)]
//       [--pass-list tests/onnx/pass_node.txt] [--write-pass-list FILE] [--quiet]
//
// With --pass-list, exits 1 when a test on the list does not pass (a regression); without it,
// exits 0 whatever the counts. A load error that says "unsupported" counts as UNSUPPORTED.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "executor.hpp"
#include "shape_inference.hpp"

namespace fs = std::filesystem;
using namespace ember;

namespace {

struct Options {
  std::vector<std::string> data;
  Device device;
  std::string filter, pass_list, write_pass_list;
  std::vector<std::string> exclusions;
  bool quiet = false;
};

std::map<std::string, std::string> read_list(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find('#');
    std::string name = line.substr(0, hash),
                why = hash == std::string::npos ? "" : line.substr(hash + 1);
    name.erase(name.find_last_not_of(" \t") + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    if (!name.empty()) out[name] = why;
  }
  return out;
}

std::string compare(const std::string& what, const DynTensor& got, const TensorData& want) {
  if (got.dtype() != want.dtype) {
    return what + ": dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
           std::string(dtype_name(want.dtype));
  }
  if (got.shape() != want.shape) {
    return what + ": shape " + to_string(got.shape()) + ", expected " + to_string(want.shape);
  }
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const bool exact = !is_floating(want.dtype);
  for (size_t i = 0; i < g.size(); ++i) {
    const double a = g[i], b = w[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (!exact && std::isfinite(b) && std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)) continue;
    return what + ": element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " +
           std::to_string(b);
  }
  return "";
}

onnx::Value sequence_value(const std::vector<TensorData>& ts, Device device) {
  std::vector<DynTensor> seq;
  for (const TensorData& t : ts) seq.push_back(to_device(from_data(t), device));
  return onnx::Value::of_sequence(std::move(seq));
}

// An optional input is an OptionalProto file: empty (Value::Kind::None), a tensor or a sequence.
onnx::Value load_value(const fs::path& file, const onnx::ValueInfo& info, Device device) {
  if (info.dtype_name == "sequence") return sequence_value(onnx::read_sequence_file(file), device);
  if (info.dtype_name == "optional") {
    const onnx::OptionalData o = onnx::read_optional_file(file);
    if (o.kind == onnx::OptionalData::Kind::Tensor) {
      return onnx::Value::of(to_device(from_data(o.tensor), device));
    }
    if (o.kind == onnx::OptionalData::Kind::Sequence) return sequence_value(o.sequence, device);
    return onnx::Value{};
  }
  const bool bf16 = info.known_dtype && info.dtype == DType::bf16;
  return onnx::Value::of(to_device(from_data(onnx::read_tensor_file(file, nullptr, bf16)), device));
}

std::string compare_sequence(const std::string& what, const onnx::Value& got,
                             const std::vector<TensorData>& want) {
  if (got.kind != onnx::Value::Kind::Sequence || got.sequence.size() != want.size()) {
    return what + ": not a sequence of " + std::to_string(want.size()) + " tensors";
  }
  for (size_t k = 0; k < want.size(); ++k) {
    const std::string diff =
        compare(what + "[" + std::to_string(k) + "]", got.sequence[k], want[k]);
    if (!diff.empty()) return diff;
  }
  return "";
}

// An output against its file: a SequenceProto, an OptionalProto or a TensorProto.
std::string compare_output(const std::string& what, const onnx::Value& got, const fs::path& file,
                           const onnx::ValueInfo& info) {
  if (info.dtype_name == "sequence") {
    return compare_sequence(what, got, onnx::read_sequence_file(file));
  }
  if (info.dtype_name == "optional") {
    const onnx::OptionalData o = onnx::read_optional_file(file);
    if (o.kind == onnx::OptionalData::Kind::Sequence)
      return compare_sequence(what, got, o.sequence);
    if (o.kind == onnx::OptionalData::Kind::None) {
      return got.kind == onnx::Value::Kind::None ? "" : what + ": not an empty optional";
    }
    if (got.kind != onnx::Value::Kind::Tensor) return what + ": not a tensor";
    return compare(what, got.tensor, o.tensor);
  }
  if (got.kind != onnx::Value::Kind::Tensor) return what + ": not a tensor";
  const bool bf16 = info.known_dtype && info.dtype == DType::bf16;
  return compare(what, got.tensor, onnx::read_tensor_file(file, nullptr, bf16));
}

// Ember's shape inference (shape_inference.hpp) against what the run produced: where it infers
// an element type or a size, the output must have it; a symbol must stand for one size, the one
// the inputs gave it. "" when consistent.
// Tensor outputs checked, and those whose type and every size were inferred (the summary line).
int g_outputs_checked = 0, g_outputs_inferred = 0;

std::string check_inferred(const std::map<std::string, onnx::ValueInfo>& types,
                           const std::vector<onnx::ValueInfo>& inputs,
                           const std::map<std::string, onnx::Value>& given,
                           const std::vector<onnx::ValueInfo>& outputs,
                           const std::vector<onnx::Value>& outs) {
  std::map<std::string, int64_t> symbols;
  for (const onnx::ValueInfo& v : inputs) {
    const auto it = given.find(v.name);
    if (it == given.end() || it->second.kind != onnx::Value::Kind::Tensor) continue;
    const Shape& s = it->second.tensor.shape();
    for (size_t d = 0; d < v.shape.size() && static_cast<int>(d) < s.rank(); ++d) {
      if (!v.shape[d].symbol.empty()) symbols.emplace(v.shape[d].symbol, s[static_cast<int>(d)]);
    }
  }
  for (size_t o = 0; o < outputs.size() && o < outs.size(); ++o) {
    if (outs[o].kind != onnx::Value::Kind::Tensor) continue;
    const auto it = types.find(outputs[o].name);
    if (it == types.end()) continue;
    const onnx::ValueInfo& t = it->second;
    const DynTensor& got = outs[o].tensor;
    ++g_outputs_checked;
    g_outputs_inferred +=
        t.known_dtype && t.has_shape &&
        std::all_of(t.shape.begin(), t.shape.end(), [](const onnx::Dim& d) { return d.size >= 0; });
    const std::string head = "shape inference: output '" + outputs[o].name + "' inferred " +
                             t.dtype_name + " " + onnx::shape_text(t) + ", ran to " +
                             std::string(dtype_name(got.dtype())) + " " + to_string(got.shape());
    // bfloat16 travels as UINT16 in ONNX 1.12's files: compare dtypes Ember has only.
    if (t.known_dtype && t.dtype != got.dtype() && t.elem_type != 4) return head;
    if (!t.has_shape) continue;
    if (static_cast<int>(t.shape.size()) != got.rank()) return head;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const onnx::Dim& dim = t.shape[d];
      const int64_t size = got.size(static_cast<int>(d));
      if (dim.size >= 0 && dim.size != size) return head;
      if (dim.size < 0 && !dim.symbol.empty()) {
        const auto bound = symbols.emplace(dim.symbol, size).first;
        if (bound->second != size)
          return head + " (" + dim.symbol + " is " + std::to_string(bound->second) + ")";
      }
    }
  }
  return "";
}

// "" when it passed, else why not; *unsupported when the model cannot be loaded for that reason.
std::string run_test(const fs::path& dir, Device device, bool* unsupported) {
  onnx::Model model;
  try {
    model = onnx::load((dir / "model.onnx").string(), device);
  } catch (const Error& e) {
    const std::string what = e.what();
    *unsupported = what.find("unsupported") != std::string::npos;
    return what;
  }
  const onnx::ModelSummary summary = onnx::inspect((dir / "model.onnx").string());
  const onnx::ModelIR ir = onnx::read_model((dir / "model.onnx").string(), {});
  const auto opset = ir.opsets.find("");
  const std::map<std::string, onnx::ValueInfo> types =
      onnx::infer_types(*ir.graph, opset == ir.opsets.end() ? 1 : opset->second);
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* folder";
  for (const fs::path& set : sets) {
    std::map<std::string, onnx::Value> inputs;
    size_t i = 0;
    for (const onnx::ValueInfo& v : summary.inputs) {
      const fs::path file = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(file)) break;
      inputs[v.name] = load_value(file, v, device);
      ++i;
    }
    std::vector<onnx::Value> outs;
    try {
      outs = onnx::run_values(model, inputs);
    } catch (const Error& e) {
      // An op that refuses an attribute value or dtype at run time ("unsupported: ...").
      *unsupported = std::string(e.what()).find("unsupported") != std::string::npos;
      return set.filename().string() + ": " + e.what();
    }
    for (size_t o = 0; o < summary.outputs.size(); ++o) {
      const fs::path file = set / ("output_" + std::to_string(o) + ".pb");
      if (!fs::exists(file)) continue;
      const std::string what =
          set.filename().string() + " output '" + summary.outputs[o].name + "'";
      const std::string diff = compare_output(what, outs[o], file, summary.outputs[o]);
      if (!diff.empty()) return diff;
    }
    const std::string inferred =
        check_inferred(types, ir.graph->inputs, inputs, ir.graph->outputs, outs);
    if (!inferred.empty()) return set.filename().string() + ": " + inferred;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data")
      opt.data.push_back(next());
    else if (a == "--device") {
      const std::string name = next();
      // Parsing "cuda:0" fails where there is no GPU: that is a skip (ctest's skip pattern).
      if (name.rfind("cuda", 0) == 0 && device_count(DeviceType::Cuda) == 0) {
        std::cout << "onnx_conformance: no Cuda device here: skipped\n";
        return 0;
      }
      opt.device = Device::parse(name);
    } else if (a == "--filter")
      opt.filter = next();
    else if (a == "--exclusions")
      opt.exclusions.push_back(next());
    else if (a == "--pass-list")
      opt.pass_list = next();
    else if (a == "--write-pass-list")
      opt.write_pass_list = next();
    else if (a == "--quiet")
      opt.quiet = true;
    else {
      std::cerr << "onnx_conformance: unknown argument " << a << "\n";
      return 2;
    }
  }
  std::map<std::string, std::string> excluded;
  for (const std::string& file : opt.exclusions) excluded.merge(read_list(file));
  const auto must_pass = read_list(opt.pass_list);
  std::set<std::string> passed, seen;
  int regressions = 0;
  for (const std::string& data : opt.data) {
    std::vector<fs::path> tests;
    for (const auto& entry : fs::directory_iterator(data)) {
      if (fs::exists(entry.path() / "model.onnx")) tests.push_back(entry.path());
    }
    std::sort(tests.begin(), tests.end());
    int n_pass = 0, n_fail = 0, n_unsupported = 0, n_excluded = 0;
    for (const fs::path& dir : tests) {
      const std::string name = dir.filename().string();
      if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
      if (excluded.count(name)) {
        ++n_excluded;
        if (!opt.quiet) std::cout << "EXCLUDED " << name << " #" << excluded.at(name) << "\n";
        continue;
      }
      seen.insert(name);
      bool unsupported = false;
      std::string why;
      try {
        why = run_test(dir, opt.device, &unsupported);
      } catch (const std::exception& e) {
        why = std::string("error: ") + e.what();
      }
      const char* verdict = why.empty() ? "PASS" : unsupported ? "UNSUPPORTED" : "FAIL";
      if (why.empty()) {
        ++n_pass;
        passed.insert(name);
      } else if (unsupported) {
        ++n_unsupported;
      } else {
        ++n_fail;
      }
      if (!why.empty() && must_pass.count(name)) {
        ++regressions;
        std::cout << "REGRESSED ";
      }
      if (!opt.quiet || (!why.empty() && must_pass.count(name))) {
        std::cout << verdict << " " << name << (why.empty() ? "" : ": " + why) << "\n";
      }
    }
    const int total = n_pass + n_fail + n_unsupported;
    std::printf(
        "onnx_conformance %s on %s: %d passed, %d failed, %d unsupported of %d (%.1f%%); %d "
        "excluded\n",
        data.c_str(), to_string(opt.device).c_str(), n_pass, n_fail, n_unsupported, total,
        total ? 100.0 * n_pass / total : 0.0, n_excluded);
    std::printf(
        "shape inference: %d of %d tensor outputs inferred whole (a contradiction fails its "
        "test)\n",
        g_outputs_inferred, g_outputs_checked);
    g_outputs_inferred = g_outputs_checked = 0;
  }
  if (!opt.write_pass_list.empty()) {
    std::ofstream out(opt.write_pass_list);
    for (const std::string& p : passed) out << p << "\n";
  }
  // A listed test that is not there at all (a missing data folder, a renamed test) would pass
  // vacuously: it counts as a regression too, unless --filter chose a subset.
  if (opt.filter.empty()) {
    for (const auto& [name, why] : must_pass) {
      if (seen.count(name) || excluded.count(name)) continue;
      ++regressions;
      std::cout << "REGRESSED MISSING " << name << ": on the pass list but not in the data\n";
    }
  }
  if (regressions > 0) {
    std::cout << "onnx_conformance: " << regressions
              << " test(s) on the pass list no longer pass\n";
    return 1;
  }
  return 0;
}
