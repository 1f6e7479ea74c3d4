// `ember serve` as a process: it prints where it listens, answers, and on SIGTERM finishes the
// request in flight before it exits with status 0.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <regex>
#include <thread>

#include "cli_util.hpp"

namespace ember::cli_testing {
namespace {

// The port from "listening on http://127.0.0.1:PORT", waiting up to 30 s for the line.
int port_of(const std::string& log_dir) {
  const std::regex line("listening on http://127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 300; ++i) {
    std::smatch m;
    const std::string out = read_text(log_dir + "/stdout");
    if (std::regex_search(out, m, line)) return std::stoi(m[1].str());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

TEST(CliServe, SigtermFinishesTheRequestInFlightThenExits) {
  const std::string dir = fresh_dir("serve");
  const std::string weights = dir + "/model.safetensors";
  save(models::FashionCnn(), weights);
  const pid_t pid = start_ember({"serve", weights, "--port", "0"}, dir);
  const int port = port_of(dir);
  ASSERT_GT(port, 0) << read_text(dir + "/stderr");
  httplib::Client c("127.0.0.1", port);
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  int status = 0;
  std::thread client([&] {
    httplib::Client in_flight("127.0.0.1", port);
    in_flight.set_read_timeout(30, 0);
    // 4,000 images of zeros as raw float32 (12.5 MB): the model takes a while over them, so the
    // request is still in flight at the SIGTERM.
    const std::string body(4000 * 784 * 4, '\0');
    auto r = in_flight.Post("/v1/predict/raw", body, "application/octet-stream");
    status = r ? r->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  kill(pid, SIGTERM);
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(wait_for(pid), 0) << read_text(dir + "/stderr");
  EXPECT_NE(read_text(dir + "/stdout").find("stopped after 1 requests in 1 batches"),
            std::string::npos)
      << read_text(dir + "/stdout");
}

TEST(CliServe, ABusyPortIsAnErrorNamingIt) {
  const std::string dir = fresh_dir("serve_busy");
  const std::string weights = dir + "/model.safetensors";
  save(models::FashionCnn(), weights);
  const pid_t first = start_ember({"serve", weights, "--port", "0"}, dir);
  const int port = port_of(dir);
  ASSERT_GT(port, 0);
  const Result r = ember({"serve", weights, "--port", std::to_string(port)});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.err;
  kill(first, SIGTERM);
  EXPECT_EQ(wait_for(first), 0);
}

}  // namespace
}  // namespace ember::cli_testing
