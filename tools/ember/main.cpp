// The `ember` command line: train the Fashion-MNIST CNN, evaluate a saved model, inspect a
// safetensors, torch.save or ONNX file, convert a torch.save file to safetensors, turn an ONNX
// model into C++ source. Every failure is one line on
// stderr and a non-zero exit status.
//
//   ember train fashion-mnist --epochs 5 --out runs/fashion-mnist
//   ember eval runs/fashion-mnist/model.safetensors
//   ember inspect runs/fashion-mnist/model.safetensors
//   ember convert pytorch_model.bin model.safetensors
//   ember onnx2cpp model.onnx --out src/model --name Model
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "ember/data/data.hpp"
#ifdef EMBER_HAVE_ONNX
#include "codegen.hpp"  // src/import/onnx: ember onnx2cpp
#include "ember/import/onnx.hpp"
#endif
#include "ember/ember.hpp"
#include "ember/io/file.hpp"
#include "ember/io/pytorch.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/models/fashion_cnn.hpp"
#include "ember/nn/serialize.hpp"
#ifdef EMBER_HAVE_SERVE
#include "ember/serve/serve.hpp"
#endif
#include "ember/optim/optim.hpp"
#include "ember/train/train.hpp"

namespace {

// Where the ranks other than 0 of a data-parallel run "print": nowhere (a stream without a buffer).
std::ostream g_quiet{nullptr};
using namespace ember;
namespace fs = std::filesystem;

using Loader = data::DataLoader<data::ImageItem, data::ImageBatch>;

struct TrainOptions {
  std::string dataset = "fashion-mnist";
  int64_t epochs = 8;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string schedule = "cosine";  // or "constant"
  std::string device = "cpu";
  std::string precision = "f32";  // or bf16, f16: autocast (f16 with loss scaling)
  bool graph = false;             // replay captured training steps (LearnerConfig::graph)
  std::string out = "runs/fashion-mnist";
  bool resume = false;
  bool overwrite = false;
  int64_t workers = 2;
  uint64_t seed = 0;
  std::string data_dir = data::FashionMnist::default_dir();
  int64_t limit = 0;  // training images used (0: all)
  int64_t show = 8;   // test images classified at the end
};

struct Onnx2CppOptions {
  std::string model;
  std::string out;
  std::string name = "Model";
};

struct ConvertOptions {
  std::string in;
  std::string out;
  std::string key;
};

struct ServeOptions {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string device = "cpu";
  int64_t max_batch = 16;
  int64_t max_wait_us = 2000;
  int64_t max_queue = 1024;
  int64_t timeout_ms = 10000;
  int64_t max_body_mb = 16;
  int64_t threads = 64;
};

struct QuantizeOptions {
  std::string in;
  std::string out;
};

struct EvalOptions {
  std::string model;
  std::string device = "cpu";
  std::string data_dir = data::FashionMnist::default_dir();
  int64_t batch_size = 500;
};

// CLI11's ExistingFile lets a FIFO through (reading it blocks until a writer comes) and a
// device such as /dev/zero (it never ends): only regular files are taken.
const CLI::Validator kRegularFile(
    [](std::string& path) -> std::string {
      std::error_code ec;
      if (!fs::exists(path, ec)) return "File does not exist: " + path;
      const std::string kind = io::non_regular_kind(path);
      return kind.empty() ? "" : path + " is " + kind + ", not a regular file";
    },
    "FILE");

// Integer options: the bounds as numbers a person reads ("from 1 to 60000"), where CLI11's
// Range would print "[1 - 60000]" and its NonNegativeNumber "[0 - 1.79769e+308]".
template <class T>
CLI::Validator integer_in(T lo, T hi) {
  const std::string bounds = hi == std::numeric_limits<T>::max()
                                 ? std::to_string(lo) + " or more"
                                 : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, bounds](std::string& text) -> std::string {
        T v{};
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc() && p == end && v >= lo && v <= hi) return "";
        return "'" + text + "' is not an integer " + bounds;
      },
      hi == std::numeric_limits<T>::max()  // the help's "INT:0 to 100000=8"
          ? std::to_string(lo) + " or more"
          : std::to_string(lo) + " to " + std::to_string(hi));
}

const CLI::Validator kPositiveNumber(
    [](std::string& text) -> std::string {
      double v = 0;
      const char* end = text.data() + text.size();
      const auto [p, ec] = std::from_chars(text.data(), end, v);
      if (ec == std::errc() && p == end && v > 0 && std::isfinite(v)) return "";
      return "'" + text + "' is not a number > 0";
    },
    "> 0");

// onnx2cpp's --name: the generated struct's name, so a C++ identifier.
const CLI::Validator kIdentifier(
    [](std::string& text) -> std::string {
      const auto word = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
      };
      const bool ok = !text.empty() && !(text[0] >= '0' && text[0] <= '9') &&
                      std::all_of(text.begin(), text.end(), word);
      return ok ? "" : "'" + text + "' is not a C++ identifier";
    },
    "IDENTIFIER");

