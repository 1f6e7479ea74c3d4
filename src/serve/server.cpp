// The HTTP server and its dynamic batcher. Handler threads (cpp-httplib's pool) parse a request
// into Cpu tensors and queue it; one batcher thread takes the first request and every queued one
// of the same shapes, up to max_batch examples or until max_wait has passed since the first
// arrived, runs them as one batch and hands each its rows. A full queue is a 503 at once, and so
// is an answer that does not come within the timeout: the queue is bounded, nothing waits forever.
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "codec.hpp"
#include "ember/autodiff/autodiff.hpp"
#include "ember/core/error.hpp"
#include "ember/serve/serve.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/sync.hpp"

namespace ember::serve {
namespace {

using Clock = std::chrono::steady_clock;

struct Answer {
  std::map<std::string, DynTensor> outputs;  // this request's rows, on the Cpu
  std::string error;                         // the model failed: a 500 with this message
};

struct Pending {
  detail::Inputs inputs;
  int64_t n = 0;
  Clock::time_point arrived = Clock::now();
  std::promise<Answer> answer;
};

// Requests batch together when every input has the same shape past the batch dim.
bool same_shapes(const Pending& a, const Pending& b) {
  for (const auto& [name, t] : a.inputs) {
    const DynTensor& u = b.inputs.at(name);
    if (t.rank() != u.rank()) return false;
    for (int d = 1; d < t.rank(); ++d) {
      if (t.size(d) != u.size(d)) return false;
    }
  }
  return true;
}

// httplib's listening socket, whose backlog Debian's build fixes at 5: a burst of connections
// (a load test's 64) then overflows it, and Linux drops their handshakes for a second or more.
class HttpServer : public httplib::Server {
 public:
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }  // listen() again only resizes it
};

}  // namespace

struct Server::Impl {
  std::shared_ptr<Servable> model;
  ServerConfig config;
  HttpServer http;
  int port = -1;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Pending>> queue;
  bool stopping = false;
  // Requests received and being parsed, not yet queued: a batch waits for company only while
  // some are on their way. With none, it runs at once, so one client never waits max_wait.
  int parsing = 0;
  std::thread batcher;
  // stop() may come before run() listens (a signal at start-up): httplib's own stop() does
  // nothing until its loop runs, so run() checks the request, and stop() waits for the loop.
  std::mutex run_mu;
  bool stop_requested = false;
  bool listening = false;  // run() is in (or about to enter) httplib's loop
  bool finished = false;   // run() has left it

  std::mutex stats_mu;
  ServerStats stats;

  // Counts a request as on its way to the queue until it is queued or refused.
  struct Parsing {
    Impl& s;
    bool active = true;
    explicit Parsing(Impl& impl) : s(impl) {
      std::lock_guard lock(s.mu);
      ++s.parsing;
    }
    void end_locked() {  // with s.mu held
      if (active) --s.parsing;
      active = false;
    }
    ~Parsing() {
      if (!active) return;
      {
        std::lock_guard lock(s.mu);
        end_locked();
      }
      s.cv.notify_all();
    }
  };

  void count(int64_t ServerStats::*field, int64_t by = 1) {
    std::lock_guard lock(stats_mu);
    stats.*field += by;
  }

  void reply_error(httplib::Response& res, int status, const std::string& message) {
    count(&ServerStats::rejected);
    res.status = status;
    res.set_content(detail::error_json(message), "application/json");
  }

