// Issue 17's reference models at full size on cuda:0, one workload per call; bench/cuda_models.py
// runs the same workloads in PyTorch with the same arguments and prints the same line, and
// scripts/cuda_models_bench.sh runs the pairs.
//
//   bench_cuda_models gpt2|resnet50|attention|minilm|probe [--batch 16] [--seq 1024] [--steps 10]
//                     [--precision bf16] [--graph 1] [--profile 1]
//
// attention: causal SDPA forward + backward at [batch, 12, seq, 64]; minilm: the all-MiniLM-L6-v2
// shaped encoder's inference (use --seq 128 and --batch 1 or 32).
// gpt2: GPT-2 small (12 layers, d 768, 12 heads, vocab 50304, no dropout) training steps:
// forward and cross-entropy under autocast, backward, AdamW (lr 6e-4, weight decay 0.1). Prints
// one JSON line: the median step time over --steps timed steps after 3 untimed ones (each step
// ends with a synchronisation, as PyTorch's loop reading nothing would not: the median of whole
// steps), tokens per second, model FLOPs utilisation against 989 TFLOP/s (the H200's dense bf16
// rate) and the allocator's peak. AdamW is fused (in place, multi-tensor), as PyTorch's side.
// --graph 1 (gpt2, minilm): after the untimed steps, the forward + backward (gpt2) or the
// forward (minilm) is captured once as a DeviceGraph and replayed; the optimizer step runs
// eagerly between replays (bf16 and f32 only: f16's loss scale is a captured constant).
// --profile 1: after the timing, --steps more steps under CUPTI, and the device time per step by
// kernel on stderr, the top 30 (--profile N: the top N; bench/kernel_profile.hpp;
// bench/cuda_models.py --profile prints PyTorch's).
// resnet50: ResNet-50 (torchvision's structure) training steps in training mode (batch norm on
// batch statistics) on random images [batch, 3, 224, 224] (--batch defaults to 128 here) and
// random labels of 1000 classes: forward and cross-entropy under autocast, backward, SGD
// (lr 0.1, momentum 0.9, weight decay 1e-4). The same JSON line with images per second.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include <ember/models/bert.hpp>
#include <ember/models/gpt2.hpp>
#include <ember/models/resnet.hpp>
#include <ember/optim/optim.hpp>

#if EMBER_BENCH_CUPTI
#include "kernel_profile.hpp"
#endif

namespace {

using namespace ember;

struct Args {
  std::string workload;
  int64_t batch = 16, seq = 1024, steps = 10;
  std::string precision = "bf16";
  bool graph = false;
  int profile = 0;  // the kernels to list (1: the top 30)
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: bench_cuda_models gpt2|resnet50|attention|minilm|probe [--batch N] "
        "[--seq N] [--steps N] [--precision bf16|f16|f32] [--graph 0|1] [--profile 0|1|N]\n");
    std::exit(2);
  }
  a.workload = argv[1];
  if (a.workload == "resnet50") a.batch = 128;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--seq")
      a.seq = std::stoll(v);
    else if (k == "--steps")
      a.steps = std::stoll(v);
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--graph")
      a.graph = v != "0";
    else if (k == "--profile")
      a.profile = std::stoi(v) == 1 ? 30 : std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// --profile 1: the device time by kernel over a.steps more calls of f (stderr).
