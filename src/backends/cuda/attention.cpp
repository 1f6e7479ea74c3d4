// Fused scaled-dot-product attention through cuDNN's SDPA graphs (the cuDNN frontend, a
// header-only C++ API installed by scripts/setup.sh from PyPI's nvidia-cudnn-frontend): forward
// and backward in flash-attention kernels that never write the [L, S] score matrix. Graphs are
// built once per shape, strides, dtype, scale and mask, and cached per device. Without the
// frontend at build time the backend takes no shape and nn::scaled_dot_product_attention runs its
// composite.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/error.hpp"
#include "state.hpp"

#if EMBER_HAVE_CUDNN_FRONTEND
#include "cudnn_graph.hpp"
#endif

namespace ember::cuda {

#if EMBER_HAVE_CUDNN_FRONTEND
namespace {

using namespace cudnn_graph;

// A built graph and the tensors its variant pack names.
struct AttentionGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v, bias, o, stats, d_o, dq, dk, dv;  // bias: null without a mask
  int64_t workspace = 0;
};

std::vector<int64_t> dims_of(const RawTensor& t) {
  return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
}
std::vector<int64_t> strides_of(const RawTensor& t) {
  return {t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
}

void append(std::string& key, const RawTensor& t) {
  for (int i = 0; i < 4; ++i)
    key += std::to_string(t.shape[i]) + "," + std::to_string(t.strides[i]) + ";";
  key += "|";
}

TensorPtr input(fe::graph::Graph& g, const char* name, const RawTensor& t) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_dim(dims_of(t)).set_stride(strides_of(t)));
}

std::string key_of(const char* kind, const RawTensor& q, const RawTensor& k, const RawTensor& v,
                   const RawTensor& bias, const RawTensor& o, const RawTensor* d_o,
                   const AttentionParams& p) {
  std::string key = std::string(kind) + dtype_name(q.dtype).data() + "|" + std::to_string(p.scale) +
                    (p.causal ? "c|" : "f|");
  append(key, q);
  append(key, k);
  append(key, v);
  if (bias.defined()) {
    key += "bias:";
    append(key, bias);
  }
  append(key, o);
  if (d_o) append(key, *d_o);
  return key;
}

// The graph cached under `key` on q's device, made on first use: q, k and v as inputs, then
// `add` puts in the SDPA node and its outputs, then the plan is built.
template <class Add>
std::shared_ptr<AttentionGraph> cached_graph(const std::string& key, const RawTensor& q,
                                             const RawTensor& k, const RawTensor& v,
                                             const RawTensor& bias, DeviceState& s, const char* op,
                                             Add&& add) {
  auto& c = GraphCache<AttentionGraph>::of(q.device().index);
  std::lock_guard lock(c.mu);
  auto& slot = c.graphs[key];
  if (!slot) {
    auto g = std::make_shared<AttentionGraph>();
    g->graph = new_graph(q.dtype);
    g->q = input(*g->graph, "Q", q);
    g->k = input(*g->graph, "K", k);
    g->v = input(*g->graph, "V", v);
    if (bias.defined()) g->bias = input(*g->graph, "Bias", bias);
    add(*g);
    const char* stage = "";
    check(build(*g->graph, reinterpret_cast<cudnnHandle_t>(s.cudnn(op)), &g->workspace, &stage), op,
          "attention", stage);
    slot = g;
  }
  return slot;
}

}  // namespace

bool CudaBackend::attention_supports(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                                     const RawTensor& bias) const {
  if (q.dtype != DType::f16 && q.dtype != DType::bf16) return false;
  if (k.dtype != q.dtype || v.dtype != q.dtype) return false;
  if (q.shape.rank() != 4 || k.shape.rank() != 4 || v.shape.rank() != 4) return false;
  if (q.strides[3] != 1 || k.strides[3] != 1 || v.strides[3] != 1) return false;
  // cuDNN's flash kernels on Hopper: head dims a multiple of 8 up to 128, q and k alike.
  const int64_t e = q.shape[3], ev = v.shape[3];
  if (e != k.shape[3] || e % 8 != 0 || ev % 8 != 0 || e > 128 || ev > 128) return false;
  for (int i = 0; i < 2; ++i) {
    if (k.shape[i] != q.shape[i] || v.shape[i] != q.shape[i]) return false;
  }
  if (k.shape[2] != v.shape[2] || q.shape[2] < 1 || k.shape[2] < 1) return false;
  if (bias.defined()) {
    // The mask: q's dtype, [B or 1, H or 1, L, S], unit last stride.
    if (bias.dtype != q.dtype || bias.shape.rank() != 4 || bias.strides[3] != 1) return false;
    for (int i = 0; i < 2; ++i) {
      if (bias.shape[i] != 1 && bias.shape[i] != q.shape[i]) return false;
    }
    if (bias.shape[2] != q.shape[2] || bias.shape[3] != k.shape[2]) return false;
  }
  // 16-byte aligned starts and strides (the kernels' vector loads).
  for (const RawTensor* t : {&q, &k, &v, &bias}) {
    if (!t->defined()) continue;
    if (reinterpret_cast<uintptr_t>(t->data()) % 16 != 0) return false;
    for (int i = 0; i < 3; ++i) {
      if ((t->strides[i] * 2) % 16 != 0 && t->shape[i] > 1) return false;
    }
  }
  return true;
}

