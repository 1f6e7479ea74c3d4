// The model server (ember/serve/serve.hpp) over real HTTP on a free port: answers against the
// model run in the process, every malformed request a 4xx with a JSON message and the server
// still healthy after them, dynamic batching that hands each request its own rows, a full queue
// and a late answer as 503s, a failing model as a 500, and stop() answering requests in flight.
// `ember serve` itself, stopped by SIGTERM mid-request: tests/serve/serve_cli_test.cpp.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/serve/serve.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

using namespace ember;
using Json = nlohmann::json;

namespace {

// y = x * 2 + row sum: every row's answer depends on that row alone, so a mix-up shows.
std::shared_ptr<serve::Servable> doubling(std::chrono::milliseconds delay = {},
                                          std::atomic<int>* calls = nullptr, bool fail = false) {
  return serve::make_servable({"x", DType::f32, {3}}, {"y", DType::f32, {3}}, Device::cpu(),
                              [delay, calls, fail](const DynTensor& x) {
                                if (calls) ++*calls;
                                std::this_thread::sleep_for(delay);
                                EMBER_CHECK(!fail, "[doubling] asked to fail");
                                return x * 2.0 + sum(x, {1}, true);
                              });
}

// A server on a free port, run by a thread for the test's life.
struct Running {
  serve::Server server;
  std::thread thread;
  int port;
  Running(std::shared_ptr<serve::Servable> model, serve::ServerConfig config)
      : server(std::move(model), with_any_port(config)), port(server.bind()) {
    thread = std::thread([this] { server.run(); });
  }
  ~Running() {
    server.stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  }
  static serve::ServerConfig with_any_port(serve::ServerConfig c) {
    c.port = 0;
    return c;
  }
};

std::string rows_json(const std::vector<std::vector<float>>& rows, const std::string& name = "x") {
  return Json{{"inputs", {{name, rows}}}}.dump();
}

std::vector<float> want_row(const std::vector<float>& r) {
  const float s = r[0] + r[1] + r[2];
  return {r[0] * 2 + s, r[1] * 2 + s, r[2] * 2 + s};
}

void expect_error(const httplib::Result& r, int status, const std::string& part) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  const Json body = Json::parse(r->body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << r->body;
  EXPECT_NE(body["error"].get<std::string>().find(part), std::string::npos)
      << body["error"] << "\nexpected: " << part;
}

// For a body the server refuses unread (413, 411): it answers and closes the connection, and the
// client, still sending, may see the close as a reset before it reads the answer. Either is fine;
// each such request gets a connection of its own, so that no later one finds it closed.
void expect_refusal(const httplib::Result& r, int status, const std::string& part) {
  if (r) expect_error(r, status, part);
}

TEST(Serve, AnswersJsonAndRawRequests) {
  Running s(doubling(), {});
  httplib::Client c = s.client();
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "{\"status\":\"ok\"}");
  const Json model = Json::parse(c.Get("/v1/model")->body);
  EXPECT_EQ(model["inputs"][0]["shape"], Json::array({-1, 3}));

