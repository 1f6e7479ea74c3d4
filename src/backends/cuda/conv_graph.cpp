// 16-bit 2-d convolutions through cuDNN's graph API (the cuDNN frontend, as attention.cpp), as
// PyTorch runs them: on Hopper its fast bf16/f16 kernels (sm90 implicit GEMM) are engines of the
// graph API that the legacy cudnnConvolution* calls never choose. The plan is the first of
// cuDNN's heuristics (mode A) that builds, as PyTorch's with cudnn.benchmark off. Graphs are
// cached per geometry, layout and device, and so is a refusal, after which the legacy API runs
// that geometry.
//
// The operands are all channels-last (NHWC, the filter KRSC) or all NCHW, as the caller says.
// Channels-last is what the front end hands over for these convolutions (CudaBackend::
// channels_last): cuDNN's NHWC kernels need no conversion kernels around them. The operands'
// addresses must be 16-byte aligned (the engines' vector loads): conv.cpp checks.
#include "conv_graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/error.hpp"
#include "state.hpp"

#if EMBER_HAVE_CUDNN_FRONTEND
#include "cudnn_graph.hpp"
#endif

namespace ember::cuda {

#if EMBER_HAVE_CUDNN_FRONTEND

struct ConvGraph {
  std::shared_ptr<cudnn_graph::fe::graph::Graph> graph;  // null: cuDNN refused this geometry
  cudnn_graph::TensorPtr a, b, bias, out;
  int64_t workspace = 0;
  bool channels_last = true;
};

bool conv_graph_runs(DType dtype, int spatial) {
  return (dtype == DType::bf16 || dtype == DType::f16) && spatial == 2 &&
         !deterministic_algorithms();
}

namespace {

using namespace cudnn_graph;

std::vector<int64_t> dims_of(const Shape& s) { return {s[0], s[1], s[2], s[3]}; }

std::vector<int64_t> strides_of(const Shape& s, bool channels_last) {
  if (channels_last) return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  return {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
}

TensorPtr tensor(fe::graph::Graph& g, const char* name, const Shape& s, bool channels_last) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_dim(dims_of(s))
                      .set_stride(strides_of(s, channels_last)));
}

template <class Attributes>
Attributes geometry(Attributes a, const ConvParams& p) {
  return a.set_padding({p.padding[0], p.padding[1]})
      .set_stride({p.stride[0], p.stride[1]})
      .set_dilation({p.dilation[0], p.dilation[1]});
}

std::string key_of(ConvPass pass, const Shape& x, const Shape& w, const Shape& y,
                   const ConvParams& p, DType dtype, bool bias, bool channels_last) {
  std::string key = std::to_string(static_cast<int>(pass)) + dtype_name(dtype).data() +
                    (bias ? "b" : "-") + (channels_last ? "l|" : "f|");
  for (const Shape* s : {&x, &w, &y}) {
    for (int i = 0; i < 4; ++i) key += std::to_string((*s)[i]) + ",";
  }
  for (int i = 0; i < 2; ++i) {
    key += std::to_string(p.padding[i]) + "," + std::to_string(p.stride[i]) + "," +
           std::to_string(p.dilation[i]) + ";";
  }
  return key;
}

void add_nodes(ConvGraph& c, ConvPass pass, const Shape& x, const Shape& w, const Shape& y,
               const ConvParams& p, bool bias) {
  fe::graph::Graph& g = *c.graph;
  const bool cl = c.channels_last;
  switch (pass) {
    case ConvPass::Forward: {
      c.a = tensor(g, "x", x, cl);
      c.b = tensor(g, "w", w, cl);
      c.out = g.conv_fprop(c.a, c.b, geometry(fe::graph::Conv_fprop_attributes(), p));
      if (bias) {  // y = conv + bias in the epilogue: one rounding, as the legacy path's beta = 1
        c.bias = g.tensor(fe::graph::Tensor_attributes()
                              .set_name("bias")
                              .set_dim({1, y[1], 1, 1})
                              .set_stride({y[1], 1, 1, 1}));
        c.out = g.pointwise(c.out, c.bias,
                            fe::graph::Pointwise_attributes()
                                .set_mode(fe::PointwiseMode_t::ADD)
                                .set_compute_data_type(fe::DataType_t::FLOAT));
      }
      c.out->set_output(true).set_dim(dims_of(y)).set_stride(strides_of(y, cl));
      break;
    }
    case ConvPass::Data:
      c.a = tensor(g, "dy", y, cl);
      c.b = tensor(g, "w", w, cl);
      c.out = g.conv_dgrad(c.a, c.b, geometry(fe::graph::Conv_dgrad_attributes(), p));
      c.out->set_output(true).set_dim(dims_of(x)).set_stride(strides_of(x, cl));
      break;
    case ConvPass::Filter:
      c.a = tensor(g, "x", x, cl);
      c.b = tensor(g, "dy", y, cl);
      c.out = g.conv_wgrad(c.b, c.a, geometry(fe::graph::Conv_wgrad_attributes(), p));
      c.out->set_output(true).set_dim(dims_of(w)).set_stride(strides_of(w, cl));
      break;
  }
}

}  // namespace

std::shared_ptr<const ConvGraph> conv_graph_for(ConvPass pass, const Shape& x, const Shape& w,
                                                const Shape& y, const ConvParams& p, DType dtype,
                                                bool bias, int device, bool cl, const char* op) {
  if (!conv_graph_runs(dtype, p.spatial) || p.groups != 1) return nullptr;
  auto& cache = GraphCache<ConvGraph>::of(device);
  std::lock_guard lock(cache.mu);
  auto& slot = cache.graphs[key_of(pass, x, w, y, p, dtype, bias, cl)];
  if (!slot) {
    // Building compiles and loads kernels: not something a graph capture can record.
    device_state(device).check_not_capturing(
        op,
        "a convolution's first use of a shape builds its cuDNN plan; run it once before "
        "capturing");
    auto c = std::make_shared<ConvGraph>();
    c->channels_last = cl;
    c->graph = new_graph(dtype);
    add_nodes(*c, pass, x, w, y, p, bias);
    const char* stage = "";
    auto* handle = reinterpret_cast<cudnnHandle_t>(device_state(device).cudnn(op));
    // A refusal is kept too (the legacy API runs the geometry from then on), with CUDA's error
    // cleared so that the next kernel's launch check does not report it.
    if (!build(*c->graph, handle, &c->workspace, &stage).is_good()) {
      c->graph = nullptr;
      (void)cudaGetLastError();
    }
    slot = c;
  }
  if (!slot->graph) return nullptr;
  return slot;
}

void conv_graph_run(const ConvGraph& g, const void* a, const void* b, const void* bias, void* out,
                    Device device, const char* op) {
  Pack pack = {{g.a, const_cast<void*>(a)}, {g.b, const_cast<void*>(b)}, {g.out, out}};
  if (g.bias) pack.emplace(g.bias, const_cast<void*>(bias));
  execute(*g.graph, g.workspace, device, pack, op, "convolution");
}

#else  // built without the cuDNN frontend: the legacy API runs every convolution

struct ConvGraph {};

bool conv_graph_runs(DType, int) { return false; }

std::shared_ptr<const ConvGraph> conv_graph_for(ConvPass, const Shape&, const Shape&, const Shape&,
                                                const ConvParams&, DType, bool, int, bool,
                                                const char*) {
  return nullptr;
}

void conv_graph_run(const ConvGraph&, const void*, const void*, const void*, void*, Device,
                    const char* op) {
  EMBER_FAIL("[", op, "] cuDNN's graph API is not built in");
}

#endif

}  // namespace ember::cuda