// The file of <dir>/<name> that the MNIST reader opens (name.gz first, then name), which must
// be a regular file; "" when neither is there.
std::string data_file(const std::string& dir, const std::string& name) {
  for (const std::string& p : {dir + "/" + name + ".gz", dir + "/" + name}) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    const std::string kind = io::non_regular_kind(p);
    EMBER_CHECK(kind.empty(), "Fashion-MNIST file ", p, " is ", kind, ", not a regular file");
    return p;
  }
  return "";
}

// The data directory must hold the four Fashion-MNIST files: say how to get them if not.
void check_data_dir(const std::string& dir) {
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    EMBER_CHECK(!data_file(dir, f).empty(), "Fashion-MNIST not found: no ", dir, "/", f,
                "(.gz); install Debian's dataset-fashion-mnist (bash scripts/setup.sh) or pass "
                "--data DIR");
  }
}

// The CNN takes 28x28 images of 10 classes: a data set of others fails here, naming the file,
// rather than deep in a convolution or as an index out of range. `split`: "train" or "t10k".
void check_fashion_set(const data::MnistDataset& set, const std::string& dir,
                       const std::string& split) {
  EMBER_CHECK(set.size() > 0, "the Fashion-MNIST ", split == "train" ? "training" : "test",
              " set in ", dir, " has no images");
  EMBER_CHECK(set.height() == 28 && set.width() == 28, data_file(dir, split + "-images-idx3-ubyte"),
              ": images are ", set.height(), "x", set.width(),
              ", the Fashion-MNIST CNN takes 28x28");
  const auto& labels = set.labels().data;
  for (size_t i = 0; i < labels.size(); ++i) {
    EMBER_CHECK(labels[i] < data::FashionMnist::classes().size(),
                data_file(dir, split + "-labels-idx1-ubyte"), ": label ", int{labels[i]},
                " of image ", i, " is not a Fashion-MNIST class (0 to 9)");
  }
}

// Pixels scaled to [0, 1], then standardised with Fashion-MNIST's training-set mean and standard
// deviation (as torchvision users normalise it): the same in train, eval and the examples.
std::shared_ptr<data::ImageBatcher> fashion_batcher() {
  return std::make_shared<data::ImageBatcher>(
      data::ImageBatcherConfig().normalize({0.2860f}, {0.3530f}));
}

std::string percent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * v);
  return buf;
}

// Prints predicted and true classes of the first `n` test images.
void classify_examples(const models::FashionCnn& model, const data::MnistDataset& test, int64_t n,
                       Device dev) {
  if (n <= 0) return;
  n = std::min<int64_t>(n, static_cast<int64_t>(test.size()));
  std::vector<data::ImageItem> items;
  for (int64_t i = 0; i < n; ++i) items.push_back(test.at(static_cast<size_t>(i)));
  const data::ImageBatch batch = fashion_batcher()->batch(items, dev);
  auto guard = no_grad();
  const auto valid = model.valid();
  const Tensor<2> probs = softmax(valid(batch.images), 1);
  const auto [best, cls] = probs.max(1);
  const auto p = best.to_vector<float>();
  const auto c = cls.to_vector<int64_t>();
  const auto& names = data::FashionMnist::classes();
  std::cout << "\nclassifying the first " << n << " test images:\n";
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    const std::string& predicted = names[static_cast<size_t>(c[k])];        // 10 logits
    const std::string& truth = names[static_cast<size_t>(items[k].label)];  // check_fashion_set
    char line[160];
    std::snprintf(line, sizeof line, "  test image %2lld: predicted %-12s (%5.1f%%)  true %-12s %s",
                  static_cast<long long>(i), predicted.c_str(), 100 * p[k], truth.c_str(),
                  predicted == truth ? "ok" : "WRONG");
    std::cout << line << "\n";
  }
}

