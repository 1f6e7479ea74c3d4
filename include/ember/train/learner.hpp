// The Learner: fits a model with an optimizer over epochs of a DataLoader (Burn's Learner,
// PyTorch Lightning's Trainer), with metrics, progress, checkpoints, exact resume, early stopping
// and a clean stop on Ctrl-C.
//
//   models::FashionCnn model(dev);
//   train::Learner learner(model, optim::AdamConfig().lr(1e-3).init(),
//                          train::LearnerConfig().epochs(10).out_dir("runs/fmnist").resume());
//   train::FitResult r = learner.fit(train_loader, test_loader);  // classification by default
//
// The template below only flattens the model and wraps the loaders; the loop, metrics, files and
// checkpoints are compiled once in src/train (LearnerCore). docs/TRAINING.md has the design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/dataloader.hpp"
#include "ember/dist/ddp.hpp"
#include "ember/nn/losses.hpp"
#include "ember/nn/module.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/optim/scheduler.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/train/metrics.hpp"

namespace ember::train {

/// What a step computes for one batch. The Learner calls backward() on `loss` when training
/// (validation runs under no_grad with the model in eval mode).
struct StepOutput {
  Tensor<0> loss;                         // the batch's mean loss
  std::optional<Tensor<2>> logits;        // [N, C] scores: accuracy and top-k when given
  std::optional<Tensor<1, Int>> targets;  // [N] class indices, with logits
  int64_t items = 0;                      // items in the batch; 0: logits' rows, else 1
};

/// The default step: classification of batches with `images` and `labels` (data::ImageBatch):
/// logits = model(images), loss = cross_entropy(logits, labels).
struct ClassificationStep {
  template <class M, class B>
  StepOutput operator()(M& model, const B& batch) const {
    Tensor<2> logits = model(batch.images);
    Tensor<0> loss = nn::cross_entropy(logits, batch.labels);
    return {loss, logits, batch.labels, logits.dims()[0]};
  }
};

enum class Goal { minimize, maximize };
enum class Progress { automatic, bar, lines, none };
/// When the Learner steps a schedule: after every batch, after every epoch, or after every epoch
/// with the monitored metric (ReduceLROnPlateau).
enum class ScheduleEvery { batch, epoch, epoch_on_metric };

/// Options of a Learner (chained setters).
struct LearnerConfig {
  int64_t epochs_ = 1;
  std::string out_dir_;     // checkpoints/, metrics.csv, curves.svg; "" writes no files
  bool resume_ = false;     // continue from the newest checkpoint in out_dir/checkpoints
  bool overwrite_ = false;  // a fresh run deletes the checkpoints of an earlier run in out_dir
  int64_t keep_last_ = 3;   // end-of-epoch checkpoints kept (0: all)
  bool keep_best_ = true;   // also keep the checkpoint of the best monitored epoch
  std::string monitor_ = "valid_loss";  // for keep-best, early stopping and plateau schedules
  Goal goal_ = Goal::minimize;
  int64_t patience_ = 0;  // early stopping after this many epochs without improvement (0: off)
  double min_delta_ = 0;  // improvements smaller than this do not count
  int64_t top_k_ = 5;
  Progress progress_ = Progress::automatic;  // a bar on a terminal, plain lines otherwise
  int64_t log_every_ = 0;                    // plain lines: every n batches (0: ten per epoch)
  bool catch_sigint_ = true;                 // Ctrl-C saves a checkpoint and returns from fit()
  std::string title_ = "training";           // of the curves
  DType precision_ = DType::f32;             // bf16/f16: steps run under autocast
  bool graph_ = false;                       // replay captured training steps (DeviceGraph)
  std::optional<dist::DdpConfig> ddp_;       // data-parallel over dist::world_size() processes