void profile(const Args& a, const Device& dev, const std::function<void()>& f) {
  if (!a.profile) return;
#if EMBER_BENCH_CUPTI
  synchronize(dev);
  bench::kernel_profile_start();
  for (int64_t i = 0; i < a.steps; ++i) f();
  synchronize(dev);
  bench::kernel_profile_stop(stderr, a.profile, static_cast<int>(a.steps));
#else
  (void)dev;
  (void)f;
  std::fprintf(stderr, "--profile: this build has no CUPTI\n");
#endif
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A training step's times: the median of `steps` whole steps after 3 untimed ones (each ending
// with a synchronisation), then where a step's time goes: forward + loss, backward and optimizer,
// each timed to a synchronisation (printed to stderr; the medians of as many steps). The
// allocator's peak is reset after the untimed steps.
struct TrainTimes {
  double ms = 0, loss = 0;
};

template <class M>
TrainTimes time_training(const char* name, const Device& dev, const Args& a, M& model,
                         optim::Optimizer& opt, optim::GradScaler& scaler,
                         const std::function<Tensor<0>()>& forward_loss) {
  const int64_t steps = a.steps;
  // With --graph, loss and grads are the captured graph's outputs, rewritten by each replay.
  Tensor<0> loss_out;
  Gradients grads;
  auto forward_backward = [&] {
    loss_out = forward_loss();
    grads = scaler.scale(loss_out).backward();
  };
  DeviceGraph captured(dev);
  auto step = [&] {
    if (captured.captured()) {
      captured.replay();
    } else {
      forward_backward();
    }
    scaler.step(opt, model, grads);
    scaler.update();
    return loss_out;
  };
  TrainTimes t;
  for (int i = 0; i < 3; ++i) {
    const Tensor<0> loss = step();
    t.loss = loss.item<double>();
  }
  if (a.graph) {
    EMBER_CHECK(!scaler.enabled(), "--graph with f16: the loss scale would be captured");
    captured.capture(forward_backward);
  }
  synchronize(dev);
  reset_peak_memory(dev);
  std::vector<double> ms;
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor<0> loss = step();
    synchronize(dev);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (i + 1 == steps) t.loss = loss.item<double>();
  }
  t.ms = median(ms);
  std::vector<double> fwd, bwd, upd;
  for (int64_t i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto lap = [&](std::vector<double>& into) {
      synchronize(dev);
      const auto t1 = std::chrono::steady_clock::now();
      into.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      t0 = t1;
    };
    if (captured.captured()) {
      captured.replay();
      lap(bwd);
    } else {
      loss_out = forward_loss();  // the forward and the backward timed apart
      lap(fwd);
      grads = scaler.scale(loss_out).backward();
      lap(bwd);
    }
    scaler.step(opt, model, grads);
    scaler.update();
    lap(upd);
  }
  if (captured.captured()) {
    std::fprintf(stderr, "ember %s: forward+backward (graph replay) %.2f ms, optimizer %.2f ms\n",
                 name, median(bwd), median(upd));
  } else {
    std::fprintf(stderr, "ember %s: forward+loss %.2f ms, backward %.2f ms, optimizer %.2f ms\n",
                 name, median(fwd), median(bwd), median(upd));
  }
  profile(a, dev, [&] { (void)step(); });
  return t;
}

double peak_gib(const Device& dev) {
  return static_cast<double>(memory_stats(dev).peak) / (1024.0 * 1024.0 * 1024.0);
}

int gpt2(const Args& a) {
  const Device dev = Device::cuda(0);
  models::Gpt2Config cfg;
  cfg.vocab_size = 50304;
  cfg.n_positions = a.seq;
  cfg.dropout = 0.0;
  manual_seed(0);
  models::Gpt2 model(cfg, dev);
  auto opt = optim::AdamWConfig().lr(6e-4).weight_decay(0.1).fused(true).init();
  const auto ids =
      Tensor<2, Int>(randint(0, cfg.vocab_size, Shape{a.batch, a.seq}, DType::i64, dev));
  const auto targets =
      Tensor<1, Int>(randint(0, cfg.vocab_size, Shape{a.batch * a.seq}, DType::i64, dev));
  const bool amp = a.precision != "f32";
  const DType low = a.precision == "f16" ? DType::f16 : DType::bf16;
  optim::GradScaler scaler(optim::GradScalerConfig().enabled(a.precision == "f16"));
  const TrainTimes t = time_training("gpt2", dev, a, model, opt, scaler, [&] {
    auto guard = autocast(dev, low, amp);
    const Tensor<3> logits = model(ids);
    return nn::cross_entropy(logits.reshape({a.batch * a.seq, cfg.vocab_size}), targets);
  });
  const double m = t.ms;
  const double tokens = static_cast<double>(a.batch * a.seq);
  // 6 N per token for the weights (N without the position table) plus attention's
  // 6 * 2 * layers * seq * d (causal: half of the full 12 L T d), as nanoGPT's estimate.
  const double n = static_cast<double>(model.num_params() - cfg.n_positions * cfg.n_embd);
  const double flops =
      tokens * (6.0 * n + 6.0 * static_cast<double>(cfg.n_layer * a.seq * cfg.n_embd));
  std::printf(
      "{\"framework\": \"ember\", \"workload\": \"gpt2_train\", \"batch\": %lld, \"seq\": %lld, "
      "\"precision\": \"%s\", \"graph\": %s, \"ms\": %.3f, \"tokens_per_s\": %.0f, "
      "\"mfu\": %.4f, \"peak_gib\": %.3f, \"loss\": %.4f}\n",
      static_cast<long long>(a.batch), static_cast<long long>(a.seq), a.precision.c_str(),
      a.graph ? "true" : "false", m, tokens / (m / 1e3), flops / (m / 1e3) / 989e12, peak_gib(dev),
      t.loss);
  return 0;
}