int run_train(const TrainOptions& o) {
  EMBER_CHECK(o.dataset == "fashion-mnist", "unknown dataset '", o.dataset,
              "' (this version trains: fashion-mnist)");
  // Under mpirun (or torchrun) each process trains on its share of every batch: the same
  // command on every rank, data-parallel (docs/DISTRIBUTED.md). A bare "cuda" or "vulkan" is
  // then the rank's own GPU on its host.
  if (dist::environment().launcher != "none") dist::init();
  const int rank = dist::rank(), world = dist::world_size();
  const bool lead = rank == 0;
  const Device dev = Device::parse(world > 1 && (o.device == "cuda" || o.device == "vulkan")
                                       ? o.device + ":" + std::to_string(dist::local_rank())
                                       : o.device);
  check_data_dir(o.data_dir);
  manual_seed(o.seed);
  const auto full_train_set = data::FashionMnist::train(o.data_dir);
  const auto test_set = data::FashionMnist::test(o.data_dir);
  check_fashion_set(*full_train_set, o.data_dir, "train");
  check_fashion_set(*test_set, o.data_dir, "t10k");
  data::DatasetPtr<data::ImageItem> train_set = full_train_set;
  if (o.limit > 0 && static_cast<size_t>(o.limit) < train_set->size()) {
    train_set = data::partial(train_set, 0, static_cast<size_t>(o.limit));
  }
  auto batcher = fashion_batcher();
  Loader train(train_set, batcher,
               data::DataLoaderConfig()
                   .batch_size(static_cast<size_t>(o.batch_size))
                   .shuffle(o.seed)
                   .shard(static_cast<size_t>(rank), static_cast<size_t>(world))
                   .workers(static_cast<size_t>(o.workers))
                   .device(dev));
  Loader test(
      test_set, batcher,
      data::DataLoaderConfig().batch_size(500).workers(static_cast<size_t>(o.workers)).device(dev));

  // model.safetensors is written here, not by the Learner: its temp files are ours to remove.
  if (lead) {
    io::remove_stale_temp_files(o.out,
                                [](const std::string& n) { return n == "model.safetensors"; });
  }

  models::FashionCnn model(dev);
  // Only rank 0 speaks; the others train in silence.
  std::ostream& say = lead ? std::cout : g_quiet;
  if (world > 1) {
    say << "data-parallel: " << world << " processes, " << o.batch_size << " images each per step ("
        << o.batch_size * world << " in all)\n";
  }
  say << "Fashion-MNIST CNN (" << model.num_params() << " parameters) on " << to_string(dev) << ": "
      << train_set->size() << " training images, " << test_set->size() << " test images; Adam lr "
      << o.lr << (o.schedule == "cosine" ? " (cosine decay)" : "") << ", batch " << o.batch_size
      << ", " << o.epochs << " epochs"
      << (o.precision == "f32" ? "" : ", " + o.precision + " autocast")
      << (o.graph ? ", graph replay" : "") << "; writing to " << o.out << "\n";
  // Adam at a constant lr 1e-3 swings by a point of test accuracy from epoch to epoch (90.1% after
  // epoch 4, 89.0% after 5 here); a cosine decay over the run ends on the low-noise weights.
  // Graph replay reads the parameters where the capture found them: the fused in-place step.
  auto opt = optim::AdamConfig().lr(o.lr).fused(o.graph).init();
  std::optional<optim::CosineAnnealingLR> cosine;
  if (o.schedule == "cosine")
    cosine.emplace(opt, std::max<int64_t>(1, o.epochs * static_cast<int64_t>(train.num_batches())));
  train::Learner learner(model, std::move(opt),
                         train::LearnerConfig()
                             .epochs(o.epochs)
                             .out_dir(o.out)
                             .resume(o.resume)
                             .overwrite(o.overwrite)
                             .monitor("valid_accuracy", train::Goal::maximize)
                             .precision(o.precision == "bf16"  ? DType::bf16
                                        : o.precision == "f16" ? DType::f16
                                                               : DType::f32)
                             .graph(o.graph)
                             .data_parallel()
                             .title("Fashion-MNIST CNN"));
  if (cosine) learner.set_scheduler(*cosine, train::ScheduleEvery::batch);
  const train::FitResult r = learner.fit(train, test);
  if (r.interrupted) {
    say << "stopped; continue with: ember train fashion-mnist --resume --out " << o.out << "\n";
    return 130;
  }
  double accuracy = NAN;
  if (!r.history.empty()) accuracy = r.history.back().valid_accuracy;
  if (std::isnan(accuracy)) accuracy = learner.evaluate(test).valid_accuracy;  // on every rank
  if (!lead) return 0;
  const std::string model_path = (fs::path(o.out) / "model.safetensors").string();
  save(model, model_path,
       {{"model", "FashionCnn"},
        {"epochs", std::to_string(r.epochs_done)},
        {"input", "x / 255, then (x - 0.2860) / 0.3530"}});
  std::cout << "\ntest accuracy after " << r.epochs_done << " epochs: " << percent(accuracy) << " ("
            << test_set->size() << " test images)\n";
  std::cout << "model saved to " << model_path << "; metrics in " << o.out
            << "/metrics.csv, curves in " << o.out << "/curves.svg, checkpoints in " << o.out
            << "/checkpoints\n";
  classify_examples(model, *test_set, o.show, dev);
  return 0;
}

int run_eval(const EvalOptions& o) {
  const Device dev = Device::parse(o.device);
  check_data_dir(o.data_dir);
  // Int8 weights (ember quantize) are told by their scales.
  const bool int8 =
      !io::is_pytorch_file(o.model) && io::load_safetensors(o.model).contains("fc1.weight_scale");
  models::FashionCnn model(int8 ? Device::cpu() : dev);
  models::FashionCnnInt8 quantized(int8 ? dev : Device::cpu());
  if (int8) {
    load(quantized, o.model);
  } else {
    load(model, o.model);
    model.eval();
  }
  const auto test_set = data::FashionMnist::test(o.data_dir);
  check_fashion_set(*test_set, o.data_dir, "t10k");
  Loader test(test_set, fashion_batcher(),
              data::DataLoaderConfig()
                  .batch_size(static_cast<size_t>(o.batch_size))
                  .workers(2)
                  .device(dev));
  auto guard = no_grad();
  std::vector<int64_t> hits(10, 0), totals(10, 0);
  for (data::ImageBatch& b : test.epoch(0)) {
    const Tensor<2> logits = int8 ? quantized(b.images) : model(b.images);
    const auto predicted = logits.argmax(1).to_vector<int64_t>();
    const auto labels = b.labels.to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto l = static_cast<size_t>(labels[i]);  // in [0, 10): check_fashion_set
      ++totals[l];
      hits[l] += predicted[i] == labels[i];
    }
  }
  int64_t hit = 0, total = 0;
  const auto& names = data::FashionMnist::classes();
  std::cout << "per class:\n";
  for (size_t c = 0; c < 10; ++c) {
    hit += hits[c];
    total += totals[c];
    char line[80];
    std::snprintf(
        line, sizeof line, "  %-12s %s", names[c].c_str(),
        totals[c] ? percent(static_cast<double>(hits[c]) / static_cast<double>(totals[c])).c_str()
                  : "- (no test images)");
    std::cout << line << "\n";
  }
  std::cout << "test accuracy: " << percent(static_cast<double>(hit) / static_cast<double>(total))
            << " (" << hit << "/" << total << ") of " << o.model << (int8 ? " (int8 weights)" : "")
            << "\n";
  return 0;
}