  const std::vector<std::vector<float>> rows{{1, 2, 3}, {-0.5f, 0.25f, 4}};
  auto r = c.Post("/v1/predict", rows_json(rows), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json y = Json::parse(r->body)["outputs"]["y"];
  ASSERT_EQ(y.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(y[i].get<std::vector<float>>(), want_row(rows[i]));

  const std::vector<float> flat{1, 2, 3, -0.5f, 0.25f, 4};
  const std::string bytes(reinterpret_cast<const char*>(flat.data()), flat.size() * 4);
  for (const char* shape : {"2,3", ""}) {  // X-Shape, or the example count from the length
    httplib::Headers h;
    if (*shape) h.emplace("X-Shape", shape);
    auto raw = c.Post("/v1/predict/raw", h, bytes, "application/octet-stream");
    ASSERT_TRUE(raw);
    ASSERT_EQ(raw->status, 200) << raw->body;
    EXPECT_EQ(raw->get_header_value("X-Shape"), "2,3");
    EXPECT_EQ(raw->get_header_value("X-Dtype"), "float32");
    ASSERT_EQ(raw->body.size(), 24u);
    std::vector<float> got(6);
    std::memcpy(got.data(), raw->body.data(), 24);
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(got[i], want_row(rows[i / 3])[i % 3]);
  }
}

TEST(Serve, FashionModelAnswersAsTheModelDoes) {
  manual_seed(11);
  const models::FashionCnn model;
  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_serve_fashion.safetensors").string();
  save(model, path);
  Running s(serve::fashion_servable(path, Device::cpu()), {});
  const DynTensor x = randn(Shape{2, 1, 28, 28}, DType::f32);
  const std::vector<float> flat = x.to_vector<float>();
  httplib::Headers h{{"X-Shape", "2,1,28,28"}, {"X-Dtype", "float32"}};
  auto r = s.client().Post("/v1/predict/raw", h,
                           std::string(reinterpret_cast<const char*>(flat.data()), flat.size() * 4),
                           "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<float> got(20);
  ASSERT_EQ(r->body.size(), 80u);
  std::memcpy(got.data(), r->body.data(), 80);
  EXPECT_EQ(got, model.forward(Tensor<4>(x)).to_vector<float>());
  std::remove(path.c_str());
}

TEST(Serve, MalformedRequestsAre4xxWithAMessageAndTheServerStaysUp) {
  serve::ServerConfig config;
  config.max_body_bytes = 4096;
  Running s(doubling(), config);
  httplib::Client c = s.client();
  auto post = [&](const std::string& body) {
    return c.Post("/v1/predict", body, "application/json");
  };
  expect_error(post("{\"inputs\": {\"x\": [[1, 2, 3]]"), 400, "not valid JSON");
  expect_error(post("[1, 2, 3]"), 400, "must be a JSON object");
  expect_error(post("{\"inputs\": {}}"), 400, "input 'x' is missing");
  expect_error(post("{\"inputs\": {\"x\": [[1, 2, 3]], \"z\": [1]}}"), 400, "no input named 'z'");
  expect_error(post("{\"inputs\": {\"x\": [[1, 2]]}}"), 400, "has shape [1, 2], expected [any, 3]");
  expect_error(post("{\"inputs\": {\"x\": [1, 2, 3]}}"), 400, "has shape [3]");
  expect_error(post("{\"inputs\": {\"x\": []}}"), 400, "has shape [0]");
  expect_error(post("{\"inputs\": {\"x\": [[1, 2, 3], [4, 5]]}}"), 400, "not rectangular");
  expect_error(post("{\"inputs\": {\"x\": [[1, \"2\", 3]]}}"), 400, "holds string");
  expect_error(post("{\"inputs\": {\"x\": [[1, null, 3]]}}"), 400, "holds null");
  expect_refusal(s.client().Post("/v1/predict", std::string(5000, ' '), "application/json"), 413,
                 "larger than the limit of 4096 bytes");
  expect_refusal(
      s.client().Post("/v1/predict", std::string(9000, ' '), "application/x-www-form-urlencoded"),
      413, "limited to 8192 bytes: send application/json");
  httplib::Headers h{{"X-Shape", "2,3"}};
  expect_error(c.Post("/v1/predict/raw", h, std::string(20, '\0'), "application/octet-stream"), 400,
               "the body holds 20 bytes; [2, 3] of float32 takes 24");
  expect_error(c.Post("/v1/predict/raw", std::string(13, '\0'), "application/octet-stream"), 400,
               "not a whole number of 12-byte examples");
  httplib::Headers bad_shape{{"X-Shape", "2;3"}};
  expect_error(
      c.Post("/v1/predict/raw", bad_shape, std::string(24, '\0'), "application/octet-stream"), 400,
      "X-Shape '2;3' is not sizes separated by commas");
  httplib::Headers bad_dtype{{"X-Dtype", "int64"}};
  expect_error(
      c.Post("/v1/predict/raw", bad_dtype, std::string(24, '\0'), "application/octet-stream"), 415,
      "input 'x' is float32, the body says X-Dtype: int64");
  // Deep nesting where a number belongs is named by its type (no dump of it, which recurses).
  expect_error(post("{\"inputs\": {\"x\": [[1, " + std::string(1500, '[') + std::string(1500, ']') +
                    ", 3]]}}"),
               400, "holds array where a number belongs");
  httplib::Headers zero{{"X-Shape", "4,0"}};
  expect_error(c.Post("/v1/predict/raw", zero, std::string(), "application/octet-stream"), 400,
               "has shape [4, 0]");
  httplib::Headers huge{{"X-Shape", "9223372036854775807,3"}};
  expect_error(c.Post("/v1/predict/raw", huge, std::string(12, '\0'), "application/octet-stream"),
               400, "takes more than int64 counts");
  // Bodies Debian's httplib would read past the limit are refused before they are read.
  expect_refusal(s.client().Post(
                     "/v1/predict",
                     [](size_t, httplib::DataSink& sink) {
                       sink.write("{\"inputs\": {}}", 14);
                       sink.done();
                       return true;
                     },
                     "application/json"),
                 411, "chunked bodies are not taken");
  expect_error(c.Get("/v1/nothing"), 404, "no endpoint GET /v1/nothing");
  expect_error(
      c.Post("/v1/predict/raw?output=z", std::string(12, '\0'), "application/octet-stream"), 400,
      "no output 'z'");
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_GE(s.server.stats().rejected, 21);
  EXPECT_EQ(s.server.stats().requests, 0);
}

TEST(Serve, IntegerInputsTakeIntegersOnly) {
  Running s(serve::make_servable({"ids", DType::i64, {2}}, {"y", DType::i64, {2}}, Device::cpu(),
                                 [](const DynTensor& ids) { return ids + 1; }),
            {});
  httplib::Client c = s.client();
  expect_error(c.Post("/v1/predict", rows_json({{1.5f, 2}}, "ids"), "application/json"), 400,
               "takes integers, got 1.5");
  auto r = c.Post("/v1/predict", "{\"inputs\": {\"ids\": [[41, 9007199254740991]]}}",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body)["outputs"]["y"][0], Json::array({42, int64_t{9007199254740992}}));
}

TEST(Serve, ConcurrentRequestsRunAsBatchesAndGetTheirOwnRows) {
  serve::ServerConfig config;
  config.max_batch = 8;
  config.max_wait = std::chrono::milliseconds(50);
  std::atomic<int> calls{0};
  // A run takes 20 ms: requests that arrive meanwhile wait for the next batch together.
  Running s(doubling(std::chrono::milliseconds(20), &calls), config);
  constexpr int kClients = 16;
  std::vector<std::thread> clients;
  std::atomic<int> right{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const std::vector<float> row{float(i), float(i) * 0.5f, -float(i)};
      auto r = s.client().Post("/v1/predict", rows_json({row}), "application/json");
      if (r && r->status == 200 &&
          Json::parse(r->body)["outputs"]["y"][0].get<std::vector<float>>() == want_row(row)) {
        ++right;
      } else {
        ADD_FAILURE() << "client " << i << ": "
                      << (r ? std::to_string(r->status) + " " + r->body
                            : httplib::to_string(r.error()));
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(right, kClients);
  const serve::ServerStats st = s.server.stats();
  EXPECT_EQ(st.requests, kClients);
  EXPECT_EQ(st.examples, kClients);
  EXPECT_EQ(st.batches, calls.load());
  EXPECT_LE(st.batches, kClients / 2) << "few requests shared a run";
  std::cout << "[ batching   ] " << kClients << " concurrent requests ran in " << st.batches
            << " batches\n";
}

TEST(Serve, AFullQueueAndALateAnswerAre503s) {
  {
    serve::ServerConfig config;
    config.max_queue = 1;
    config.max_batch = 1;
    config.max_wait = std::chrono::microseconds(0);
    Running s(doubling(std::chrono::milliseconds(300)), config);
    std::vector<int> statuses(4, 0);
    std::vector<std::thread> clients;
    for (int i = 0; i < 4; ++i) {
      clients.emplace_back([&, i] {
        auto r = s.client().Post("/v1/predict", rows_json({{1, 2, 3}}), "application/json");
        statuses[static_cast<size_t>(i)] = r ? r->status : -1;
        if (r && r->status == 503) {
          EXPECT_NE(r->body.find("the queue is full"), std::string::npos);
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (std::thread& t : clients) t.join();
    EXPECT_GE(std::count(statuses.begin(), statuses.end(), 503), 1);
    EXPECT_GE(std::count(statuses.begin(), statuses.end(), 200), 2);
  }
  serve::ServerConfig config;
  config.timeout = std::chrono::milliseconds(100);
  Running s(doubling(std::chrono::milliseconds(600)), config);
  expect_error(s.client().Post("/v1/predict", rows_json({{1, 2, 3}}), "application/json"), 503,
               "no answer within 100 ms");
}

TEST(Serve, AFailingModelIsA500NamingTheError) {
  Running s(doubling({}, nullptr, true), {});
  expect_error(s.client().Post("/v1/predict", rows_json({{1, 2, 3}}), "application/json"), 500,
               "[doubling] asked to fail");
}

TEST(Serve, StopAnswersTheRequestsInFlight) {
  serve::ServerConfig config;
  config.port = 0;
  std::atomic<int> calls{0};
  serve::Server server(doubling(std::chrono::milliseconds(400), &calls), config);
  const int port = server.bind();
  std::thread run([&] { server.run(); });
  int status = 0;
  std::thread client([&] {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Post("/v1/predict", rows_json({{1, 2, 3}}), "application/json");
    status = r ? r->status : -1;
  });
  for (int i = 0; i < 1000 && calls == 0; ++i) {  // until the request is in the model
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(calls, 1);
  const auto start = std::chrono::steady_clock::now();
  server.stop();
  run.join();
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  httplib::Client after("127.0.0.1", port);
  EXPECT_FALSE(after.Get("/healthz")) << "still answering after stop()";
}

}  // namespace
