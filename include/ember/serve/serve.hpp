// Serving a model over HTTP (`ember serve`, or a server binary of one's own): JSON and raw-tensor
// endpoints, /healthz, and dynamic batching: concurrent requests wait in a bounded queue and run
// as one batch, up to max_batch examples or max_wait after the first. docs/SERVE.md has the
// protocol. A batch waits for more requests only while some are being received. The HTTP
// library (cpp-httplib) stays inside the .cpp files.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::serve {

/// One input or output of a served model: its dtype and the shape of one example (without the
/// batch dim). A size of -1 is free (a sequence length): requests batch together when they agree.
struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> example_shape;
};

/// What the server runs: named inputs of [batch, example...] in, named outputs likewise out.
class Servable {
 public:
  virtual ~Servable() = default;
  virtual const std::vector<TensorSpec>& inputs() const = 0;
  virtual const std::vector<TensorSpec>& outputs() const = 0;
  /// The device the inputs are moved to before run().
  virtual Device device() const = 0;
  virtual std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& batch) = 0;
};

/// A function of one input and one output as a Servable: `forward` takes [batch, example...].
std::shared_ptr<Servable> make_servable(TensorSpec input, TensorSpec output, Device device,
                                        std::function<DynTensor(const DynTensor&)> forward);

/// An ONNX model (ember::onnx::load), its batch dim the first of every input and output.
std::shared_ptr<Servable> onnx_servable(const std::string& path, Device device);

/// The Fashion-MNIST CNN (models::FashionCnn, or FashionCnnInt8 for `ember quantize` files):
/// input "input" [N, 1, 28, 28] f32 (pixels / 255, then (x - 0.2860) / 0.3530), output
/// "logits" [N, 10].
std::shared_ptr<Servable> fashion_servable(const std::string& safetensors_path, Device device);

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                           // 0: any free port (Server::port() says which)
  int64_t max_batch = 16;                    // examples in one run
  std::chrono::microseconds max_wait{2000};  // after a batch's first, while more are arriving
  int64_t max_queue = 1024;                  // requests waiting; more get 503
  std::chrono::milliseconds timeout{10000};  // a request's wait for its answer; 503
  size_t max_body_bytes = size_t{16} << 20;  // larger bodies get 413
  int threads = 64;                          // HTTP connections served at once
};

/// Counters of a running server (GET /v1/stats).
struct ServerStats {
  int64_t requests = 0;  // answered with 200 by the predict endpoints
  int64_t batches = 0;   // model runs
  int64_t examples = 0;  // examples in those runs
  int64_t rejected = 0;  // 4xx and 503 answers
};

class Server {
 public:
  Server(std::shared_ptr<Servable> model, ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds the port (an ember::Error naming host and port when it cannot); returns it.
  int bind();
  int port() const;
  /// Serves until stop(): blocks. Calls bind() first when it was not called.
  void run();
  /// Stops accepting connections; requests in flight are answered first, then run() returns.
  /// Safe from any thread (a signal-handling thread, a test).
  void stop();
  ServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs `server` until SIGTERM or SIGINT arrives, then stops it gracefully (requests in flight
/// are answered). Installs handlers for both signals while it runs.
void run_until_signal(Server& server);

}  // namespace ember::serve