// Text from a file, made safe for a terminal and cut to `max_chars` characters: control
// characters as escapes (\n, \x1b; C1 controls as \u009b), bytes that are not UTF-8 as \xff,
// and a backslash as \\, so that what is shown names one string only. Longer text ends with
// "...". `cut` is set when it was cut short.
struct Shown {
  std::string text;
  size_t chars = 0;  // as wide on a terminal (one column per character; wide scripts aside)
  bool cut = false, escaped = false;
};

Shown shown(std::string_view s, size_t max_chars) {
  Shown out;
  size_t keep_bytes = 0, keep_chars = 0;  // the text within max_chars - 3, where "..." goes
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80         ? 1
                       : (c >> 5) == 6  ? 2
                       : (c >> 4) == 14 ? 3
                       : (c >> 3) == 30 ? 4
                                        : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    bool valid = len != 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      valid = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3fu);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
    valid = valid && !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) &&
            !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) && !(cp >= 0xd800 && cp <= 0xdfff);
    char piece[8];
    bool escape = true;
    if (!valid) {
      std::snprintf(piece, sizeof piece, "\\x%02x", c);
    } else if (cp == '\\' || cp == '\n' || cp == '\t' || cp == '\r') {
      std::snprintf(piece, sizeof piece, "\\%c",
                    cp == '\n'   ? 'n'
                    : cp == '\t' ? 't'
                    : cp == '\r' ? 'r'
                                 : '\\');
      escape = cp != '\\';
    } else if (cp < 0x20 || cp == 0x7f) {
      std::snprintf(piece, sizeof piece, "\\x%02x", static_cast<unsigned>(cp));
    } else if (cp >= 0x80 && cp < 0xa0) {
      std::snprintf(piece, sizeof piece, "\\u%04x", static_cast<unsigned>(cp));
    } else {
      std::memcpy(piece, s.data() + i, len);
      piece[len] = '\0';
      escape = false;
    }
    i += valid ? len : 1;
    const size_t chars = escape || cp == '\\' ? std::strlen(piece) : 1;
    if (out.chars + chars > max_chars) {  // it does not fit: cut where "..." fits
      out.text.resize(keep_bytes);
      out.text += "...";
      out.chars = keep_chars + 3;
      out.cut = true;
      return out;
    }
    out.text += piece;
    out.chars += chars;
    out.escaped |= escape;
    if (out.chars + 3 <= max_chars) {
      keep_bytes = out.text.size();
      keep_chars = out.chars;
    }
  }
  return out;
}

// Bounds of `ember inspect`: a name column of at most 64 characters and metadata values of 60,
// so that the output grows with the file, not with the square of its longest name.
constexpr size_t kNameChars = 64;
constexpr size_t kValueChars = 60;

#ifdef EMBER_HAVE_ONNX
std::string dims_text(const onnx::ValueInfo& v) {
  if (!v.has_shape) return "(shape unknown)";
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    const onnx::Dim& d = v.shape[i];
    s += (i ? ", " : "") + (d.size >= 0        ? std::to_string(d.size)
                            : d.symbol.empty() ? "?"
                                               : d.symbol);
  }
  return s + "]";
}

// `ember inspect model.onnx`: what the model declares, its operators, and what Ember lacks.
int run_inspect_onnx(const std::string& path, bool values) {
  const onnx::ModelSummary m = onnx::inspect(path);
  std::cout << shown(path, 4096).text << ": ONNX IR version " << m.ir_version << ", producer '"
            << shown(m.producer, kValueChars).text << "'\n";
  std::cout << "opsets:";
  for (const auto& [domain, version] : m.opsets) {
    std::cout << " " << shown(domain.empty() ? "ai.onnx" : domain, kNameChars).text << " "
              << version;
  }
  std::cout << "\n";
  for (const auto& [title, values] :
       {std::pair{"inputs", &m.inputs}, std::pair{"outputs", &m.outputs}}) {
    std::cout << title << ":\n";
    for (const onnx::ValueInfo& v : *values) {
      std::cout << "  " << shown(v.name, kNameChars).text << "  " << v.dtype_name << "  "
                << shown(dims_text(v), kValueChars).text << "\n";
    }
  }
  if (values) {
    std::cout << "values (inferred):\n";
    for (const onnx::ValueInfo& v : m.values) {
      std::cout << "  " << shown(v.name, kNameChars).text << "  " << v.dtype_name << "  "
                << shown(dims_text(v), kValueChars).text << "\n";
    }
  }
  std::cout << "initialisers: " << m.num_initializers << " tensors, " << m.num_parameters
            << " parameters\n";
  std::cout << "operators (nodes, subgraphs included):\n";
  for (const auto& [op, count] : m.op_histogram) {
    std::cout << "  " << shown(op, kNameChars).text << "  " << count << "\n";
  }
  if (m.unsupported.empty()) {
    std::cout << "every operator is supported\n";
    return 0;
  }
  std::cout << "unsupported operators:\n";
  for (const onnx::UnsupportedOp& u : m.unsupported) {
    std::cout << "  " << shown(u.op_type, kNameChars).text << " ("
              << shown(u.domain.empty() ? "ai.onnx" : u.domain, kNameChars).text << " opset "
              << u.opset << ", " << u.count << (u.count == 1 ? " node)\n" : " nodes)\n");
  }
  return 0;
}
#endif

