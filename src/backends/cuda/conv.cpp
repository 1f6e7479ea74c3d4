// Convolution through cuDNN's convolution API: forward, backward data (the transposed
// convolution) and backward filter, over 1 to 3 spatial dims (1-d as 2-d with a unit height) with
// stride, padding, dilation and groups. f32 stays off TF32 unless allow_tf32(), f64 computes in
// double, f16/bf16 keep 16-bit data and compute in f32. f32/f64 algorithms come from cuDNN's
// heuristics; 16-bit ones are timed once per geometry (below). The bias is broadcast into the
// output first and the convolution added onto it (beta = 1: one rounding, as the Cpu's); relu and
// the bias gradient are small kernels (conv_bias.cu). 16-bit 2-d convolutions go through cuDNN's
// graph API where it takes them (conv_graph.cpp), optionally on operands staged channels-last.
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "conv_graph.hpp"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "state.hpp"

namespace ember::cuda {

// conv_bias.cu
void conv_broadcast_bias(const RawTensor& bias, const RawTensor& out, const char* op);
void conv_relu(const RawTensor& out, const char* op);
void conv_bias_grad(const RawTensor& gy, const RawTensor& gb, const char* op);

namespace {

void check_cudnn(cudnnStatus_t status, const std::string& op) {
  if (status != CUDNN_STATUS_SUCCESS) EMBER_FAIL("[", op, "] cudnn: ", cudnnGetErrorString(status));
}

// "conv2d", "conv_transpose1d": the front end's names (src/core/backend.cpp's spatial_name).
std::string spatial_name(const char* kind, int spatial) {
  return std::string(kind) + std::to_string(spatial) + "d";
}

enum class Pass : int64_t { Forward, Data, Filter };

// The descriptors of one convolution: x [N, C, *in], w [O, C / groups, *k], y [N, O, *out].
struct Descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<int64_t> key;  // the geometry, for the algorithm cache