// ResNet-50 training (see the top of the file): images [batch, 3, 224, 224] and labels made once
// on the device; SGD with momentum 0.9, lr 0.1, weight decay 1e-4, as torchvision's recipe, fused
// (multi-tensor, as PyTorch's default foreach SGD on CUDA).
int resnet50(const Args& a) {
  const Device dev = Device::cuda(0);
  manual_seed(0);
  models::ResNet model(models::ResNetConfig::resnet50(), dev);
  model.train();
  auto opt = optim::SgdConfig().lr(0.1).momentum(0.9).weight_decay(1e-4).fused(true).init();
  const auto images = Tensor<4>(randn(Shape{a.batch, 3, 224, 224}, DType::f32, dev));
  const auto labels = Tensor<1, Int>(randint(0, 1000, Shape{a.batch}, DType::i64, dev));
  const bool amp = a.precision != "f32";
  const DType low = a.precision == "f16" ? DType::f16 : DType::bf16;
  optim::GradScaler scaler(optim::GradScalerConfig().enabled(a.precision == "f16"));
  const TrainTimes t = time_training("resnet50", dev, a, model, opt, scaler, [&] {
    auto guard = autocast(dev, low, amp);
    return nn::cross_entropy(model(images), labels);
  });
  std::printf(
      "{\"framework\": \"ember\", \"workload\": \"resnet50_train\", \"batch\": %lld, "
      "\"precision\": \"%s\", \"ms\": %.3f, \"images_per_s\": %.1f, \"peak_gib\": %.3f, "
      "\"loss\": %.4f}\n",
      static_cast<long long>(a.batch), a.precision.c_str(), t.ms,
      static_cast<double>(a.batch) / (t.ms / 1e3), peak_gib(dev), t.loss);
  return 0;
}