  // Queues the request and waits for its answer; the status and message when there is none.
  std::optional<Answer> submit(detail::Inputs inputs, int64_t n, httplib::Response& res,
                               Parsing& parsing) {
    auto p = std::make_shared<Pending>();
    p->inputs = std::move(inputs);
    p->n = n;
    std::future<Answer> future = p->answer.get_future();
    {
      std::lock_guard lock(mu);
      parsing.end_locked();  // queued or refused, under the lock the batcher reads it with
      if (stopping) {
        reply_error(res, 503, "the server is shutting down");
        return std::nullopt;
      }
      if (static_cast<int64_t>(queue.size()) >= config.max_queue) {
        reply_error(res, 503,
                    "the queue is full (" + std::to_string(queue.size()) +
                        " requests waiting); try again later");
        return std::nullopt;
      }
      queue.push_back(p);
    }
    cv.notify_all();
    if (future.wait_for(config.timeout) != std::future_status::ready) {
      {  // drop it from the queue (if the batcher has not taken it): no one waits for it now
        std::lock_guard lock(mu);
        const auto it = std::find(queue.begin(), queue.end(), p);
        if (it != queue.end()) queue.erase(it);
      }
      reply_error(res, 503,
                  "no answer within " + std::to_string(config.timeout.count()) +
                      " ms (the server is overloaded)");
      return std::nullopt;
    }
    Answer a = future.get();
    if (!a.error.empty()) {
      reply_error(res, 500, a.error);
      return std::nullopt;
    }
    count(&ServerStats::requests);
    return a;
  }

  void batch_loop() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;  // stopping, and every request answered
      const std::shared_ptr<Pending> first = queue.front();
      const Clock::time_point deadline = first->arrived + config.max_wait;
      auto ready = [&] {  // examples queued that fit the first's batch
        int64_t examples = 0;
        for (const auto& p : queue) {
          if (same_shapes(*first, *p)) examples += p->n;
        }
        return examples >= config.max_batch;
      };
      while (!stopping && parsing > 0 && !ready() && Clock::now() < deadline) {
        cv.wait_until(lock, deadline);
      }
      std::vector<std::shared_ptr<Pending>> batch;
      int64_t examples = 0;
      for (auto it = queue.begin(); it != queue.end();) {
        const std::shared_ptr<Pending>& p = *it;
        if (same_shapes(*first, *p) && (batch.empty() || examples + p->n <= config.max_batch)) {
          examples += p->n;
          batch.push_back(p);
          it = queue.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      if (!batch.empty()) run_batch(batch, examples);
      lock.lock();
    }
  }

  void run_batch(const std::vector<std::shared_ptr<Pending>>& batch, int64_t examples) {
    std::vector<Answer> answers(batch.size());
    try {
      auto guard = no_grad();
      std::map<std::string, DynTensor> inputs;
      for (const auto& [name, t] : batch[0]->inputs) {
        std::vector<DynTensor> parts;
        for (const auto& p : batch) parts.push_back(p->inputs.at(name));
        inputs[name] = to_device(parts.size() == 1 ? parts[0] : cat(parts, 0), model->device());
      }
      const std::map<std::string, DynTensor> outputs = model->run(inputs);
      for (const auto& [name, t] : outputs) {
        const DynTensor host = contiguous(to_device(t, Device::cpu()));
        int64_t row = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
          answers[i].outputs[name] = slice(host, 0, row, row + batch[i]->n);
          row += batch[i]->n;
        }
      }
    } catch (const std::exception& e) {
      for (Answer& a : answers)
        a = Answer{{}, std::string("[serve] the model failed: ") + e.what()};
    }
    count(&ServerStats::batches);
    count(&ServerStats::examples, examples);
    for (size_t i = 0; i < batch.size(); ++i) batch[i]->answer.set_value(std::move(answers[i]));
  }

  void predict(const httplib::Request& req, httplib::Response& res, bool raw) {
    detail::Inputs inputs;
    int64_t n = 0;
    Parsing parsing(*this);
    try {
      inputs = raw ? detail::parse_raw(req.body, req.get_header_value("X-Shape"),
                                       req.get_header_value("X-Dtype"), model->inputs(), &n)
                   : detail::parse_json(req.body, model->inputs(), &n);
    } catch (const detail::BadRequest& e) {
      return reply_error(res, e.status, e.message);
    } catch (const Error& e) {
      return reply_error(res, 400, e.what());
    }
    // The raw answer is one output: ?output=name, else the first.
    const std::string name =
        req.has_param("output") ? req.get_param_value("output") : model->outputs().at(0).name;
    if (raw && std::none_of(model->outputs().begin(), model->outputs().end(),
                            [&](const TensorSpec& t) { return t.name == name; })) {
      return reply_error(res, 400, "the model has no output '" + name + "'");
    }
    std::optional<Answer> a = submit(std::move(inputs), n, res, parsing);
    if (!a) return;
    if (!raw) return res.set_content(detail::to_json(a->outputs), "application/json");
    const TensorData data = a->outputs.at(name).to_data();
    res.set_header("X-Shape", detail::shape_header(data.shape));
    res.set_header("X-Dtype", std::string(dtype_name(data.dtype)));
    res.set_content(reinterpret_cast<const char*>(data.bytes.data()), data.bytes.size(),
                    "application/octet-stream");
  }

  std::string describe() const {
    auto specs = [](const std::vector<TensorSpec>& list) {
      nlohmann::json out = nlohmann::json::array();
      for (const TensorSpec& t : list) {
        std::vector<int64_t> shape{-1};
        shape.insert(shape.end(), t.example_shape.begin(), t.example_shape.end());
        out.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape}});
      }
      return out;
    };
    return nlohmann::json{{"inputs", specs(model->inputs())},
                          {"outputs", specs(model->outputs())},
                          {"max_batch", config.max_batch}}
        .dump();
  }
};