// One row of `ember inspect`'s tensor table.
struct TensorRow {
  std::string name, dtype;
  Shape shape;
};

// The table of names, dtypes and shapes, the parameter count, then `extra` (metadata, or the
// values of a checkpoint) under its title; long names and values are cut, odd bytes escaped.
void print_tensors(const std::string& path, const std::vector<TensorRow>& rows,
                   const std::string& extra_title,
                   const std::vector<std::pair<std::string, std::string>>& extra) {
  int64_t total = 0;
  size_t width = 4, cut = 0;
  bool escaped = false;
  std::vector<Shown> names;
  names.reserve(rows.size());
  for (const TensorRow& r : rows) {
    names.push_back(shown(r.name, kNameChars));
    width = std::max(width, names.back().chars);
    cut += names.back().cut;
    escaped |= names.back().escaped;
  }
  auto pad = [](const Shown& s, size_t w) {
    return s.text + std::string(w > s.chars ? w - s.chars : 0, ' ');
  };
  size_t dtype_width = 6;
  for (const TensorRow& r : rows) dtype_width = std::max(dtype_width, shown(r.dtype, 16).chars);
  std::cout << shown(path, 4096).text << ": " << rows.size() << " tensors\n";
  std::cout << "  " << pad(shown("name", 4), width) << "  " << pad(shown("dtype", 5), dtype_width)
            << "  shape\n";
  for (size_t row = 0; row < rows.size(); ++row) {
    total += rows[row].shape.numel();
    std::cout << "  " << pad(names[row], width) << "  "
              << pad(shown(rows[row].dtype, 16), dtype_width) << "  " << to_string(rows[row].shape)
              << "\n";
  }
  std::cout << "parameters (elements of every tensor): " << total << "\n";
  if (!extra.empty()) std::cout << extra_title << ":\n";
  for (const auto& [k, v] : extra) {
    const Shown key = shown(k, kNameChars), value = shown(v, kValueChars);
    escaped |= key.escaped || value.escaped;
    cut += key.cut;
    std::cout << "  " << key.text << ": " << value.text;
    if (value.cut) std::cout << " (" << v.size() << " bytes)";
    std::cout << "\n";
  }
  if (cut) {
    std::cout << "(" << cut << " name(s) longer than " << kNameChars
              << " characters are shown cut short, ending in \"...\")\n";
  }
  if (escaped) {
    std::cout << "(control characters and bytes that are not UTF-8 are shown as escapes: \\n, "
                 "\\x1b, ...)\n";
  }
}

int run_inspect(const std::string& path, [[maybe_unused]] bool values) {
#ifdef EMBER_HAVE_ONNX
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) {
    return run_inspect_onnx(path, values);
  }
#endif
  std::vector<TensorRow> rows;
  if (io::is_pytorch_file(path)) {  // else (but .onnx) a safetensors file
    const io::PytorchFile file = io::load_pytorch(path);
    for (const std::string& n : file.names()) {
      const io::PytorchTensorInfo& info = file.info(n);
      rows.push_back({n, info.torch_dtype.substr(6), info.shape});  // "torch.float32" -> "float32"
    }
    print_tensors(path, rows, "values", file.values());
    return 0;
  }
  const io::SafetensorsFile file = io::load_safetensors(path);
  for (const std::string& n : file.names())
    rows.push_back({n, file.info(n).format_dtype, file.shape(n)});
  const std::vector<std::pair<std::string, std::string>> metadata(file.metadata().begin(),
                                                                  file.metadata().end());
  print_tensors(path, rows, "metadata", metadata);
  return 0;
}

// `ember convert model.pt model.safetensors`: a torch.save state dict (or one entry of a
// checkpoint, --key) as a safetensors file, read without running the pickle.
int run_convert(const ConvertOptions& o) {
  const io::PytorchFile file = io::load_pytorch(o.in, o.key);
  EMBER_CHECK(file.size() > 0, "[convert] ", o.in, " holds no tensors",
              file.top_level_keys().empty() ? std::string()
                                            : " at its top level (pick an entry with --key)");
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const std::string& n : file.names()) tensors.emplace_back(n, file.tensor(n, Device::cpu()));
  io::save_safetensors(tensors, o.out, {{"format", "pt"}});
  std::cout << "wrote " << shown(o.out, 4096).text << " (" << tensors.size() << " tensors from "
            << shown(o.in, 4096).text << ")\n";
  return 0;
}