// Where GPT-2's step goes, piece by piece at its shapes (stderr; forward and forward + backward
// of each, under bf16 autocast, median of 5 after 2 untimed calls, each ending with a wait).
int probe(const Args& a) {
  const Device dev = Device::cuda(0);
  const int64_t b = a.batch, t = a.seq, c = 768, h = 12, v = 50304;
  manual_seed(0);
  auto leaf = [&](Shape s, DType dt = DType::f32) {
    return require_grad(mul(randn(std::move(s), dt, dev), 0.02));
  };
  auto time_ms = [&](const char* name, const std::function<DynTensor()>& f) {
    auto run = [&](bool grad) {
      std::vector<double> ms;
      for (int i = 0; i < 7; ++i) {
        synchronize(dev);
        const auto t0 = std::chrono::steady_clock::now();
        DynTensor y;
        {
          auto guard = autocast(dev, DType::bf16);
          y = f();
        }
        if (grad) (void)backward(sum(cast(y, DType::f32)));
        synchronize(dev);
        if (i >= 2) {
          ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
      }
      return median(ms);
    };
    const double fwd = run(false), both = run(true);
    std::fprintf(stderr, "probe %-28s forward %8.3f ms   forward+backward %8.3f ms\n", name, fwd,
                 both);
  };
  const DynTensor x = leaf({b, t, c});
  const DynTensor w_qkv = leaf({c, 3 * c}), w_fc = leaf({c, 4 * c}), bias = leaf({3 * c});
  const DynTensor qkv16 = leaf({b, h, t, 64}, DType::bf16);
  const DynTensor x16 = leaf({b, t, c}, DType::bf16), h16 = leaf({b, t, 4 * c}, DType::bf16);
  const DynTensor wte = leaf({v, c});
  const auto targets = randint(0, v, Shape{b * t}, DType::i64, dev);
  time_ms("matmul x@W_qkv", [&] { return matmul(x, w_qkv); });
  time_ms("matmul x@W_qkv + bias", [&] { return add(matmul(x, w_qkv), bias); });
  time_ms("matmul x@W_fc (bf16 in)", [&] { return matmul(x16, cast(w_fc, DType::bf16)); });
  time_ms("sdpa causal bf16",
          [&] { return nn::scaled_dot_product_attention(qkv16, qkv16, qkv16, {}, 0.0, true); });
  time_ms("layer_norm bf16 in", [&] { return nn::layer_norm(x16, {c}); });
  time_ms("layer_norm f32 in", [&] { return nn::layer_norm(x, {c}); });
  time_ms("gelu tanh bf16 [B,T,4C]", [&] { return gelu(h16, true); });
  time_ms("add bf16 + f32 [B,T,C]", [&] { return add(x16, x); });
  time_ms("split+heads+merge", [&] {
    const auto parts = split(matmul(x, w_qkv), c, 2);
    const DynTensor q = transpose(reshape(parts[0], Shape{b, t, h, 64}), 1, 2);
    return reshape(transpose(q, 1, 2), Shape{b, t, c});
  });
  time_ms("softmax bf16 [B,H,T,T]",
          [&] { return softmax(mul(matmul(qkv16, transpose(qkv16, -2, -1)), 0.125), -1); });
  time_ms("head matmul [BT,C]x[C,V]", [&] {
    return matmul(reshape(x16, Shape{b * t, c}), transpose(wte, 0, 1));
  });
  time_ms("head + cross_entropy", [&] {
    return nn::cross_entropy(matmul(reshape(x16, Shape{b * t, c}), transpose(wte, 0, 1)), targets);
  });
  time_ms("embedding", [&] {
    return nn::embedding(randint(0, v, Shape{b, t}, DType::i64, dev), wte);
  });
  models::Gpt2Config cfg;
  cfg.vocab_size = v;
  cfg.n_positions = t;
  cfg.dropout = 0.0;
  cfg.n_layer = 1;
  models::Gpt2 one(cfg, dev);
  time_ms("one block", [&] { return one.h[0].forward(x); });
  return 0;
}

// Times f (each call ending with a wait) as the median of `steps` calls after 3 untimed ones.
double median_ms(const Device& dev, int64_t steps, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  synchronize(dev);
  std::vector<double> ms;
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    synchronize(dev);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

// Attention alone at GPT-2's shape: q, k, v [batch, 12, seq, 64] bf16, causal, forward and
// backward (with a given output gradient). FLOPs: 4 B H T^2 d forward, 2.5x that backward,
// halved for the causal mask.
int attention(const Args& a) {
  const Device dev = Device::cuda(0);
  const int64_t b = a.batch, h = 12, t = a.seq, d = 64;
  manual_seed(0);
  const DType dt = a.precision == "f16" ? DType::f16 : DType::bf16;
  auto make = [&] { return require_grad(randn(Shape{b, h, t, d}, dt, dev)); };
  const DynTensor q = make(), k = make(), v = make();
  const DynTensor g = randn(Shape{b, h, t, d}, dt, dev);
  auto call = [&] {
    const DynTensor out = nn::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    (void)backward(out, g);
  };
  const double ms = median_ms(dev, a.steps, call);
  profile(a, dev, call);
  const double flops = 3.5 * 4.0 * static_cast<double>(b * h * t * t * d) / 2.0;
  std::printf(
      "{\"framework\": \"ember\", \"workload\": \"attention\", \"batch\": %lld, "
      "\"seq\": %lld, \"precision\": \"%s\", \"ms\": %.3f, \"tflops\": %.1f}\n",
      static_cast<long long>(b), static_cast<long long>(t), dtype_name(dt).data(), ms,
      flops / (ms / 1e3) / 1e12);
  return 0;
}

// all-MiniLM-L6-v2's shape (6 layers, hidden 384, 12 heads) inference: eval, no_grad, random
// token ids [batch, seq], under autocast unless --precision f32.
int minilm(const Args& a) {
  const Device dev = Device::cuda(0);
  manual_seed(0);
  models::Bert model(models::BertConfig::minilm_l6(), dev);
  model.eval();
  const auto ids = Tensor<2, Int>(randint(0, 30522, Shape{a.batch, a.seq}, DType::i64, dev));
  const bool amp = a.precision != "f32";
  const DType low = a.precision == "f16" ? DType::f16 : DType::bf16;
  auto guard = no_grad();
  DynTensor out;  // with --graph, the captured forward's output, rewritten by each replay
  auto forward = [&] {
    auto cast_guard = autocast(dev, low, amp);
    out = model.forward(ids).last_hidden_state.dyn();
  };
  for (int i = 0; i < 3; ++i) forward();  // warm up (the graph captures a warm run)
  DeviceGraph captured(dev);
  if (a.graph) captured.capture(forward);
  auto call = [&] {
    if (a.graph) {
      captured.replay();
    } else {
      forward();
    }
  };
  const double ms = median_ms(dev, a.steps, call);
  profile(a, dev, call);
  std::printf(
      "{\"framework\": \"ember\", \"workload\": \"minilm\", \"batch\": %lld, "
      "\"seq\": %lld, \"precision\": \"%s\", \"graph\": %s, \"ms\": %.3f}\n",
      static_cast<long long>(a.batch), static_cast<long long>(a.seq), a.precision.c_str(),
      a.graph ? "true" : "false", ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (a.workload == "gpt2") return gpt2(a);
    if (a.workload == "resnet50") return resnet50(a);
    if (a.workload == "probe") return probe(a);
    if (a.workload == "attention") return attention(a);
    if (a.workload == "minilm") return minilm(a);
    std::fprintf(stderr, "unknown workload %s\n", a.workload.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_models: %s\n", e.what());
    return 1;
  }
}