Server::Server(std::shared_ptr<Servable> model, ServerConfig config)
    : impl_(std::make_unique<Impl>()) {
  EMBER_CHECK(model, "[serve] no model to serve");
  EMBER_CHECK(config.max_batch >= 1 && config.max_queue >= 1 && config.threads >= 1,
              "[serve] max_batch, max_queue and threads must be positive, got ", config.max_batch,
              ", ", config.max_queue, " and ", config.threads);
  impl_->model = std::move(model);
  impl_->config = config;
  Impl& s = *impl_;
  const int threads = config.threads;
  s.http.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  s.http.set_payload_max_length(config.max_body_bytes);
  // SO_REUSEADDR (a restart may bind while old connections linger) but not httplib's default
  // SO_REUSEPORT, with which a second server on the same port would start and take half the load.
  s.http.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Without TCP_NODELAY a response sent as headers then body waits for the client's delayed ACK
  // (40 ms on Linux) before its second segment leaves: every answer would take 40 ms or more.
  s.http.set_tcp_nodelay(true);
  s.http.set_keep_alive_max_count(1000);
  s.http.set_keep_alive_timeout(2);  // how long an idle connection can hold up a shutdown
  // Before a body is read: Debian's httplib (0.11) reads a chunked body, a body without a
  // Content-Length and a compressed one past set_payload_max_length, so those are refused.
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "POST") return httplib::Server::HandlerResponse::Unhandled;
    const char* why = req.has_header("Transfer-Encoding")  ? "chunked bodies are not taken"
                      : req.has_header("Content-Encoding") ? "compressed bodies are not taken"
                      : !req.has_header("Content-Length")  ? "a POST needs a Content-Length"
                                                           : nullptr;
    if (!why) return httplib::Server::HandlerResponse::Unhandled;
    s.reply_error(res, 411, why);
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  s.http.Get("/v1/model", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.describe(), "application/json");
  });
  s.http.Get("/v1/stats", [&s](const httplib::Request&, httplib::Response& res) {
    const ServerStats st = [&] {
      std::lock_guard lock(s.stats_mu);
      return s.stats;
    }();
    res.set_content(nlohmann::json{{"requests", st.requests},
                                   {"batches", st.batches},
                                   {"examples", st.examples},
                                   {"rejected", st.rejected}}
                        .dump(),
                    "application/json");
  });
  s.http.Post("/v1/predict", [&s](const httplib::Request& req, httplib::Response& res) {
    s.predict(req, res, false);
  });
  s.http.Post("/v1/predict/raw", [&s](const httplib::Request& req, httplib::Response& res) {
    s.predict(req, res, true);
  });
  // httplib's own answers (no such path: 404; a body over the limit: 413) get a JSON message.
  s.http.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    s.count(&ServerStats::rejected);
    // httplib holds a form-encoded body (curl --data's default type) to 8192 bytes.
    const bool form = req.get_header_value("Content-Type") == "application/x-www-form-urlencoded";
    const std::string why =
        res.status == 413 && form ? "a body of Content-Type application/x-www-form-urlencoded is "
                                    "limited to 8192 bytes: send application/json"
        : res.status == 413       ? "the body is larger than the limit of " +
                                  std::to_string(s.config.max_body_bytes) + " bytes"
        : res.status == 404 ? "no endpoint " + req.method + " " + req.path +
                                  " (POST /v1/predict, POST /v1/predict/raw, "
                                  "GET /healthz, /v1/model, /v1/stats)"
                            : "HTTP status " + std::to_string(res.status);
    res.set_content(detail::error_json(why), "application/json");
  });
  s.batcher = std::thread([&s] { s.batch_loop(); });
}

