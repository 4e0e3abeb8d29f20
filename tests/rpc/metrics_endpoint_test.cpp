// The metrics endpoint (rpc/metrics_endpoint.h): GET /metrics answers the rendered text with
// Prometheus's content type; other paths are 404, other methods 405, oversize heads 431,
// malformed ones 400; a silent client does not hold the others; port 0 picks a port; stop()
// closes the port and leaves no thread behind.
#include "rpc/metrics_endpoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>

#include "gradwire/common/error.h"
#include "http_get.h"

namespace gradwire::rpc {
namespace {

using gradwire::testing::connect_to;
using gradwire::testing::http_body;
using gradwire::testing::http_exchange;
using gradwire::testing::http_get;

int thread_count() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(MetricsEndpoint, AnswersRequestLines) {
  EXPECT_EQ(answer_http_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").status, 200);
  EXPECT_EQ(answer_http_request("GET /metrics?x=1 HTTP/1.0\r\n\r\n").status, 200);
  EXPECT_EQ(answer_http_request("GET / HTTP/1.1\r\n\r\n").status, 404);
  EXPECT_EQ(answer_http_request("GET /metricsx HTTP/1.1\r\n\r\n").status, 404);
  EXPECT_EQ(answer_http_request("POST /metrics HTTP/1.1\r\n\r\n").status, 405);
  EXPECT_EQ(answer_http_request("DELETE /metrics HTTP/1.1\r\n\r\n").status, 405);
  EXPECT_EQ(answer_http_request("GET\r\n\r\n").status, 400);
  EXPECT_EQ(answer_http_request("GET /metrics FTP/1.0\r\n\r\n").status, 400);
}

TEST(MetricsEndpoint, ServesTheTextAndRefusesTheRest) {
  const int threads_before = thread_count();
  std::atomic<int> renders{0};
  {
    MetricsEndpoint endpoint("127.0.0.1:0", [&renders] {
      ++renders;
      return std::string("# HELP up Up.\n# TYPE up gauge\nup 1\n");
    });
    ASSERT_TRUE(starts_with(endpoint.address(), "127.0.0.1:"));
    EXPECT_NE(endpoint.address(), "127.0.0.1:0");

    const std::string ok = http_get(endpoint.address());
    EXPECT_TRUE(starts_with(ok, "HTTP/1.1 200 OK\r\n")) << ok;
    EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
              std::string::npos);
    EXPECT_EQ(http_body(ok), "# HELP up Up.\n# TYPE up gauge\nup 1\n");
    EXPECT_EQ(renders.load(), 1);

    EXPECT_TRUE(starts_with(http_get(endpoint.address(), "/"), "HTTP/1.1 404 "));
    const std::string post = http_exchange(
        endpoint.address(), "POST /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nup 2");
    EXPECT_TRUE(starts_with(post, "HTTP/1.1 405 ")) << post;
    EXPECT_NE(post.find("Allow: GET\r\n"), std::string::npos);
    EXPECT_TRUE(starts_with(http_exchange(endpoint.address(), "HELLO\r\n\r\n"), "HTTP/1.1 400 "));
    const std::string huge =
        "GET /metrics HTTP/1.1\r\nX: " + std::string(kMaxHttpRequestBytes + 10, 'a') + "\r\n\r\n";
    EXPECT_TRUE(starts_with(http_exchange(endpoint.address(), huge), "HTTP/1.1 431 "));
    EXPECT_EQ(renders.load(), 1);  // only GET /metrics renders

    // A client that connects and says nothing does not hold the next scrape.
    const int silent = connect_to(endpoint.address());
    ASSERT_GE(silent, 0);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(starts_with(http_get(endpoint.address()), "HTTP/1.1 200 OK"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, kHttpReadTimeout);
    ::close(silent);

    const std::string address = endpoint.address();
    endpoint.stop();
    EXPECT_LT(connect_to(address), 0) << "still accepting after stop()";
  }
  EXPECT_EQ(thread_count(), threads_before);
}

TEST(MetricsEndpoint, BindsWhatItIsGiven) {
  MetricsEndpoint v6("[::1]:0", [] { return std::string(); });
  EXPECT_TRUE(starts_with(v6.address(), "[::1]:"));
  EXPECT_TRUE(starts_with(http_get(v6.address()), "HTTP/1.1 200 OK"));
  EXPECT_THROW(MetricsEndpoint(v6.address(), [] { return std::string(); }), ConfigError);
  EXPECT_THROW(MetricsEndpoint("127.0.0.1:http", [] { return std::string(); }), ConfigError);
  EXPECT_THROW(MetricsEndpoint("::1:0", [] { return std::string(); }), ConfigError);
  MetricsEndpoint bare("0", [] { return std::string(); });
  EXPECT_TRUE(starts_with(bare.address(), "127.0.0.1:"));
}

TEST(MetricsEndpoint, ARenderThatThrowsIsA500) {
  MetricsEndpoint endpoint("127.0.0.1:0", []() -> std::string { throw InvalidArgument("broken"); });
  const std::string answer = http_get(endpoint.address());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 500 ")) << answer;
  EXPECT_EQ(http_body(answer), "broken\n");
}

}  // namespace
}  // namespace gradwire::rpc
