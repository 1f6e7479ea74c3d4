// The Learner's loop (compiled once): epochs, metrics, schedules, checkpoints, resume, early
// stopping and the Ctrl-C flag.
#include "ember/train/learner.hpp"

#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <limits>

#include "ember/autodiff/autodiff.hpp"
#include "ember/core/text.hpp"
#include "ember/dist/dist.hpp"
#include "ember/io/file.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/optim/grad_scaler.hpp"
#include "ember/tensor/device_graph.hpp"
#include "ember/tensor/generator.hpp"
#include "ember/tensor/memory.hpp"
#include "ember/train/checkpoint.hpp"
#include "progress.hpp"

namespace ember::train {
namespace fs = std::filesystem;
using detail::Running;

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_sigint(int sig) {
  if (g_stop) {  // a second Ctrl-C: the default action (the process ends)
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop = 1;
}

// Installs the SIGINT handler for the duration of fit() and restores the previous one. In a
// data-parallel run SIGTERM too: mpirun turns a Ctrl-C into SIGTERM for every rank (and SIGKILL
// after its odls_base_sigkill_timeout).
class SigintScope {
 public:
  SigintScope(bool on, bool sigterm_too) : on_(on), sigterm_(on && sigterm_too) {
    g_stop = 0;
    if (!on_) return;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
    if (sigterm_) sigaction(SIGTERM, &sa, &previous_term_);
  }
  ~SigintScope() {
    if (on_) sigaction(SIGINT, &previous_, nullptr);
    if (sigterm_) sigaction(SIGTERM, &previous_term_, nullptr);
    g_stop = 0;
  }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  bool on_, sigterm_;
  struct sigaction previous_ {
  }, previous_term_{};
};

// Where the model lives (its first tensor's device; the Cpu for a model without any): the
// peak_MB column reads that device's memory.
Device model_device(const nn::ModuleTree& tree) {
  for (const nn::NamedTensor& t : nn::named_tensors(tree)) {
    if (t.slot->dyn().defined()) return t.slot->dyn().device();
  }
  return Device::cpu();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Adds one batch's output to the running sums (no graph is recorded), on the device: the sums
// are read once per log line and epoch (Running::sync), so a training step never waits for it.
void accumulate(Running& run, const StepOutput& out, int64_t top_k) {
  auto guard = no_grad();
  int64_t n = out.items;
  if (n <= 0) n = out.logits ? out.logits->dims()[0] : 1;
  run.items += n;
  // In double where the device has it (float32 counts are exact to 2^24 items a pass).
  const Device device = out.loss.dyn().device();
  const DType sum = has_dtype(device, DType::f64) ? DType::f64 : DType::f32;
  const DynTensor loss = mul(cast(out.loss.dyn(), sum), static_cast<double>(n));
  DynTensor hits = zeros(Shape{2}, sum, device);
  if (out.logits && out.targets) {
    const Tensor<2>& logits = *out.logits;
    const Tensor<1, Int>& targets = *out.targets;
    const auto correct = (logits.argmax(1) == targets).sum();
    // Top-k: the target is among the k best when fewer than k classes score higher than it.
    const Tensor<2> target_score = logits.gather(1, targets.unsqueeze(1));
    const auto higher = (logits > target_score).sum(1);
    const auto in_top_k = (higher < top_k).sum();
    hits = cast(stack({correct.dyn(), in_top_k.dyn()}, 0), sum);
    run.scored += logits.dims()[0];
  }
  run.add(cat({reshape(loss, Shape{1}), hits}, 0));
}

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
// Checked reads of a checkpoint's metadata: a missing key or a value that is not a number (of
// the key's type) fails naming the checkpoint, the key and the value.
using Metadata = std::map<std::string, std::string>;
const std::string& md_value(const Metadata& md, const std::string& path, const std::string& key) {
  auto it = md.find(key);
  EMBER_CHECK(it != md.end(), "[Learner] checkpoint '", path, "' lacks the metadata key '", key,
              "'");
  return it->second;
}
template <class T>
T md_number(const Metadata& md, const std::string& path, const std::string& key) {
  const std::string& text = md_value(md, path, key);
  const std::optional<T> v = parse_number<T>(text);
  EMBER_CHECK(v, "[Learner] checkpoint '", path, "': metadata '", key, "' is '",
              ember::detail::shown(text), "', not ",
              std::is_floating_point_v<T> ? "a number" : "an integer",
              std::is_unsigned_v<T> ? " >= 0 below 2^64" : " of 64 bits");
  return *v;
}
// An integer of the checkpoint's position or counters, in [lo, hi].
int64_t md_count(const Metadata& md, const std::string& path, const std::string& key, int64_t lo,
                 int64_t hi) {
  const auto v = md_number<int64_t>(md, path, key);
  EMBER_CHECK(v >= lo && v <= hi, "[Learner] checkpoint '", path, "': metadata '", key, "' is ", v,
              ", outside [", lo, ", ", hi, "]");
  return v;
}

// Temp files of the Learner's own outputs, as AtomicFile names them, in out_dir and checkpoints.
bool is_output_file(const std::string& name) {
  return name == "metrics.csv" || name == "curves.svg";
}
bool is_checkpoint_file(const std::string& name) {
  return name.starts_with("epoch-") && name.ends_with(".safetensors");
}

// The file names of `found`, the first three and the newest.
std::string checkpoint_list(const std::vector<CheckpointInfo>& found) {
  std::string out;
  for (size_t i = 0; i < found.size(); ++i) {
    if (i == 3 && found.size() > 4) {
      out += ", ...";
      i = found.size() - 1;
    }
    out += (out.empty() ? "" : ", ") + fs::path(found[i].path).filename().string();
  }
  return out;
}

// Graph replay of training steps (LearnerConfig::graph): the first batch that fits the static
// inputs warms up eagerly, the next is captured (forward, loss and backward), later ones replay.
// The loss, logits and gradients of a replay are the captured step's tensors, refilled.
struct GraphSteps {
  DeviceGraph graph;
  bool warmed = false, off = false;
  StepOutput out;
  Gradients grads;
  std::function<void(const std::string&)> note;

  GraphSteps(Device device, std::function<void(const std::string&)> on_off)
      : graph(device), note(std::move(on_off)) {}

  // Runs the step of `batch` from the static inputs and sets `result` and `grads`; false when the
  // batch must run eagerly (graph replay off, or shapes other than the static inputs').
  bool run(BatchRun& batch, const EpochSource& source, StepOutput& result, int64_t& replays) {
    if (off) return false;
    EMBER_CHECK(static_cast<bool>(batch.stage), "[Learner] graph replay needs the batch's ",
                "tensors: give the batch type a for_each_tensor(batch, f) in its namespace (as ",
                "data::ImageBatch has), or train without graph()");
    // Until a capture, a batch of other shapes (a resumed epoch may start on the short last
    // one) becomes the static inputs and warms up again.
    const Staged staged = batch.stage(!graph.captured());
    if (staged == Staged::other_shapes) return false;
    if (staged == Staged::new_inputs) warmed = false;
    if (graph.captured()) {
      graph.replay();
      ++replays;
    } else if (!warmed) {  // eager on the static inputs: algorithm searches, first-use checks
      out = source.static_step();
      grads = out.loss.backward();
      warmed = true;
    } else {
      try {
        graph.capture([this, &source] {
          out = source.static_step();
          grads = out.loss.backward();
        });
      } catch (const Error& e) {  // refused inside the capture: nothing was kept
        off = true;
        note(e.what());
        return false;
      }
      if (graph.recorded()) graph.replay();  // a recording runs nothing by itself
    }
    result = out;
    return true;
  }
};

}  // namespace

void request_stop() { g_stop = 1; }

namespace detail {
bool copy_batch(const std::vector<DynTensor>& dst, const std::vector<DynTensor>& src) {
  if (dst.size() != src.size()) return false;
  for (size_t i = 0; i < dst.size(); ++i) {
    if (dst[i].shape() != src[i].shape() || dst[i].dtype() != src[i].dtype() ||
        dst[i].device() != src[i].device()) {
      return false;
    }
  }
  for (size_t i = 0; i < dst.size(); ++i) copy_into(dst[i], detach(src[i]));
  return true;
}
}  // namespace detail

struct LearnerCore::State {
  std::optional<optim::Scheduler> scheduler;
  ScheduleEvery every = ScheduleEvery::epoch;
  std::vector<EpochMetrics> history;
  int64_t next_epoch = 0;  // 0-based index of the epoch to run next
  size_t skip = 0;         // batches of next_epoch done before an interruption
  Running partial;         // their sums
  std::optional<double> best;
  int64_t best_epoch = 0;  // 1-based; 0: none
  int64_t bad_epochs = 0;
  bool resumed = false;
  bool fitted = false;  // fit() has run: checkpoints in out_dir may be this Learner's own
  std::optional<optim::GradScaler> scaler;   // precision f16
  DeviceType device_type = DeviceType::Cpu;  // of the model, for autocast
  std::string last_checkpoint;
};

LearnerCore::LearnerCore(std::function<nn::ModuleTree()> tree, optim::Optimizer optimizer,
                         LearnerConfig config)
    : tree_(std::move(tree)),
      optimizer_(std::move(optimizer)),
      config_(std::move(config)),
      state_(std::make_unique<State>()) {
  EMBER_CHECK(config_.epochs_ >= 0, "[Learner] epochs must be >= 0, got ", config_.epochs_);
  EMBER_CHECK(config_.keep_last_ >= 0, "[Learner] keep_last must be >= 0, got ",
              config_.keep_last_);
  EMBER_CHECK(config_.top_k_ >= 1, "[Learner] top_k must be >= 1, got ", config_.top_k_);
  EMBER_CHECK(!(config_.resume_ && config_.overwrite_),
              "[Learner] resume() continues the run in out_dir, overwrite() deletes its "
              "checkpoints: choose one");
  EMBER_CHECK(config_.patience_ >= 0, "[Learner] early-stopping patience must be >= 0, got ",
              config_.patience_);
  EpochMetrics().get(config_.monitor_);  // an unknown metric fails here, not after an epoch
  const DType p = config_.precision_;
  EMBER_CHECK(p == DType::f32 || p == DType::bf16 || p == DType::f16,
              "[Learner] precision must be f32, bf16 or f16, got ", p);
  if (p == DType::f16) state_->scaler.emplace();
  EMBER_CHECK(!(config_.graph_ && p == DType::f16),
              "[Learner] graph replay with precision f16 is not supported: the loss scaler's "
              "skipped steps are decided on the host; use bf16, which needs no scaler");
}

AutocastGuard LearnerCore::step_precision() const {
  const DType p = config_.precision_;
  return AutocastGuard(state_->device_type, p == DType::f32 ? std::nullopt : std::optional(p));
}

LearnerCore::~LearnerCore() = default;

void LearnerCore::set_scheduler(optim::Scheduler scheduler, ScheduleEvery every) {
  EMBER_CHECK(scheduler.defined(), "[Learner] set_scheduler: the schedule is empty");
  state_->scheduler = std::move(scheduler);
  state_->every = every;
}

void LearnerCore::save_checkpoint(const std::string& path) const {
  const nn::ModuleTree tree = tree_();
  const State& s = *state_;
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const nn::NamedTensor& t : nn::named_tensors(tree)) {
    tensors.emplace_back("model." + t.path, t.slot->dyn());
  }
  const optim::OptimizerState opt = optimizer_.state(tree);
  for (const auto& [name, t] : opt.tensors) tensors.emplace_back("optimizer." + name, t);

  std::map<std::string, std::string> md;
  md["format"] = kCheckpointFormat;
  for (const auto& [k, v] : opt.metadata) md["optimizer." + k] = v;
  if (s.scheduler) {
    md["scheduler"] = (*s.scheduler)->name();
    for (const auto& [k, v] : (*s.scheduler)->state()) md["scheduler." + k] = v;
  }
  md["world_size"] = std::to_string(data_parallel() ? dist::world_size() : 1);
  md["epoch"] = std::to_string(s.next_epoch);
  md["batch"] = std::to_string(s.skip);
  md["rng.seed"] = std::to_string(default_generator().seed());
  md["rng.offset"] = std::to_string(default_generator().offset());
  md["top_k"] = std::to_string(config_.top_k_);
  md["history"] = history_to_csv(s.history, config_.top_k_);
  md["best"] = s.best ? fmt(*s.best) : "nan";
  md["best_epoch"] = std::to_string(s.best_epoch);
  md["bad_epochs"] = std::to_string(s.bad_epochs);
  md["partial.loss_sum"] = fmt(s.partial.loss_sum);
  md["partial.correct"] = fmt(s.partial.correct);
  md["partial.top_k"] = fmt(s.partial.top_k);
  md["partial.items"] = std::to_string(s.partial.items);
  md["partial.scored"] = std::to_string(s.partial.scored);
  md["partial.seconds"] = fmt(s.partial.seconds);
  if (s.scaler) {
    for (const auto& [k, v] : s.scaler->state()) md["scaler." + k] = v;
  }
  io::save_safetensors(tensors, path, md);
}

void LearnerCore::load_checkpoint(const std::string& path) {
  const nn::ModuleTree tree = tree_();
  const io::SafetensorsFile file = io::load_safetensors(path);
  const auto& md = file.metadata();
  auto fmt_it = md.find("format");
  EMBER_CHECK(fmt_it != md.end() && fmt_it->second == kCheckpointFormat, "[Learner] '", path,
              "' is not an Ember checkpoint (metadata 'format' is not '", kCheckpointFormat, "')");
  // Check everything before changing anything: a bad checkpoint leaves the Learner as it was.
  const auto named = nn::named_tensors(tree);
  for (const nn::NamedTensor& t : named) {
    const std::string name = "model." + t.path;
    EMBER_CHECK(file.contains(name), "[Learner] checkpoint '", path, "' has no tensor '", name,
                "' (was it written for another model?)");
    EMBER_CHECK(file.shape(name) == t.slot->dyn().shape(), "[Learner] checkpoint '", path, "': '",
                name, "' has shape ", to_string(file.shape(name)), ", the model ",
                to_string(t.slot->dyn().shape()));
  }
  const auto sched_it = md.find("scheduler");
  const bool has_sched = sched_it != md.end();
  EMBER_CHECK(has_sched == state_->scheduler.has_value(), "[Learner] checkpoint '", path, "' ",
              has_sched ? "has a " + ember::detail::shown(sched_it->second) + " schedule"
                        : "has no schedule",
              " but this Learner ", state_->scheduler ? "has one" : "has none",
              ": call set_scheduler() as in the run that wrote it");
  if (has_sched) {
    EMBER_CHECK(sched_it->second == (*state_->scheduler)->name(), "[Learner] checkpoint '", path,
                "' has a ", ember::detail::shown(sched_it->second), " schedule, this Learner a ",
                (*state_->scheduler)->name());
  }
  // A data-parallel run's position and shards hold for its number of processes only.
  const int64_t world = data_parallel() ? dist::world_size() : 1;
  const int64_t written_by =
      md.count("world_size") ? md_count(md, path, "world_size", 1, 1 << 24) : int64_t{1};
  EMBER_CHECK(written_by == world, "[Learner] checkpoint '", path, "' was written by a run of ",
              written_by, " process(es), this one has ", world, ": resume with the same number (",
              "mpirun -np ", written_by, ")");
  const auto top_k = md_number<int64_t>(md, path, "top_k");
  EMBER_CHECK(top_k == config_.top_k_, "[Learner] checkpoint '", path, "' measured top-", top_k,
              " accuracy, this Learner top-", config_.top_k_);

  optim::OptimizerState opt;
  std::map<std::string, std::string> sched, scaler;
  for (const auto& [k, v] : md) {
    if (k.starts_with("optimizer.")) opt.metadata[k.substr(10)] = v;
    if (k.starts_with("scheduler.")) sched[k.substr(10)] = v;
    if (k.starts_with("scaler.")) scaler[k.substr(7)] = v;
  }
  for (const std::string& name : file.names()) {
    if (name.starts_with("optimizer."))
      opt.tensors.emplace_back(name.substr(10), file.tensor(name));
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  State s;
  s.next_epoch = md_count(md, path, "epoch", 0, kMax);
  s.skip = static_cast<size_t>(md_count(md, path, "batch", 0, kMax));
  try {
    s.history = history_from_csv(md_value(md, path, "history"), config_.top_k_);
  } catch (const Error& e) {
    EMBER_FAIL("[Learner] checkpoint '", path, "': metadata 'history': ", e.what());
  }
  EMBER_CHECK(static_cast<int64_t>(s.history.size()) == s.next_epoch, "[Learner] checkpoint '",
              path, "': metadata 'history' has ", s.history.size(), " epochs, 'epoch' says ",
              s.next_epoch);
  const auto best = md_number<double>(md, path, "best");
  if (!std::isnan(best)) s.best = best;
  s.best_epoch = md_count(md, path, "best_epoch", 0, s.next_epoch);
  s.bad_epochs = md_count(md, path, "bad_epochs", 0, s.next_epoch);
  s.partial.loss_sum = md_number<double>(md, path, "partial.loss_sum");
  s.partial.correct = md_number<double>(md, path, "partial.correct");
  s.partial.top_k = md_number<double>(md, path, "partial.top_k");
  s.partial.items = md_count(md, path, "partial.items", 0, kMax);
  s.partial.scored = md_count(md, path, "partial.scored", 0, kMax);
  s.partial.seconds = md_number<double>(md, path, "partial.seconds");
  if (data_parallel() &&
      dist::rank() != 0) {  // the sums saved are every rank's: rank 0 carries them on
    const double seconds = s.partial.seconds;
    s.partial = {};
    s.partial.seconds = seconds;
  }
  // f16's loss scale continues where it was; a checkpoint of another precision starts it afresh.
  s.scaler = state_->scaler;  // a copy: a failure below leaves the Learner's own untouched
  if (s.scaler && !scaler.empty()) {
    try {
      s.scaler->load_state(scaler);
    } catch (const Error& e) {
      EMBER_FAIL("[Learner] checkpoint '", path, "': ", e.what());
    }
  }
  const auto seed = md_number<uint64_t>(md, path, "rng.seed");
  const auto offset = md_number<uint64_t>(md, path, "rng.offset");

  const optim::OptimizerState opt_before = optimizer_.state(tree);
  try {
    optimizer_.load_state(tree, opt);  // each validates its own part first
    if (has_sched) {
      try {
        (*state_->scheduler)->load_state(sched);
      } catch (const Error&) {
        optimizer_.load_state(tree, opt_before);  // a bad schedule changes nothing either
        throw;
      }
    }
  } catch (const Error& e) {
    EMBER_FAIL("[Learner] checkpoint '", path, "': ", e.what());
  }
  for (const nn::NamedTensor& t : named) {
    const DynTensor& current = t.slot->dyn();
    t.slot->set_dyn(file.tensor("model." + t.path, current.device(), current.dtype()));
  }
  default_generator().manual_seed(seed);
  default_generator().set_offset(offset);
  s.scheduler = std::move(state_->scheduler);
  s.every = state_->every;
  s.resumed = true;
  s.fitted = state_->fitted;
  s.last_checkpoint = path;
  *state_ = std::move(s);
}

namespace {

double from_rank0(double v) {
  return dist::broadcast(full(Shape{}, Scalar(v), DType::f64, Device::cpu())).item<double>();
}

// The sums of every rank (a data-parallel run's epoch metrics, the same on each rank).
Running every_rank(const Running& run) {
  const DynTensor mine =
      from_data(TensorData::from(std::vector<double>{run.loss_sum, run.correct, run.top_k,
                                                     static_cast<double>(run.items),
                                                     static_cast<double>(run.scored)},
                                 Shape{5}),
                Device::cpu());
  const std::vector<double> all = dist::all_reduce(mine).to_vector<double>();
  Running out = run;
  out.loss_sum = all[0];
  out.correct = all[1];
  out.top_k = all[2];
  out.items = static_cast<int64_t>(all[3]);
  out.scored = static_cast<int64_t>(all[4]);
  return out;
}

}  // namespace

EpochMetrics LearnerCore::evaluate_impl(const EpochSource& source) {
  const nn::ModuleTree tree = tree_();
  state_->device_type = model_device(tree).type;
  nn::set_training(tree, false);
  auto guard = no_grad();
  Running run;
  const auto t0 = std::chrono::steady_clock::now();
  source.run(0, 0, [&](BatchRun& batch) {
    accumulate(run, batch.compute(), config_.top_k_);
    return true;
  });
  run.seconds = seconds_since(t0);
  run.sync();
  if (data_parallel()) run = every_rank(run);
  EpochMetrics m;
  m.train_loss = m.train_accuracy = m.train_top_k = NAN;
  m.valid_loss = run.loss();
  m.valid_accuracy = run.accuracy();
  m.valid_top_k = run.top_k_accuracy();
  m.lr = optimizer_.lr(0);
  m.items_per_s = run.seconds > 0 ? static_cast<double>(run.items) / run.seconds : 0;
  m.seconds = run.seconds;
  return m;
}

bool LearnerCore::data_parallel() const { return config_.ddp_ && dist::world_size() > 1; }

FitResult LearnerCore::fit_impl(const EpochSource& train, const EpochSource* valid) {
  State& s = *state_;
  // Data-parallel: every rank reads the checkpoints, rank 0 alone writes files and prints.
  const bool parallel = data_parallel();
  const bool lead = !parallel || dist::rank() == 0;
  const bool files = !config_.out_dir_.empty();
  const std::string ckpt_dir = files ? (fs::path(config_.out_dir_) / "checkpoints").string() : "";
  detail::ProgressPrinter progress(lead ? config_.progress_ : Progress::none, config_.log_every_,
                                   config_.top_k_, std::cout);
  EMBER_CHECK(!(parallel && config_.graph_),
              "[Learner] graph replay with data_parallel() is not "
              "supported: the gradients' all-reduce runs outside the captured step");
  // out_dir checked and cleared of a killed run's temp files.
  auto prepare_out_dir = [&] {
    std::error_code ec;
    const fs::file_type type = fs::status(config_.out_dir_, ec).type();
    EMBER_CHECK(type == fs::file_type::not_found || type == fs::file_type::directory,
                "[Learner] the output folder '", config_.out_dir_, "' ",
                ec ? "cannot be read: " + ec.message() : std::string("is not a directory"));
    // Temp files of a run killed mid-write: ours (by name) and their writer gone.
    size_t removed = io::remove_stale_temp_files(config_.out_dir_, is_output_file).size();
    removed += io::remove_stale_temp_files(ckpt_dir, is_checkpoint_file).size();
    if (removed) {
      progress.note("removed " + std::to_string(removed) +
                    " temp file(s) left by a run killed while writing to " + config_.out_dir_);
    }
  };
  if (files) {
    // Rank 0 prepares out_dir and decides (resume from which checkpoint, or refuse) and every
    // rank follows, so that all load the same file or raise the same error.
    // What the checkpoints in out_dir say: the one to resume from, "" to start afresh (after
    // deleting an earlier run's with overwrite()), or an error.
    auto checkpoint_to_resume = [&]() -> std::string {
      // A folder that cannot be read fails here (list_checkpoints), rather than starting over.
      std::vector<std::string> ignored;
      const auto found = list_checkpoints(ckpt_dir, &ignored);
      if (config_.resume_) {
        for (const std::string& why : ignored) {
          std::cerr << "[Learner] warning: ignoring " << why << " (not a checkpoint Ember wrote)\n";
        }
        if (!found.empty()) return found.back().path;
        if (!s.fitted) {
          std::cerr << "[Learner] note: no checkpoint to resume from in '" << ckpt_dir
                    << "': starting from epoch 1\n";
        }
      } else if (!found.empty() && !s.fitted && s.next_epoch == 0 && s.skip == 0) {
        // A fresh run: another run's checkpoints would be pruned as this run's, and a later
        // resume could take the newest of them (HF Trainer's overwrite_output_dir rule).
        EMBER_CHECK(config_.overwrite_, "[Learner] '", ckpt_dir, "' holds ", found.size(),
                    " checkpoint(s) of an earlier run (", checkpoint_list(found),
                    "): continue it with resume() (ember train --resume), or delete them and "
                    "start over with overwrite() (--overwrite), or use another out_dir");
        for (const CheckpointInfo& c : found) {
          std::error_code ec;
          fs::remove(c.path, ec);
          EMBER_CHECK(!ec, "[Learner] cannot delete '", c.path,
                      "' of an earlier run: ", ec.message());
        }
        std::cerr << "[Learner] note: deleted " << found.size() << " checkpoint(s) of an earlier "
                  << "run from '" << ckpt_dir << "' (overwrite)\n";
      }
      return {};
    };
    std::string resume_from, refused;
    if (lead) {
      try {
        prepare_out_dir();
        if (!s.resumed) resume_from = checkpoint_to_resume();
        std::error_code ec;
        fs::create_directories(ckpt_dir, ec);
        EMBER_CHECK(!ec, "[Learner] cannot create the checkpoint directory '", ckpt_dir,
                    "': ", ec.message());
      } catch (const Error& e) {
        if (!parallel) throw;
        refused = e.what();
      }
    }
    if (parallel) {
      refused = dist::broadcast(refused);
      resume_from = dist::broadcast(resume_from);
      if (!refused.empty()) raise_error(refused);
    }
    if (!resume_from.empty()) {
      load_checkpoint(resume_from);
      progress.note("resumed from " + resume_from);
    }
  }
  s.fitted = true;
  // The position must lie within this run (a checkpoint of a longer run, or of another batch
  // size mid-epoch, cannot continue here).
  EMBER_CHECK(s.next_epoch < config_.epochs_ || (s.next_epoch == config_.epochs_ && s.skip == 0),
              "[Learner] checkpoint '", s.last_checkpoint, "' is at epoch ", s.next_epoch,
              s.skip ? " and " + std::to_string(s.skip) + " batches" : std::string(), ", past the ",
              config_.epochs_,
              " epochs of this run: train more epochs, or use another out_dir to start over");
  EMBER_CHECK(s.skip < train.batches || s.skip == 0, "[Learner] checkpoint '", s.last_checkpoint,
              "' stopped after ", s.skip, " batches of epoch ", s.next_epoch + 1,
              ", but an epoch here has ", train.batches,
              " batches (another batch size or data set?)");
  std::string monitor = config_.monitor_;
  if (!valid && monitor.starts_with("valid_")) monitor = "train_" + monitor.substr(6);

  SigintScope sigint(config_.catch_sigint_, parallel);
  FitResult result;
  const nn::ModuleTree tree = tree_();
  const Device device = model_device(tree);
  s.device_type = device.type;
  std::optional<dist::DistributedDataParallel> ddp;
  if (parallel) {
    dist::barrier();  // rank 0's clean-up of out_dir is done before any rank goes on
    ddp.emplace(tree_, *config_.ddp_);
  }
  auto backward_of = [&ddp](const Tensor<0>& loss) {
    return ddp ? ddp->backward(loss) : loss.backward();
  };
  std::optional<GraphSteps> graph;
  if (config_.graph_) {
    EMBER_CHECK(optimizer_.updates_in_place(), "[Learner] graph replay needs an optimizer that ",
                "updates the parameters in place (SGD, Adam or AdamW with fused(true)): a replay ",
                "reads them where the capture found them; ", optimizer_.name(), " here does not");
    graph.emplace(device, [&progress](const std::string& why) {
      progress.note("graph replay off, training eagerly: " + why);
    });
  }
  auto write_files = [&] {
    if (!files || !lead) return;
    io::write_file_atomic((fs::path(config_.out_dir_) / "metrics.csv").string(),
                          history_to_csv(s.history, config_.top_k_), "[Learner]");
    io::write_file_atomic((fs::path(config_.out_dir_) / "curves.svg").string(),
                          history_to_svg(s.history, config_.title_), "[Learner]");
  };
  // metrics.csv holds what the checkpoint holds from the start: a run killed after writing a
  // checkpoint but before metrics.csv (or after) leaves them apart, and resuming mends that.
  write_files();

  while (s.next_epoch < config_.epochs_) {
    const int64_t epoch = s.next_epoch;  // 0-based
    nn::set_training(tree, true);
    reset_peak_memory(device);
    Running run = s.skip ? s.partial : Running{};
    size_t done = s.skip;
    bool stop = false;
    const auto t0 = std::chrono::steady_clock::now();
    const double seconds_before = run.seconds;
    progress.begin_epoch(epoch + 1, config_.epochs_, train.batches, done);
    train.run(static_cast<uint64_t>(epoch), s.skip, [&](BatchRun& batch) {
      StepOutput out;
      if (graph && graph->run(batch, train, out, result.replayed_steps)) {
        optimizer_.step(tree, graph->grads);
      } else if (s.scaler) {  // f16: the loss scaled, the step skipped when a gradient overflowed
        out = batch.compute();
        const Gradients grads = backward_of(s.scaler->scale(out.loss));
        s.scaler->step(optimizer_, tree, optim::ParamGrads::from(tree, grads));
        s.scaler->update();
      } else {
        out = batch.compute();
        optimizer_.step(tree, backward_of(out.loss));
      }
      if (s.scheduler && s.every == ScheduleEvery::batch) s.scheduler->step();
      accumulate(run, out, config_.top_k_);
      run.seconds = seconds_before + seconds_since(t0);
      ++done;
      progress.batch(done, run, optimizer_.lr(0));
      // A Ctrl-C reaches the ranks at different batches: they stop together at the next one.
      stop = parallel ? dist::all_reduce(
                            full(Shape{}, Scalar(g_stop ? 1.0 : 0.0), DType::f64, Device::cpu()),
                            dist::ReduceOp::max)
                                .item<double>() > 0
                      : g_stop != 0;
      return !stop;
    });
    run.seconds = seconds_before + seconds_since(t0);

    run.sync();  // the epoch's one host read of its sums (besides the log lines)
    if (parallel) run = every_rank(run);
    if (stop && done < train.batches) {  // Ctrl-C mid-epoch: save where we are
      s.skip = done;
      s.partial = run;
      if (parallel && !lead) {  // the sums are every rank's: rank 0 carries them on
        s.partial = {};
        s.partial.seconds = run.seconds;
      }
      if (files) {
        const std::string path =
            (fs::path(ckpt_dir) / checkpoint_name(epoch, static_cast<int64_t>(done))).string();
        if (lead) save_checkpoint(path);
        s.last_checkpoint = path;
      }
      progress.note("interrupted in epoch " + std::to_string(epoch + 1) + " after batch " +
                    std::to_string(done) +
                    (files ? "; checkpoint saved to " + s.last_checkpoint : std::string()));
      result.interrupted = true;
      break;
    }

    EpochMetrics m;
    m.epoch = epoch + 1;
    m.train_loss = run.loss();
    m.train_accuracy = run.accuracy();
    m.train_top_k = run.top_k_accuracy();
    m.items_per_s = run.seconds > 0 ? static_cast<double>(run.items) / run.seconds : 0;
    m.valid_loss = m.valid_accuracy = m.valid_top_k = NAN;
    if (valid) {
      const EpochMetrics v = evaluate_impl(*valid);
      m.valid_loss = v.valid_loss;
      m.valid_accuracy = v.valid_accuracy;
      m.valid_top_k = v.valid_top_k;
    }
    m.seconds = seconds_before + seconds_since(t0);
    m.lr = optimizer_.lr(0);
    m.peak_memory_mb = static_cast<double>(memory_stats(device).peak) / 1e6;

    // Rank 0's value: some metrics are each rank's own (items_per_s, seconds, peak memory), and
    // every rank must make the same early-stopping and schedule decisions.
    const double value = parallel ? from_rank0(m.get(monitor)) : m.get(monitor);
    if (s.scheduler && s.every == ScheduleEvery::epoch) s.scheduler->step();
    if (s.scheduler && s.every == ScheduleEvery::epoch_on_metric) s.scheduler->step(value);
    const bool better =
        !s.best || (config_.goal_ == Goal::minimize ? value < *s.best - config_.min_delta_
                                                    : value > *s.best + config_.min_delta_);
    if (better) {
      s.best = value;
      s.best_epoch = m.epoch;
      s.bad_epochs = 0;
    } else {
      ++s.bad_epochs;
    }
    s.history.push_back(m);
    s.next_epoch = epoch + 1;
    s.skip = 0;
    s.partial = {};
    if (files) {
      const std::string path = (fs::path(ckpt_dir) / checkpoint_name(epoch + 1, 0)).string();
      s.last_checkpoint = path;
      if (lead) {
        save_checkpoint(path);
        prune_checkpoints(ckpt_dir, config_.keep_last_,
                          config_.keep_best_ && s.best_epoch > 0 ? s.best_epoch : -1);
      }
    }
    write_files();
    progress.end_epoch(m);
    if (config_.patience_ > 0 && s.bad_epochs >= config_.patience_) {
      progress.note("early stopping: " + monitor + " has not improved for " +
                    std::to_string(s.bad_epochs) + " epochs (best " + fmt(*s.best) + " in epoch " +
                    std::to_string(s.best_epoch) + ")");
      result.early_stopped = true;
      break;
    }
    if (stop) {
      progress.note("interrupted after epoch " + std::to_string(epoch + 1) +
                    (files ? "; checkpoint saved to " + s.last_checkpoint : std::string()));
      result.interrupted = true;
      break;
    }
  }
  result.history = s.history;
  result.epochs_done = s.next_epoch;
  if (s.best_epoch > 0) result.best_epoch = s.best_epoch;
  result.checkpoint = s.last_checkpoint;
  return result;
}

}  // namespace ember::train
