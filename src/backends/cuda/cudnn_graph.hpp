// cuDNN's graph API through its header-only C++ frontend, as the Cuda backend uses it
// (attention.cpp, conv_graph.cpp): graphs built once per key and device, then executed with a
// workspace from Ember's caching allocator. Included only where EMBER_HAVE_CUDNN_FRONTEND is set.
#pragma once

#include <cudnn_frontend.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/error.hpp"
#include "state.hpp"

namespace ember::cuda::cudnn_graph {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;
using Pack = std::unordered_map<TensorPtr, void*>;

inline void check(fe::error_t e, const char* op, const char* what, const char* stage) {
  if (!e.is_good()) EMBER_FAIL("[", op, "] cuDNN ", what, " ", stage, ": ", e.get_message());
}

inline fe::DataType_t io_type(DType dtype) {
  return dtype == DType::f16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
}

/// An empty graph with 16-bit operands computing in f32.
inline std::shared_ptr<fe::graph::Graph> new_graph(DType dtype) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io_type(dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

/// Validates the graph and builds the plan cuDNN's heuristics rank first that supports it; the
/// first failing stage's error, with *stage naming it.
inline fe::error_t build(fe::graph::Graph& g, cudnnHandle_t handle, int64_t* workspace,
                         const char** stage) {
  fe::error_t e;
  auto step = [&](const char* name, const fe::error_t& r) {
    if (e.is_good() && !r.is_good()) {
      e = r;
      *stage = name;
    }
    return e.is_good();
  };
  step("validate", g.validate()) &&
      step("build_operation_graph", g.build_operation_graph(handle)) &&
      step("create_execution_plans", g.create_execution_plans({fe::HeurMode_t::A})) &&
      step("check_support", g.check_support(handle)) &&
      step("build_plans", g.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE)) &&
      step("get_workspace_size", g.get_workspace_size(*workspace));
  return e;
}

/// Runs a built graph on the device's stream; the workspace goes back to the allocator after it,
/// ordered on the stream.
inline void execute(fe::graph::Graph& g, int64_t workspace, Device device, Pack& pack,
                    const char* op, const char* what) {
  std::shared_ptr<Storage> ws;
  if (workspace > 0) ws = backend().allocate(static_cast<size_t>(workspace), device);
  auto* handle = reinterpret_cast<cudnnHandle_t>(device_state(device.index).cudnn(op));
  check(g.execute(handle, pack, ws ? ws->data() : nullptr), op, what, "execute");
}

/// Built graphs of one kind by key, per device; an entry is made under the lock (rare) and used
/// after it.
template <class Entry>
struct GraphCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Entry>> graphs;

  static GraphCache& of(int device) {
    static std::mutex mu_all;
    static std::map<int, std::unique_ptr<GraphCache>> caches;
    std::lock_guard lock(mu_all);
    auto& c = caches[device];
    if (!c) c = std::make_unique<GraphCache>();
    return *c;
  }
};

}  // namespace ember::cuda::cudnn_graph