  Descs() = default;
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;
  ~Descs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

int to_int(int64_t v, const std::string& op) {
  if (v < 0 || v > INT_MAX) EMBER_FAIL("[", op, "] cudnn: sizes past 2^31 are not supported");
  return static_cast<int>(v);
}

// cuDNN's dims of an [A, B, *spatial] shape: 1-d gets a unit height.
std::vector<int> dims_of(const Shape& s, int spatial, const std::string& op) {
  std::vector<int> d = {to_int(s[0], op), to_int(s[1], op)};
  if (spatial == 1) d.push_back(1);
  for (int i = 0; i < spatial; ++i) d.push_back(to_int(s[2 + i], op));
  return d;
}

void set_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, const Shape& s, int spatial,
                const std::string& op) {
  const std::vector<int> d = dims_of(s, spatial, op);
  std::vector<int> strides(d.size());
  int64_t stride = 1;
  for (size_t i = d.size(); i-- > 0;) {
    strides[i] = to_int(stride, op);
    stride *= d[i];
  }
  (void)to_int(stride, op);  // the element count too: the legacy API indexes in 32 bits
  check_cudnn(
      cudnnSetTensorNdDescriptor(desc, type, static_cast<int>(d.size()), d.data(), strides.data()),
      op);
}

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return CUDNN_DATA_DOUBLE;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

// f32 without allow_tf32 is held to FMA kernels: cuDNN's default math lets it use TF32.
bool fma_only(DType dtype) { return dtype == DType::f32 && !allow_tf32(); }

void make_descs(Descs& d, const Shape& x, const Shape& w, const Shape& y, const ConvParams& p,
                DType dtype, const std::string& op) {
  const cudnnDataType_t type = data_type(dtype);
  const cudnnDataType_t compute = dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check_cudnn(cudnnCreateTensorDescriptor(&d.x), op);
  check_cudnn(cudnnCreateTensorDescriptor(&d.y), op);
  check_cudnn(cudnnCreateFilterDescriptor(&d.w), op);
  check_cudnn(cudnnCreateConvolutionDescriptor(&d.conv), op);
  set_tensor(d.x, type, x, p.spatial, op);
  set_tensor(d.y, type, y, p.spatial, op);
  const std::vector<int> wd = dims_of(w, p.spatial, op);
  check_cudnn(cudnnSetFilterNdDescriptor(d.w, type, CUDNN_TENSOR_NCHW, static_cast<int>(wd.size()),
                                         wd.data()),
              op);
  std::vector<int> pad, stride, dilation;
  if (p.spatial == 1) {
    pad.push_back(0);
    stride.push_back(1);
    dilation.push_back(1);
  }
  for (int i = 0; i < p.spatial; ++i) {
    pad.push_back(to_int(p.padding[i], op));
    stride.push_back(to_int(p.stride[i], op));
    dilation.push_back(to_int(p.dilation[i], op));
  }
  check_cudnn(cudnnSetConvolutionNdDescriptor(d.conv, static_cast<int>(pad.size()), pad.data(),
                                              stride.data(), dilation.data(),
                                              CUDNN_CROSS_CORRELATION, compute),
              op);
  check_cudnn(cudnnSetConvolutionGroupCount(d.conv, to_int(p.groups, op)), op);
  check_cudnn(
      cudnnSetConvolutionMathType(d.conv, fma_only(dtype) ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH),
      op);
  // Everything the algorithm choice depends on (the pass and the device are added by the caller).
  d.key = {static_cast<int64_t>(dtype), static_cast<int64_t>(fma_only(dtype)),
           static_cast<int64_t>(deterministic_algorithms()), p.spatial, p.groups};
  for (const Shape* s : {&x, &w, &y}) d.key.insert(d.key.end(), s->begin(), s->end());
  for (int i = 0; i < p.spatial; ++i) {
    d.key.insert(d.key.end(), {p.padding[i], p.stride[i], p.dilation[i]});
  }
}

struct Algo {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

std::mutex cache_mutex;
std::map<std::vector<int64_t>, Algo>& algo_cache() {
  static auto* cache = new std::map<std::vector<int64_t>, Algo>();  // never destroyed
  return *cache;
}

// Algorithms wanting more scratch are passed over (some FFT ones ask for gigabytes); the
// implicit-GEMM ones need little or none.
constexpr size_t kMaxWorkspace = size_t{1} << 30;

// The first of cuDNN's ranked algorithms that applies: its heuristics succeeded, it is
// deterministic under use_deterministic_algorithms, and its workspace is under kMaxWorkspace. f32
// held off TF32 prefers the algorithms ranked for FMA math, then runs the others under FMA math.
// Perf is one of cuDNN's *AlgoPerf_t structs. Null when none applies.
template <class Perf, class WorkspaceSize>
std::optional<Algo> pick(const Descs& d, const std::vector<Perf>& perf, int count, DType dtype,
                         const WorkspaceSize& workspace_size, const std::string& op) {
  const bool fma = fma_only(dtype);
  for (int round = 0; round < (fma ? 2 : 1); ++round) {
    for (int i = 0; i < count; ++i) {
      const Perf& r = perf[static_cast<size_t>(i)];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      if (fma && round == 0 && r.mathType != CUDNN_FMA_MATH) continue;
      if (deterministic_algorithms() && r.determinism != CUDNN_DETERMINISTIC) continue;
      Algo a{static_cast<int>(r.algo), fma ? CUDNN_FMA_MATH : r.mathType, 0};
      check_cudnn(cudnnSetConvolutionMathType(d.conv, a.math), op);
      if (workspace_size(r.algo, &a.workspace) != CUDNN_STATUS_SUCCESS) continue;
      if (a.workspace > kMaxWorkspace) continue;
      return a;
    }
  }
  return std::nullopt;
}

// 16-bit convolutions are timed once per geometry (cudnnFind*, as torch.backends.cudnn.benchmark)
// rather than ranked by cuDNN's v7 heuristics, whose first bf16 choices for NCHW ran ResNet-50's
// backward 30x slower than the best on the H200 (912 of 1,017 ms in one direct dgrad kernel).
bool timed_choice(DType dtype) { return dtype == DType::bf16 || dtype == DType::f16; }

// The timed choice where it applies and finds one, else the heuristics' first that applies.
// *timing_failed: the search itself failed (out of memory, say), so the choice is not kept.
template <class Perf, class Find, class Get, class WorkspaceSize>
Algo choose(const Descs& d, int max, DType dtype, const Find& find, const Get& get,
            const WorkspaceSize& workspace_size, const std::string& op, bool* timing_failed) {
  std::vector<Perf> perf(static_cast<size_t>(max));
  int count = 0;
  std::optional<Algo> a;
  if (timed_choice(dtype)) {
    if (find(max, &count, perf.data()) == CUDNN_STATUS_SUCCESS) {
      a = pick(d, perf, count, dtype, workspace_size, op);
    } else {
      (void)cudaGetLastError();  // not to be reported by the next kernel's launch check
      *timing_failed = true;
    }
  }
  if (!a) {
    check_cudnn(get(max, &count, perf.data()), op);
    a = pick(d, perf, count, dtype, workspace_size, op);
  }
  if (!a) {
    EMBER_FAIL("[", op, "] cudnn: no convolution algorithm applies to this geometry and dtype",
               deterministic_algorithms() ? " (deterministic algorithms only)" : "");
  }
  check_cudnn(cudnnSetConvolutionMathType(d.conv, a->math), op);
  return *a;
}

// The cached algorithm of `pass` for these descriptors, chosen on first use; sets the math type
// on d.conv.
Algo algo_for(Pass pass, Descs& d, cudnnHandle_t h, DType dtype, int device,
              const std::string& op) {
  std::vector<int64_t> key = d.key;
  key.push_back(static_cast<int64_t>(pass));
  key.push_back(device);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto it = algo_cache().find(key);
    if (it != algo_cache().end()) {
      check_cudnn(cudnnSetConvolutionMathType(d.conv, it->second.math), op);
      return it->second;
    }
  }
  // cudnnFind runs and waits for kernels: not something a graph can record.
  device_state(device).check_not_capturing(
      op.c_str(),
      "a convolution's first use of a shape chooses its algorithm; run it once "
      "before capturing");
  Algo a;
  int max = 0;
  bool timing_failed = false;
  switch (pass) {
    case Pass::Forward: {
      check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max), op);
      a = choose<cudnnConvolutionFwdAlgoPerf_t>(
          d, max, dtype,
          [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, n, count, perf);
          },
          [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, count, perf);
          },
          [&](cudnnConvolutionFwdAlgo_t algo, size_t* n) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, n);
          },
          op, &timing_failed);
      break;
    }
    case Pass::Data: {
      check_cudnn(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max), op);
      a = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
          d, max, dtype,
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return cudnnFindConvolutionBackwardDataAlgorithm(h, d.w, d.y, d.conv, d.x, n, count,
                                                             perf);
          },
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, count,
                                                               perf);
          },
          [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* n) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, n);
          },
          op, &timing_failed);
      break;
    }
    case Pass::Filter: {
      check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max), op);
      a = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
          d, max, dtype,
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x, d.y, d.conv, d.w, n, count,
                                                               perf);
          },
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, count,
                                                                 perf);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* n) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo,
                                                                  n);
          },
          op, &timing_failed);
      break;
    }
  }
  if (timing_failed) return a;  // the search is tried again at the next use
  std::lock_guard<std::mutex> lock(cache_mutex);
  algo_cache().emplace(std::move(key), a);
  return a;
}

