// DeviceGraph's Cuda side: the work queued on a device's stream between begin_capture and
// end_capture becomes a CUDA graph, replayed with one launch. The allocator hands the capture
// blocks from a private pool that stays reserved while the graph lives, so a replay finds every
// intermediate where the capture left it and never writes memory given to someone else.
#include <cuda_runtime.h>

#include <memory>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "state.hpp"

namespace ember::cuda {
namespace {

class CudaGraph final : public Backend::CapturedWork {
 public:
  CudaGraph(DeviceState& s, int pool, cudaGraph_t graph) : s_(s), pool_(pool), graph_(graph) {
    ++s_.graphs_alive;
    const cudaError_t err = cudaGraphInstantiate(&exec_, graph_, 0);
    if (err != cudaSuccess) {
      cudaGraphDestroy(graph_);
      --s_.graphs_alive;
      s_.allocator.release_pool(pool_);
      EMBER_CUDA_CHECK(err, "DeviceGraph");
    }
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph() override {
    // Queued replays may still use the pool's blocks: they must finish before others get them.
    cudaStreamSynchronize(s_.stream);
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
    --s_.graphs_alive;
    s_.allocator.release_pool(pool_);
  }
  void replay() override {
    EMBER_CUDA_CHECK(cudaSetDevice(s_.index), "DeviceGraph::replay");
    EMBER_CUDA_CHECK(cudaGraphLaunch(exec_, s_.stream), "DeviceGraph::replay");
  }

 private:
  DeviceState& s_;
  int pool_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

bool CudaBackend::capturing(Device device) const { return device_state(device.index).capturing(); }

void CudaBackend::begin_capture(Device device) {
  DeviceState& s = device_state(device.index);
  EMBER_CHECK(!s.capturing(), "[DeviceGraph] a capture is already under way on ", device,
              ": captures do not nest");
  // Relaxed: the libraries may make calls (cudaMalloc of their own) that the stricter modes
  // refuse; the calls that cannot be captured are refused by the backend itself.
  EMBER_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed),
                   "DeviceGraph::capture");
  s.capture_pool = s.allocator.create_pool();
  s.allocator.begin_capture(s.capture_pool);
}

std::unique_ptr<Backend::CapturedWork> CudaBackend::end_capture(Device device, bool ok) {
  DeviceState& s = device_state(device.index);
  EMBER_CHECK(s.capturing(), "[DeviceGraph] no capture is under way on ", device);
  const int pool = s.capture_pool;
  s.allocator.end_capture();
  s.capture_pool = -1;
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(s.stream, &graph);
  if (!ok || err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    s.allocator.release_pool(pool);
    if (!ok) return nullptr;
    EMBER_CUDA_CHECK(err, "DeviceGraph::capture");
  }
  return std::make_unique<CudaGraph>(s, pool, graph);
}

}  // namespace ember::cuda