  LearnerConfig& epochs(int64_t n) { return set(epochs_, n); }
  LearnerConfig& out_dir(std::string dir) { return set(out_dir_, std::move(dir)); }
  LearnerConfig& resume(bool on = true) { return set(resume_, on); }
  /// Without resume(), fit() refuses an out_dir whose checkpoints/ holds checkpoints (of an
  /// earlier run: pruning and a later resume would mix them with this run's); overwrite()
  /// deletes them first instead.
  LearnerConfig& overwrite(bool on = true) { return set(overwrite_, on); }
  LearnerConfig& keep_last(int64_t n) { return set(keep_last_, n); }
  LearnerConfig& keep_best(bool on = true) { return set(keep_best_, on); }
  /// The metric (a CSV column: "valid_loss", "valid_accuracy", ...) and whether lower or higher
  /// is better. Without a validation loader, valid_* falls back to train_*.
  LearnerConfig& monitor(std::string metric, Goal goal = Goal::minimize) {
    monitor_ = std::move(metric);
    goal_ = goal;
    return *this;
  }
  LearnerConfig& early_stopping(int64_t patience, double min_delta = 0) {
    patience_ = patience;
    min_delta_ = min_delta;
    return *this;
  }
  LearnerConfig& top_k(int64_t k) { return set(top_k_, k); }
  LearnerConfig& progress(Progress p) { return set(progress_, p); }
  LearnerConfig& log_every(int64_t batches) { return set(log_every_, batches); }
  LearnerConfig& catch_sigint(bool on = true) { return set(catch_sigint_, on); }
  LearnerConfig& title(std::string t) { return set(title_, std::move(t)); }
  /// f32 (the default), or mixed precision: each step's forward and loss under autocast to bf16
  /// or f16 with float32 master weights; f16 also scales the loss (optim::GradScaler, its state
  /// saved in checkpoints) and skips steps whose gradients overflow.
  LearnerConfig& precision(DType dtype) { return set(precision_, dtype); }
  /// Graph replay (PyTorch's CUDA graphs, torch.compile's "reduce-overhead"): the forward, loss
  /// and backward of a training step are captured once in a DeviceGraph and replayed for every
  /// later batch of the same shapes, whose tensors are copied into the captured inputs. The
  /// first batch runs eagerly (the warm-up), the second is captured; a batch of other shapes (a
  /// short last one) runs eagerly. Needs an optimizer that updates in place (fused(true)), a
  /// batch type with for_each_tensor (data::ImageBatch has it) and precision f32 or bf16 (f16's
  /// loss scaling is not captured). Where a capture is refused (random numbers: dropout), the
  /// fit goes on eagerly with a note. On backends that cannot record, a replay runs the step
  /// again: the same results, no speed-up.
  LearnerConfig& graph(bool on = true) { return set(graph_, on); }
  /// Data-parallel training when dist::init() joined several processes (mpirun -np N): the
  /// model is wrapped in a dist::DistributedDataParallel (rank 0's parameters everywhere,
  /// gradients averaged in buckets during backward); epoch metrics are summed over the ranks, so
  /// every rank makes the same early-stopping, best-epoch and schedule decisions; only rank 0
  /// prints and writes files; a Ctrl-C (or mpirun's SIGTERM) on any rank stops all after the
  /// same batch. Give each rank its share of the data with
  /// DataLoaderConfig::shard(dist::rank(), dist::world_size()).
  /// A checkpoint records the world size and resumes only with the same. In one process this
  /// changes nothing.
  LearnerConfig& data_parallel(dist::DdpConfig ddp = {}) { return set(ddp_, std::optional(ddp)); }

 private:
  template <class F, class V>
  LearnerConfig& set(F& field, V&& v) {
    field = std::forward<V>(v);
    return *this;
  }
};

/// How fit() ended.
struct FitResult {
  std::vector<EpochMetrics> history;  // every epoch so far, resumed ones included
  int64_t epochs_done = 0;            // completed epochs
  bool interrupted = false;           // stopped by Ctrl-C (or request_stop()): checkpoint saved
  bool early_stopped = false;
  std::optional<int64_t> best_epoch;  // by the monitored metric
  std::string checkpoint;             // the last checkpoint written ("" when none)
  int64_t replayed_steps = 0;         // training steps of this fit() replayed (config().graph())
};

/// Asks a running fit() to save a checkpoint and return after the current batch: what the SIGINT
/// handler does (async-signal-safe).
void request_stop();

/// What BatchRun::stage did with a batch.
enum class Staged {
  other_shapes,  // its tensors differ from the static inputs'; nothing copied
  copied,        // copied into the static inputs
  new_inputs     // its copies became the static inputs (the first batch, or renew)
};

/// One batch of an epoch as the loop sees it (the template side knows its type).
struct BatchRun {
  /// step(model, batch) under the Learner's precision.
  std::function<StepOutput()> compute;
  /// Graph replay: copies the batch's tensors into the static inputs when they match them in
  /// number, shape, dtype and device; otherwise, with `renew` (nothing captured yet) or when
  /// there are none, makes copies of them the static inputs. Empty when the batch type has no
  /// for_each_tensor.
  std::function<Staged(bool renew)> stage;
};

/// A pass over one epoch of a loader, type-erased: run(epoch, skip, fn) calls fn with each batch,
/// after skipping the first `skip` batches, until fn returns false.
struct EpochSource {
  std::function<void(uint64_t epoch, size_t skip, const std::function<bool(BatchRun&)>& fn)> run;
  size_t batches = 0;
  /// Graph replay: the step on the static inputs (what the last stage() copied in).
  std::function<StepOutput()> static_step;
};

namespace detail {
/// A visitor that does nothing: what the Learner asks for_each_tensor to take (a named type, as
/// lambdas in unevaluated operands are newer than some compilers we support).
struct NoTensorVisit {
  template <class T>
  void operator()(T&) const {}  // non-const: the Learner writes through the references
};
/// The tensors for_each_tensor(batch, f) visits, as DynTensor handles.
template <class B>
std::vector<DynTensor> batch_tensors(B& batch) {
  std::vector<DynTensor> out;
  for_each_tensor(batch, [&out](const auto& t) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(t)>, DynTensor>) {
      out.push_back(t);
    } else {
      out.push_back(t.dyn());
    }
  });
  return out;
}
/// Makes every tensor of `batch` a copy of its own (the static inputs must not share storage
/// with a data set a batch may be a view of).
template <class B>
void own_tensors(B& batch) {
  for_each_tensor(batch, [](auto& t) {
    using T = std::remove_cvref_t<decltype(t)>;
    if constexpr (std::is_same_v<T, DynTensor>) {
      t = clone(detach(t));
    } else {
      t = T(clone(detach(t.dyn())));
    }
  });
}
/// Copies src's tensors into dst's storage when they match in number, shape, dtype and device;
/// false (nothing copied) otherwise.
bool copy_batch(const std::vector<DynTensor>& dst, const std::vector<DynTensor>& src);
}  // namespace detail