// alpha and beta in the type cuDNN scales with: double for f64, float otherwise.
struct Scale {
  float f;
  double d;
  const void* ptr(DType dtype) const {
    return dtype == DType::f64 ? static_cast<const void*>(&d) : static_cast<const void*>(&f);
  }
};
constexpr Scale kOne{1.0f, 1.0}, kZero{0.0f, 0.0};

RawTensor device_empty(const Shape& shape, DType dtype, Device device) {
  return RawTensor{
      backend().allocate(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device), shape,
      contiguous_strides(shape), 0, dtype};
}

// Whether t is already in the layout a kernel reads: channels-last, or contiguous (NCHW).
bool in_layout(const RawTensor& t, bool channels_last) {
  return channels_last ? t.is_channels_last() : t.is_contiguous();
}

// A fresh tensor shaped like t in either layout.
RawTensor empty_in(const RawTensor& t, bool channels_last) {
  RawTensor out = device_empty(t.shape, t.dtype, t.device());
  if (channels_last) out.strides = channels_last_strides(t.shape);
  return out;
}

// t's dims in channels-last memory order, [N, *spatial, C]: a channels-last tensor reads as
// contiguous.
RawTensor in_memory_order(const RawTensor& t) {
  Shape shape = t.shape;
  Strides strides = t.strides;
  const int r = t.rank();
  for (int i = 1; i + 1 < r; ++i) {
    shape[i] = t.shape[i + 1];
    strides[i] = t.strides[i + 1];
  }
  shape[r - 1] = t.shape[1];
  strides[r - 1] = t.strides[1];
  return t.view(shape, strides, t.offset);
}

