// gradwire-ps-server --metrics scraped by a real Prometheus server (Debian's prometheus package)
// on loopback: the server process, a Prometheus with a temporary configuration scraping it every
// second, a trainer's calls (a table created, lookups, pushes, steps), then Prometheus's query API
// asked until the samples arrive (a deadline, no fixed sleeps). Both processes are stopped at the
// end (killed if they do not stop). Skipped without the prometheus binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "../launch/test_support.h"
#include "../rpc/http_get.h"
#include "../support/rank_threads.h"
#include "gradwire/ps/client.h"
#include "server_metrics_support.h"

namespace gradwire::ps {
namespace server_metrics_prometheus_test {  // not anonymous: unity batches

using namespace std::chrono_literals;
using launch::testing::Child;
using launch::testing::read_file;
using launch::testing::TempDir;
using launch::testing::wait_until;

constexpr char kToken[] = "prometheus-test-token";

// The text after `prefix` on the line of `text` that has it, up to the line's end ("" if none).
std::string after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return {};
  const size_t end = text.find('\n', at);
  if (end == std::string::npos) return {};
  return text.substr(at + prefix.size(), end - at - prefix.size());
}

// `query` percent-encoded for a URL's query string.
std::string url_encoded(const std::string& query) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (const unsigned char c : query) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kHex[c >> 4];
      encoded += kHex[c & 15];
    }
  }
  return encoded;
}

// Stops `child` with SIGTERM and waits up to 10 s (its destructor kills it otherwise).
void stop(Child& child) {
  ::kill(child.pid(), SIGTERM);
  child.wait(10s);
}

TEST(ServerMetricsPrometheus, APrometheusServerScrapesTheServersSamples) {
  const std::string prometheus = testing::find_program("prometheus");
  if (prometheus.empty()) {
    GTEST_SKIP() << "prometheus not found: install Debian's prometheus package (apt-get install "
                    "prometheus; scripts/setup does) to scrape gradwire-ps-server with it";
  }
  TempDir dir;
  std::ofstream(dir.file("token")) << kToken << "\n";
  ::chmod(dir.file("token").c_str(), 0600);

  Child server({GRADWIRE_PS_SERVER_PATH, "--listen", "127.0.0.1:0", "--token-file",
                dir.file("token"), "--metrics", "127.0.0.1:0"},
               dir.file("server.out"), dir.file("server.err"));
  std::string address;
  std::string metrics;
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string out = read_file(dir.file("server.out"));
        address = after(out, "gradwire-ps-server listening on ");
        metrics = after(out, "gradwire-ps-server metrics on http://");
        return !address.empty() && !metrics.empty();
      },
      20s))
      << read_file(dir.file("server.out")) << read_file(dir.file("server.err"));
  ASSERT_EQ(metrics.substr(metrics.size() - 8), "/metrics");
  metrics.resize(metrics.size() - 8);

  std::ofstream(dir.file("prometheus.yml")) << "global:\n"
                                               "  scrape_interval: 1s\n"
                                               "  evaluation_interval: 1s\n"
                                               "scrape_configs:\n"
                                               "  - job_name: gradwire-ps\n"
                                               "    scrape_interval: 1s\n"
                                               "    scrape_timeout: 1s\n"
                                               "    static_configs:\n"
                                               "      - targets: ['"
                                            << metrics << "']\n";
  const std::string web = "127.0.0.1:" + std::to_string(gradwire::testing::free_port());
  Child scraper({prometheus, "--config.file=" + dir.file("prometheus.yml"),
                 "--storage.tsdb.path=" + dir.file("tsdb"), "--web.listen-address=" + web,
                 "--log.level=warn"},
                dir.file("prometheus.out"), dir.file("prometheus.err"));

  // A trainer: a sync table created, then three steps of lookups and pushes.
  ClientOptions options;
  options.servers = std::vector<std::string>{address};
  options.token = kToken;
  options.rank = 0;
  options.world_size = 1;
  {
    const auto client = connect(options);
    TableConfig table;
    table.name = "emb";
    table.num_rows = 16;
    table.dim = 4;
    table.mode = UpdateMode::kSync;
    table.num_trainers = 1;
    client->create_table(table);
    for (int step = 0; step < 3; ++step) {
      const at::Tensor ids = at::arange(4, at::kLong) * (step + 1);
      client->lookup("emb", ids);
      client->push("emb", ids, at::ones({4, 4}));
      client->step();
    }
  }

  // Prometheus's answer to `query` once it holds `value` for it (60 s at most: it scrapes every
  // second once it started).
  const auto queried = [&](const std::string& query, const std::string& value) {
    std::string body;
    const bool found = wait_until(
        [&] {
          body = gradwire::testing::http_body(
              gradwire::testing::http_get(web, "/api/v1/query?query=" + url_encoded(query)));
          return body.find("\"status\":\"success\"") != std::string::npos &&
                 body.find(",\"" + value + "\"]") != std::string::npos;
        },
        60s);
    return found ? std::string() : "no " + value + " for " + query + ": " + body;
  };
  EXPECT_EQ(queried("up{job=\"gradwire-ps\"}", "1"), "") << read_file(dir.file("prometheus.err"));
  EXPECT_EQ(queried("gradwire_ps_step_calls_total{table=\"emb\",applied=\"true\"}", "3"), "");
  EXPECT_EQ(queried("gradwire_ps_table_step{table=\"emb\"}", "3"), "");
  EXPECT_EQ(queried("sum(gradwire_ps_batch_parts_total{part=\"lookup\"})", "3"), "");
  EXPECT_EQ(queried("gradwire_ps_requests_total{method=\"CreateTable\",transport=\"grpc\"}", "1"),
            "");
  EXPECT_EQ(queried("sum(gradwire_ps_request_duration_seconds_count{method=\"Batch\"})", "9"), "");
  // The scrape itself went well: Prometheus read every sample.
  EXPECT_EQ(queried("scrape_samples_scraped{job=\"gradwire-ps\"} > bool 100", "1"), "");

  stop(scraper);
  stop(server);
}

}  // namespace server_metrics_prometheus_test
}  // namespace gradwire::ps