/// The non-template Learner (src/train/learner.cpp): the loop, metrics, progress, files.
class LearnerCore {
 public:
  ~LearnerCore();
  LearnerCore(const LearnerCore&) = delete;
  LearnerCore& operator=(const LearnerCore&) = delete;

  /// A schedule stepped by the Learner and saved in its checkpoints. Make it on the optimizer
  /// before handing the optimizer over (a schedule shares its optimizer's state).
  void set_scheduler(optim::Scheduler scheduler, ScheduleEvery every = ScheduleEvery::epoch);
  optim::Optimizer& optimizer() { return optimizer_; }
  const LearnerConfig& config() const { return config_; }

  /// Loads a checkpoint (model, optimizer, schedule, RNG, history, position): fit() continues
  /// from it. config().resume() does this with the newest checkpoint in out_dir.
  void load_checkpoint(const std::string& path);
  /// Writes a checkpoint of the current state (atomically) to `path`.
  void save_checkpoint(const std::string& path) const;

 protected:
  LearnerCore(std::function<nn::ModuleTree()> tree, optim::Optimizer optimizer,
              LearnerConfig config);
  FitResult fit_impl(const EpochSource& train, const EpochSource* valid);
  EpochMetrics evaluate_impl(const EpochSource& source);
  /// Autocast for one step, as config().precision() asks (off for f32).
  AutocastGuard step_precision() const;
  /// config().data_parallel() with several processes.
  bool data_parallel() const;

 private:
  struct State;
  std::function<nn::ModuleTree()> tree_;
  optim::Optimizer optimizer_;
  LearnerConfig config_;
  std::unique_ptr<State> state_;
};

template <nn::detail::Module M>
class Learner : public LearnerCore {
 public:
  /// Keeps a reference to `model`: it must outlive the Learner and stay where it is.
  Learner(M& model, optim::Optimizer optimizer, LearnerConfig config = {})
      : LearnerCore([&model] { return nn::module_tree(model); }, std::move(optimizer),
                    std::move(config)),
        model_(model) {}

  /// Trains for config().epochs() epochs (from where a resumed run stopped), validating after
  /// each. `step(model, batch)` returns a StepOutput; the default classifies ImageBatches.
  template <class T, class B, class Step = ClassificationStep>
  FitResult fit(const data::DataLoader<T, B>& train, const data::DataLoader<T, B>& valid,
                Step step = {}) {
    const EpochSource t = source(train, step), v = source(valid, step);
    return fit_impl(t, &v);
  }
  /// Without validation.
  template <class T, class B, class Step = ClassificationStep>
  requires std::is_invocable_r_v<StepOutput, Step&, M&, B&> FitResult
  fit(const data::DataLoader<T, B>& train, Step step = {}) {
    const EpochSource t = source(train, step);
    return fit_impl(t, nullptr);
  }
  /// One validation pass (eval mode, no_grad): the valid_* fields of the result are set.
  template <class T, class B, class Step = ClassificationStep>
  EpochMetrics evaluate(const data::DataLoader<T, B>& loader, Step step = {}) {
    return evaluate_impl(source(loader, step));
  }

 private:
  template <class T, class B, class Step>
  EpochSource source(const data::DataLoader<T, B>& loader, Step step_in) {
    EpochSource s;
    s.batches = loader.num_batches();
    auto step = std::make_shared<Step>(std::move(step_in));
    auto statics = std::make_shared<std::optional<B>>();  // graph replay's static inputs
    s.run = [this, &loader, step, statics](uint64_t epoch, size_t skip,
                                           const std::function<bool(BatchRun&)>& fn) {
      size_t k = 0;
      for (B& batch : loader.epoch(epoch)) {
        if (k++ < skip) continue;  // a resumed epoch: the loader's order is the epoch's
        BatchRun r;
        r.compute = [&] {
          const AutocastGuard amp = step_precision();
          return (*step)(model_, batch);
        };
        if constexpr (requires { for_each_tensor(batch, detail::NoTensorVisit{}); }) {
          r.stage = [&](bool renew) {
            if (*statics && detail::copy_batch(detail::batch_tensors(**statics),
                                               detail::batch_tensors(batch))) {
              return Staged::copied;
            }
            if (*statics && !renew) return Staged::other_shapes;
            statics->emplace(batch);
            detail::own_tensors(**statics);
            return Staged::new_inputs;
          };
        }
        if (!fn(r)) break;
      }
    };
    s.static_step = [this, step, statics] {
      const AutocastGuard amp = step_precision();
      return (*step)(model_, **statics);
    };
    return s;
  }

  M& model_;
};

}  // namespace ember::train