// Operands in the layout a call's kernels read: as they are where they are in it, else staged
// into a copy. One Staging serves one call, so conv_backward's data and filter passes stage
// grad_out once.
class Staging {
 public:
  RawTensor operator()(const RawTensor& t, bool channels_last) {
    if (!t.defined() || in_layout(t, channels_last)) return t;
    for (const auto& [from, to] : made_) {
      if (from.storage == t.storage && from.offset == t.offset && from.shape == t.shape &&
          in_layout(to, channels_last)) {
        return to;
      }
    }
    RawTensor to = empty_in(t, channels_last);
    backend().copy(t, to);  // a tiled transpose between the layouts (layout.cu)
    made_.emplace_back(t, to);
    return to;
  }

 private:
  std::vector<std::pair<RawTensor, RawTensor>> made_;
};

// The layout of a pass: channels-last when the tensor the front end allocated for it (the
// output, or grad_out for the filter gradient) is; a tensor that is both (one channel, a 1x1
// plane) follows the other operand.
bool channels_last_pass(const RawTensor& decides, const RawTensor& other) {
  return decides.is_channels_last() && (!decides.is_contiguous() || other.is_channels_last());
}

// cuDNN's graph engines load 16 bytes at a time, so every operand must start on a 16-byte
// boundary (a view at an offset may not); otherwise the legacy API runs the call.
bool aligned(std::initializer_list<const RawTensor*> operands) {
  for (const RawTensor* t : operands) {
    if (t->defined() && reinterpret_cast<uintptr_t>(t->data()) % 16 != 0) return false;
  }
  return true;
}

// Where a kernel writes a result: the tensor itself when it is in the layout, else a buffer that
// finish() then moves into it.
RawTensor target(const RawTensor& t, bool channels_last) {
  return in_layout(t, channels_last) ? t : empty_in(t, channels_last);
}

void finish(const RawTensor& written, const RawTensor& t) {
  if (written.storage != t.storage) backend().copy(written, t);
}

// grad_out as cuDNN's backward passes take it: cuDNN derives the output size from the input's,
// which a transposed convolution's output_padding can make larger than grad_out (when it reaches
// past the stride, under a larger dilation). The missing outputs get a zero gradient.
RawTensor full_grad_out(const RawTensor& gy, const Shape& in, const Shape& w, const ConvParams& p,
                        const std::string& op) {
  Shape full = gy.shape;
  for (int i = 0; i < p.spatial; ++i) {
    const int64_t reach = in[2 + i] + 2 * p.padding[i] - p.dilation[i] * (w[2 + i] - 1) - 1;
    if (reach >= 0) full[2 + i] = std::max(full[2 + i], reach / p.stride[i] + 1);
  }
  if (full == gy.shape) return gy;
  RawTensor ext = device_empty(full, gy.dtype, gy.device());
  EMBER_CUDA_CHECK(cudaMemsetAsync(ext.data(), 0, ext.nbytes(), stream_of(gy)), op);
  backend().copy(gy, ext.view(gy.shape, ext.strides, 0));
  return ext;
}