// `ember quantize model.safetensors model-int8.safetensors`: every float weight of rank 2 or
// more named *.weight as int8 per output channel, with its scales as *.weight_scale (the layout
// of nn::Int8Linear and nn::Int8Conv2d); other tensors as they are.
int run_quantize(const QuantizeOptions& o) {
  const io::SafetensorsFile file = io::load_safetensors(o.in);
  std::vector<std::pair<std::string, DynTensor>> tensors;
  int64_t quantized = 0, before = 0, after = 0;
  for (const std::string& name : file.names()) {
    const DynTensor t = file.tensor(name, Device::cpu());
    before += static_cast<int64_t>(t.raw().nbytes());
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (weight && is_floating(t.dtype()) && t.rank() >= 2) {
      EMBER_CHECK(!file.contains(name + "_scale"), "[quantize] ", o.in, " already holds ", name,
                  "_scale (is it quantized already?)");
      auto [q, scale] = nn::quantize_per_channel(t);
      tensors.emplace_back(name, q);
      tensors.emplace_back(name + "_scale", scale);
      ++quantized;
    } else {
      tensors.emplace_back(name, t);
    }
  }
  EMBER_CHECK(quantized > 0, "[quantize] ", o.in,
              " holds no float weight of rank 2 or more named *.weight");
  for (const auto& entry : tensors) after += static_cast<int64_t>(entry.second.raw().nbytes());
  std::map<std::string, std::string> metadata = file.metadata();
  metadata["quantization"] = "int8 weights, symmetric per output channel (ember quantize)";
  io::save_safetensors(tensors, o.out, metadata);
  char line[160];
  std::snprintf(line, sizeof line, " (%lld weights as int8; %.2f MB of tensors, from %.2f MB)\n",
                static_cast<long long>(quantized), static_cast<double>(after) / 1e6,
                static_cast<double>(before) / 1e6);
  std::cout << "wrote " << shown(o.out, 4096).text << line;
  return 0;
}

// `ember serve model.onnx|model.safetensors --port N`: the model over HTTP until SIGTERM
// (include/ember/serve/serve.hpp, docs/SERVE.md).
int run_serve(const ServeOptions& o) {
#ifdef EMBER_HAVE_SERVE
  const Device dev = Device::parse(o.device);
  const bool onnx_file = o.model.size() > 5 && o.model.compare(o.model.size() - 5, 5, ".onnx") == 0;
  std::shared_ptr<serve::Servable> model =
      onnx_file ? serve::onnx_servable(o.model, dev) : serve::fashion_servable(o.model, dev);
  serve::ServerConfig config;
  config.host = o.host;
  config.port = o.port;
  config.max_batch = o.max_batch;
  config.max_wait = std::chrono::microseconds(o.max_wait_us);
  config.max_queue = o.max_queue;
  config.timeout = std::chrono::milliseconds(o.timeout_ms);
  config.max_body_bytes = static_cast<size_t>(o.max_body_mb) << 20;
  config.threads = static_cast<int>(o.threads);
  serve::Server server(model, config);
  const int port = server.bind();
  std::cout << "ember serve: " << shown(o.model, 4096).text << " on " << to_string(dev)
            << ", listening on http://" << o.host << ":" << port
            << " (POST /v1/predict, /v1/predict/raw; GET /healthz, /v1/model, /v1/stats)"
            << std::endl;
  serve::run_until_signal(server);
  const serve::ServerStats st = server.stats();
  std::cout << "ember serve: stopped after " << st.requests << " requests in " << st.batches
            << " batches (" << st.rejected << " refused)" << std::endl;
  return 0;
#else
  EMBER_FAIL("this Ember was built without the server (apt-get install libcpp-httplib-dev, then ",
             "configure again): cannot serve ", o.model);
#endif
}

// `ember onnx2cpp model.onnx --out DIR`: the model as C++ source and its weights.
int run_onnx2cpp(const Onnx2CppOptions& o) {
#ifdef EMBER_HAVE_ONNX
  onnx::WrittenModule w;
  try {
    w = onnx::write_cpp(o.model, o.out, o.name);
  } catch (const Error& e) {
    // "onnx2cpp: " starts the generator's own messages; the command's name is said already.
    const std::string what = e.what();
    EMBER_FAIL(what.rfind("onnx2cpp: ", 0) == 0 ? what.substr(10) : what);
  }
  std::cout << "wrote " << shown(w.paths[0], 4096).text << ", " << shown(w.paths[1], 4096).text
            << " and " << shown(w.paths[2], 4096).text << " (" << w.tensors << " tensors)\n";
  std::cout << "nodes: " << w.layers << " as nn layers, " << w.functions << " as Ember functions, "
            << w.calls << " as onnx::call";
  if (w.control > 0) std::cout << ", " << w.control << " as C++ if/for (If, Loop)";
  std::cout << "\n";
  return 0;
#else
  EMBER_FAIL("this Ember was built without the ONNX importer (apt-get install libonnx-dev ",
             "libprotobuf-dev, then configure again): cannot read ", o.model);
#endif
}

// Output the user asked for that never arrived (a full disk, a closed pipe) is an error: one
// message on stderr, and an exit status that is not 0.
bool g_stdout_failure_reported = false;