Server::~Server() {
  stop();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->batcher.joinable()) impl_->batcher.join();
}

int Server::bind() {
  Impl& s = *impl_;
  if (s.port >= 0) return s.port;
  if (s.config.port == 0) {
    s.port = s.http.bind_to_any_port(s.config.host);
  } else if (s.http.bind_to_port(s.config.host, s.config.port)) {
    s.port = s.config.port;
  }
  EMBER_CHECK(s.port > 0, "[serve] cannot listen on ", s.config.host, ":", s.config.port,
              " (in use, or not an address of this machine)");
  s.http.widen_backlog();
  return s.port;
}

int Server::port() const { return impl_->port; }

void Server::run() {
  bind();
  Impl& s = *impl_;
  bool listen = false;
  {
    std::lock_guard lock(s.run_mu);
    listen = !s.stop_requested;
    s.listening = listen;
  }
  if (listen) s.http.listen_after_bind();  // returns after stop(), once the handlers are done
  {
    std::lock_guard lock(s.run_mu);
    s.finished = true;
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->batcher.joinable()) impl_->batcher.join();
}

void Server::stop() {
  // Closes the listening socket. Handlers in flight still get their answers: the batcher runs
  // until run() has seen httplib's threads finish, then drains the queue.
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.run_mu);
    s.stop_requested = true;
    if (!s.listening) return;  // run() has not reached httplib's loop: it will not enter it
    // Entering it: wait until httplib runs, so that its stop() is not lost.
    while (!s.http.is_running() && !s.finished) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
    }
  }
  s.http.stop();
}

ServerStats Server::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

namespace {
int g_signal_pipe[2] = {-1, -1};

// Runs in whichever thread the signal lands on: only an async-signal-safe write.
void on_stop_signal(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);
}
}  // namespace

void run_until_signal(Server& server) {
  EMBER_CHECK(pipe(g_signal_pipe) == 0, "[serve] cannot make the pipe that carries SIGTERM");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_term {
  }, old_int{};
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGINT, &action, &old_int);
  std::thread waiter([&server] {
    char byte = 0;
    while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    server.stop();  // on a signal, or when run() below ended first (its write)
  });
  // However run() ends (an error too), the waiter is woken and joined and the handlers restored.
  struct Cleanup {
    std::thread& waiter;
    struct sigaction old_term, old_int;
    ~Cleanup() {
      on_stop_signal(0);
      waiter.join();
      sigaction(SIGTERM, &old_term, nullptr);
      sigaction(SIGINT, &old_int, nullptr);
      close(g_signal_pipe[0]);
      close(g_signal_pipe[1]);
    }
  } cleanup{waiter, old_term, old_int};
  server.run();
}

}  // namespace ember::serve