void backward_data(const RawTensor& grad_out, const RawTensor& w, const ConvParams& p,
                   const RawTensor& grad_in, const std::string& op, Staging& staged) {
  if (grad_in.numel() == 0) return;
  DeviceState& s = state_of(grad_in);
  if (grad_out.numel() == 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_in.data(), 0, grad_in.nbytes(), s.stream), op);
    return;
  }
  const RawTensor gy = full_grad_out(grad_out, grad_in.shape, w.shape, p, op);
  const bool cl = channels_last_pass(grad_in, gy);
  if (const auto g = aligned({&gy, &w, &grad_in})
                         ? conv_graph_for(ConvPass::Data, grad_in.shape, w.shape, gy.shape, p,
                                          grad_in.dtype, false, s.index, cl, op.c_str())
                         : nullptr) {
    const RawTensor sw = staged(w, cl), sgy = staged(gy, cl), dx = target(grad_in, cl);
    conv_graph_run(*g, sgy.data(), sw.data(), nullptr, dx.data(), grad_in.device(), op.c_str());
    finish(dx, grad_in);
    return;
  }
  // The legacy API on NCHW operands.
  const RawTensor sw = staged(w, false), sgy = staged(gy, false), dx = target(grad_in, false);
  Descs d;
  make_descs(d, grad_in.shape, w.shape, gy.shape, p, grad_in.dtype, op);
  auto* h = reinterpret_cast<cudnnHandle_t>(s.cudnn(op.c_str()));
  const Algo a = algo_for(Pass::Data, d, h, grad_in.dtype, s.index, op);
  void* ws = s.workspace(a.workspace, op.c_str());
  check_cudnn(
      cudnnConvolutionBackwardData(h, kOne.ptr(grad_in.dtype), d.w, sw.data(), d.y, sgy.data(),
                                   d.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), ws,
                                   a.workspace, kZero.ptr(grad_in.dtype), d.x, dx.data()),
      op);
  finish(dx, grad_in);
}

void backward_weight(const RawTensor& x, const RawTensor& grad_out, const ConvParams& p,
                     const RawTensor& grad_w, const RawTensor& grad_bias, const std::string& op,
                     Staging& staged) {
  const bool weights = grad_w.defined() && grad_w.numel() > 0;
  const bool bias = grad_bias.defined() && grad_bias.numel() > 0;
  if (!weights && !bias) return;
  DeviceState& s = state_of(weights ? grad_w : grad_bias);
  if (grad_out.numel() == 0) {
    if (weights) {
      EMBER_CUDA_CHECK(cudaMemsetAsync(grad_w.data(), 0, grad_w.nbytes(), s.stream), op);
    }
    if (bias)
      EMBER_CUDA_CHECK(cudaMemsetAsync(grad_bias.data(), 0, grad_bias.nbytes(), s.stream), op);
    return;
  }
  if (bias) conv_bias_grad(staged(grad_out, false), grad_bias, op.c_str());
  if (!weights) return;
  const RawTensor gy = full_grad_out(grad_out, x.shape, grad_w.shape, p, op);
  const bool cl = channels_last_pass(gy, x);
  if (const auto g = aligned({&x, &gy, &grad_w})
                         ? conv_graph_for(ConvPass::Filter, x.shape, grad_w.shape, gy.shape, p,
                                          grad_w.dtype, false, s.index, cl, op.c_str())
                         : nullptr) {
    const RawTensor sx = staged(x, cl), sgy = staged(gy, cl), dw = target(grad_w, cl);
    conv_graph_run(*g, sx.data(), sgy.data(), nullptr, dw.data(), grad_w.device(), op.c_str());
    finish(dw, grad_w);
    return;
  }
  const RawTensor sx = staged(x, false), sgy = staged(gy, false), dw = target(grad_w, false);
  Descs d;
  make_descs(d, x.shape, grad_w.shape, gy.shape, p, grad_w.dtype, op);
  auto* h = reinterpret_cast<cudnnHandle_t>(s.cudnn(op.c_str()));
  const Algo a = algo_for(Pass::Filter, d, h, grad_w.dtype, s.index, op);
  void* ws = s.workspace(a.workspace, op.c_str());
  check_cudnn(
      cudnnConvolutionBackwardFilter(h, kOne.ptr(grad_w.dtype), d.x, sx.data(), d.y, sgy.data(),
                                     d.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                     ws, a.workspace, kZero.ptr(grad_w.dtype), d.w, dw.data()),
      op);
  finish(dw, grad_w);
}

}  // namespace