int report_stdout_failure(const std::string& cmd) {
  const int err = errno;
  if (!g_stdout_failure_reported) {
    std::cerr << cmd << ": error: cannot write to standard output: "
              << (err ? std::strerror(err) : "write error") << "\n";
  }
  g_stdout_failure_reported = true;
  return 1;
}

int run(int argc, char** argv) {
  CLI::App app{"Ember: train, evaluate, inspect and import models", "ember"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ember 0.1.0");

  TrainOptions t;
  CLI::App* train = app.add_subcommand(
      "train",
      "Train a model: the Fashion-MNIST CNN (Adam), with progress, checkpoints every "
      "epoch (--resume continues), metrics.csv and curves.svg in --out");
  train->add_option("dataset", t.dataset, "What to train: fashion-mnist")
      ->required()
      ->check(CLI::IsMember({"fashion-mnist"}));
  train->add_option("--epochs", t.epochs, "Epochs to train (in all, counting resumed ones)")
      ->capture_default_str()
      ->check(integer_in<int64_t>(0, 100000));
  train->add_option("--batch-size", t.batch_size, "Images per batch")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 60000));
  train->add_option("--lr", t.lr, "Adam's learning rate")
      ->capture_default_str()
      ->check(kPositiveNumber);
  train
      ->add_option("--schedule", t.schedule,
                   "Learning rate: cosine (from --lr to 0 over the run, per batch) or constant")
      ->capture_default_str()
      ->check(CLI::IsMember({"cosine", "constant"}));
  train->add_option("--device", t.device, "cpu, libtorch, cuda:N or vulkan:N")
      ->capture_default_str();
  train
      ->add_option("--precision", t.precision,
                   "f32, or mixed precision: bf16 or f16 autocast with f32 master weights (f16 "
                   "also scales the loss)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
  train->add_flag("--graph", t.graph,
                  "Capture a training step once and replay it for every full batch (CUDA graphs "
                  "on cuda:N; bf16 or f32)");
  train->add_option("--out", t.out, "Output directory")->capture_default_str();
  CLI::Option* resume =
      train->add_flag("--resume", t.resume, "Continue from the newest checkpoint in --out");
  train
      ->add_flag("--overwrite", t.overwrite,
                 "Delete the checkpoints of an earlier run in --out and start over (without it, "
                 "a fresh run into a folder holding checkpoints is refused)")
      ->excludes(resume);
  train->add_option("--workers", t.workers, "Data-loading threads")
      ->capture_default_str()
      ->check(integer_in<int64_t>(0, 64));
  train->add_option("--seed", t.seed, "Seed of the weights and the data order")
      ->capture_default_str()
      ->check(integer_in<uint64_t>(0, std::numeric_limits<uint64_t>::max()));
  train->add_option("--data", t.data_dir, "Directory of the Fashion-MNIST files")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  train->add_option("--limit", t.limit, "Train on the first N images only (0: all)")
      ->capture_default_str()
      ->check(integer_in<int64_t>(0, std::numeric_limits<int64_t>::max()));
  train->add_option("--show", t.show, "Test images to classify at the end")
      ->capture_default_str()
      ->check(integer_in<int64_t>(0, 100));

  EvalOptions e;
  CLI::App* eval = app.add_subcommand(
      "eval", "Test accuracy (overall and per class) of Fashion-MNIST CNN weights");
  eval->add_option("model", e.model, "A .safetensors file written by ember train")
      ->required()
      ->check(kRegularFile);
  eval->add_option("--device", e.device, "cpu, libtorch, cuda:N or vulkan:N")
      ->capture_default_str();
  eval->add_option("--data", e.data_dir, "Directory of the Fashion-MNIST files")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  eval->add_option("--batch-size", e.batch_size, "Images per batch")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 10000));

  ServeOptions sv;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve",
      "Serve a model over HTTP until SIGTERM: an .onnx file, or Fashion-MNIST CNN weights "
      "(.safetensors, float32 or int8); JSON and raw-tensor endpoints with dynamic batching");
  serve_cmd->add_option("model", sv.model, "An .onnx or .safetensors file")
      ->required()
      ->check(kRegularFile);
  serve_cmd->add_option("--host", sv.host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", sv.port, "Port (0: any free one, printed)")
      ->capture_default_str()
      ->check(integer_in<int>(0, 65535));
  serve_cmd->add_option("--device", sv.device, "cpu, libtorch, cuda:N or vulkan:N")
      ->capture_default_str();
  serve_cmd->add_option("--max-batch", sv.max_batch, "Examples run together at most")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 65536));
  serve_cmd
      ->add_option("--max-wait-us", sv.max_wait_us,
                   "How long a batch waits for more requests after its first")
      ->capture_default_str()
      ->check(integer_in<int64_t>(0, 10000000));
  serve_cmd->add_option("--max-queue", sv.max_queue, "Requests waiting at most; more get 503")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 1000000));
  serve_cmd->add_option("--timeout-ms", sv.timeout_ms, "A request's wait for its answer; then 503")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 3600000));
  serve_cmd->add_option("--max-body-mb", sv.max_body_mb, "Largest request body; larger get 413")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 4096));
  serve_cmd->add_option("--threads", sv.threads, "Connections served at once")
      ->capture_default_str()
      ->check(integer_in<int64_t>(1, 4096));

  QuantizeOptions q;
  CLI::App* quantize = app.add_subcommand(
      "quantize",
      "Write a safetensors file with int8 weights: every float *.weight of rank 2 or more per "
      "output channel, with its *.weight_scale (for nn::Int8Linear and nn::Int8Conv2d; ember eval "
      "takes it)");
  quantize->add_option("in", q.in, "A .safetensors file")->required()->check(kRegularFile);
  quantize->add_option("out", q.out, "The .safetensors file to write (atomically)")->required();

  std::string inspect_path;
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "Tensor names, dtypes, shapes, parameter count and metadata of a safetensors file, or "
      "values of a torch.save file; inputs, outputs, opsets, operators and what is unsupported "
      "of an ONNX model");
  inspect->add_option("file", inspect_path, "A .safetensors, .pt or .onnx file")
      ->required()
      ->check(kRegularFile);
  bool inspect_values = false;
  inspect->add_flag("--values", inspect_values,
                    "ONNX: also list every value the graph computes, with its inferred type and "
                    "shape (symbolic dims stay symbolic)");

  ConvertOptions v;
  CLI::App* convert = app.add_subcommand(
      "convert",
      "Write the tensors of a torch.save file (.pt, .pth, pytorch_model.bin) as a safetensors "
      "file, reading the pickle without running it");
  convert->add_option("in", v.in, "A torch.save file")->required()->check(kRegularFile);
  convert->add_option("out", v.out, "The .safetensors file to write (atomically)")->required();
  convert->add_option("--key", v.key,
                      "The entry of a checkpoint dict that holds the weights (model, state_dict)");

  Onnx2CppOptions c;
  CLI::App* onnx2cpp = app.add_subcommand(
      "onnx2cpp",
      "Write an ONNX model as C++ source: DIR/NAME.hpp and NAME.cpp (an EMBER_MODULE struct with "
      "its nn layers, parameters and forward) and its weights as DIR/NAME.safetensors");
  onnx2cpp->add_option("model", c.model, "An .onnx file")->required()->check(kRegularFile);
  onnx2cpp->add_option("--out", c.out, "Output directory (created when missing)")->required();
  onnx2cpp->add_option("--name", c.name, "The generated struct's name, and its files'")
      ->capture_default_str()
      ->check(kIdentifier);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    if (err.get_exit_code() == 0) return app.exit(err);  // --help, --version
    const CLI::App* where = train->parsed()       ? train
                            : eval->parsed()      ? eval
                            : inspect->parsed()   ? inspect
                            : onnx2cpp->parsed()  ? onnx2cpp
                            : convert->parsed()   ? convert
                            : quantize->parsed()  ? quantize
                            : serve_cmd->parsed() ? serve_cmd
                                                  : &app;
    const std::string cmd = where == &app ? "ember" : "ember " + where->get_name();
    std::cerr << cmd << ": error: " << err.what() << " (see " << cmd << " --help)\n";
    return 2;
  }
  const CLI::App* cmd = train->parsed()       ? train
                        : eval->parsed()      ? eval
                        : onnx2cpp->parsed()  ? onnx2cpp
                        : convert->parsed()   ? convert
                        : quantize->parsed()  ? quantize
                        : serve_cmd->parsed() ? serve_cmd
                                              : inspect;
  try {
    if (cmd == train) return run_train(t);
    if (cmd == eval) return run_eval(e);
    if (cmd == onnx2cpp) return run_onnx2cpp(c);
    if (cmd == convert) return run_convert(v);
    if (cmd == quantize) return run_quantize(q);
    if (cmd == serve_cmd) return run_serve(sv);
    return run_inspect(inspect_path, inspect_values);
  } catch (const std::exception& ex) {
    // std::cout's failure (not caught by type: GCC 12 throws it in the old ABI, PR 66145).
    if (std::cout.bad()) return report_stdout_failure("ember " + cmd->get_name());
    std::fflush(stdout);  // what was printed before the error comes first
    std::cerr << "ember " << cmd->get_name() << ": error: " << ex.what() << "\n";
    // The other ranks would wait for this one until their collectives time out: end them now.
    if (dist::world_size() > 1) {
      std::cerr << "ember " << cmd->get_name() << ": rank " << dist::rank() << " of "
                << dist::world_size() << " failed; ending every rank\n";
      dist::abort(1);
    }
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe fails the write (EPIPE), reported below, instead of killing the process
  // silently; std::cout throws on a failed write, so a long run stops at the first.
  std::signal(SIGPIPE, SIG_IGN);
  std::cout.exceptions(std::ios::badbit);
  // std::cerr would flush std::cout first, and throw again where stdout has failed: error paths
  // flush stdout themselves (std::fflush, which does not throw).
  std::cerr.tie(nullptr);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception&) {  // --help printing to a std::cout that fails
    if (!std::cout.bad()) throw;
    rc = report_stdout_failure("ember");
  }
  // The flush at exit must not throw (it would end in std::terminate): checked here instead.
  std::cout.exceptions(std::ios::goodbit);
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return report_stdout_failure("ember");
  return rc;
}