void CudaBackend::attention(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                            const RawTensor& bias, const AttentionParams& p, const RawTensor& out,
                            const RawTensor& lse) {
  constexpr const char* op = "scaled_dot_product_attention";
  DeviceState& s = state_of(out);
  const std::string key = key_of("fwd", q, k, v, bias, out, nullptr, p);
  const auto a = cached_graph(key, q, k, v, bias, s, op, [&](AttentionGraph& g) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("sdpa")
                       .set_generate_stats(true)
                       .set_attn_scale(static_cast<float>(p.scale))
                       .set_causal_mask(p.causal);
    if (g.bias) options.set_bias(g.bias);
    auto [o, stats] = g.graph->sdpa(g.q, g.k, g.v, options);
    o->set_output(true).set_dim(dims_of(out)).set_stride(strides_of(out));
    stats->set_output(true)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({q.shape[0], q.shape[1], q.shape[2], 1})
        .set_stride({q.shape[1] * q.shape[2], q.shape[2], 1, 1});
    g.o = o;
    g.stats = stats;
  });
  Pack pack = {{a->q, q.data()},
               {a->k, k.data()},
               {a->v, v.data()},
               {a->o, out.data()},
               {a->stats, lse.data()}};
  if (a->bias) pack[a->bias] = bias.data();
  execute(*a->graph, a->workspace, out.device(), pack, op, "attention");
}

void CudaBackend::attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v,
                                     const RawTensor& bias, const RawTensor& out,
                                     const RawTensor& grad_out, const RawTensor& lse,
                                     const AttentionParams& p, const RawTensor& dq,
                                     const RawTensor& dk, const RawTensor& dv) {
  constexpr const char* op = "scaled_dot_product_attention_backward";
  DeviceState& s = state_of(dq);
  std::string key = key_of("bwd", q, k, v, bias, out, &grad_out, p);
  for (const RawTensor* d : {&dq, &dk, &dv}) append(key, *d);
  const auto a = cached_graph(key, q, k, v, bias, s, op, [&](AttentionGraph& g) {
    g.o = input(*g.graph, "O", out);
    g.d_o = input(*g.graph, "dO", grad_out);
    g.stats = g.graph->tensor(fe::graph::Tensor_attributes()
                                  .set_name("Stats")
                                  .set_dim({q.shape[0], q.shape[1], q.shape[2], 1})
                                  .set_stride({q.shape[1] * q.shape[2], q.shape[2], 1, 1})
                                  .set_data_type(fe::DataType_t::FLOAT));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("sdpa_backward")
                       .set_attn_scale(static_cast<float>(p.scale))
                       .set_causal_mask(p.causal);
    if (g.bias) options.set_bias(g.bias);
    auto [gq, gk, gv] = g.graph->sdpa_backward(g.q, g.k, g.v, g.o, g.d_o, g.stats, options);
    gq->set_output(true).set_dim(dims_of(dq)).set_stride(strides_of(dq));
    gk->set_output(true).set_dim(dims_of(dk)).set_stride(strides_of(dk));
    gv->set_output(true).set_dim(dims_of(dv)).set_stride(strides_of(dv));
    g.dq = gq;
    g.dk = gk;
    g.dv = gv;
  });
  Pack pack = {{a->q, q.data()},   {a->k, k.data()},          {a->v, v.data()},
               {a->o, out.data()}, {a->d_o, grad_out.data()}, {a->stats, lse.data()},
               {a->dq, dq.data()}, {a->dk, dk.data()},        {a->dv, dv.data()}};
  if (a->bias) pack[a->bias] = bias.data();
  execute(*a->graph, a->workspace, dq.device(), pack, op, "attention");
}

#else  // built without the cuDNN frontend: no shape is taken, the composite runs

bool CudaBackend::attention_supports(const RawTensor&, const RawTensor&, const RawTensor&,
                                     const RawTensor&) const {
  return false;
}
void CudaBackend::attention(const RawTensor& q, const RawTensor&, const RawTensor&,
                            const RawTensor&, const AttentionParams&, const RawTensor&,
                            const RawTensor&) {
  no_kernel("scaled_dot_product_attention", q.dtype);
}
void CudaBackend::attention_backward(const RawTensor& q, const RawTensor&, const RawTensor&,
                                     const RawTensor&, const RawTensor&, const RawTensor&,
                                     const RawTensor&, const AttentionParams&, const RawTensor&,
                                     const RawTensor&, const RawTensor&) {
  no_kernel("scaled_dot_product_attention_backward", q.dtype);
}

#endif

}  // namespace ember::cuda