void CudaBackend::conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                       const ConvParams& p, const RawTensor& out) {
  const std::string op = spatial_name("conv", p.spatial);
  if (out.numel() == 0) return;
  DeviceState& s = state_of(out);
  const bool with_bias = bias.defined();
  const bool any = x.numel() > 0 && w.numel() > 0;
  const bool cl = channels_last_pass(out, x);
  const auto g = any && aligned({&x, &w, &bias, &out})
                     ? conv_graph_for(ConvPass::Forward, x.shape, w.shape, out.shape, p, out.dtype,
                                      with_bias, s.index, cl, op.c_str())
                     : nullptr;
  Staging staged;
  if (g) {
    const RawTensor sx = staged(x, cl), sw = staged(w, cl), y = target(out, cl);
    conv_graph_run(*g, sx.data(), sw.data(), with_bias ? bias.data() : nullptr, y.data(),
                   out.device(), op.c_str());
    finish(y, out);
  } else if (any) {
    const RawTensor sx = staged(x, false), y = target(out, false);
    if (with_bias) conv_broadcast_bias(bias, y, op.c_str());
    Descs d;
    make_descs(d, x.shape, w.shape, out.shape, p, out.dtype, op);
    auto* h = reinterpret_cast<cudnnHandle_t>(s.cudnn(op.c_str()));
    const Algo a = algo_for(Pass::Forward, d, h, out.dtype, s.index, op);
    void* ws = s.workspace(a.workspace, op.c_str());
    check_cudnn(
        cudnnConvolutionForward(h, kOne.ptr(out.dtype), d.x, sx.data(), d.w, w.data(), d.conv,
                                static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws, a.workspace,
                                (with_bias ? kOne : kZero).ptr(out.dtype), d.y, y.data()),
        op);
    finish(y, out);
  } else if (with_bias) {
    const RawTensor y = target(out, false);
    conv_broadcast_bias(bias, y, op.c_str());
    finish(y, out);
  } else {  // no input channels: the sum is empty
    EMBER_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, out.nbytes(), s.stream), op);
  }
  if (p.relu) conv_relu(out, op.c_str());
}

void CudaBackend::conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                     const ConvParams& p, const RawTensor& grad_in) {
  Staging staged;
  backward_data(grad_out, w, p, grad_in, spatial_name("conv_transpose", p.spatial), staged);
}

void CudaBackend::conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                                const RawTensor& grad_out, const ConvParams& p,
                                const RawTensor& grad_in, const RawTensor& grad_w,
                                const RawTensor& grad_bias) {
  const std::string op = "conv_backward";
  RawTensor gy = grad_out;
  if (y.defined() && grad_out.numel() > 0) {  // relu_backward once, for every gradient
    // In grad_out's layout: a channels-last gradient stays so for the graphs (the kernel writes
    // a contiguous out, so a channels-last one is handed over in its memory order).
    const bool cl = grad_out.is_channels_last() && !grad_out.is_contiguous();
    gy = empty_in(grad_out, cl);
    if (cl) {
      binary(BinaryOp::ReluBackward, in_memory_order(grad_out), in_memory_order(y),
             in_memory_order(gy));
    } else {
      binary(BinaryOp::ReluBackward, grad_out, y, gy);
    }
  }
  Staging staged;
  if (grad_in.defined()) backward_data(gy, w, p, grad_in, op, staged);
  backward_weight(x, gy, p, grad_w, grad_bias, op, staged);
}

void CudaBackend::conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                       const ConvParams& p, const RawTensor& grad_w,
                                       const RawTensor& grad_bias) {
  Staging staged;
  backward_weight(x, grad_out, p, grad_w, grad_bias, "conv_backward_weight", staged);
}

}  // namespace ember::cuda
