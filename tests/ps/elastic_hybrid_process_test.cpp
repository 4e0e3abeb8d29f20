// The elastic hybrid job (elastic_hybrid_job.h, docs/elastic.md "Parameter servers") as real
// processes: two gradwire-ps-server processes on loopback ports they pick, with a token, and
// `gradwire-run --elastic -n 3 --max-restarts 1` running elastic_hybrid_worker. Trainer 0.1.0
// SIGKILLs itself at the start of a step, or between its DDP allreduce and its parameter-server
// step (the survivors then wait in Client::step() until the membership's wait interrupt sends them
// back); the two others go back to their commit and go on, and the replacement the launcher starts
// (0.1.1) joins at a commit. The job exits 0, and the dense layer and the table's rows rank 0
// printed equal one process trained on the concatenation of the live trainers' batches, step by
// step, following the membership schedule the job printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../launch/test_support.h"
#include "elastic_hybrid_job.h"

namespace gradwire::ps::elastic_hybrid {
namespace {

using namespace std::chrono_literals;
using launch::testing::Child;
using launch::testing::contains;
using launch::testing::read_file;
using launch::testing::TempDir;
using launch::testing::wait_until;

// More steps than the in-process test's kSteps: while two train, each step takes kSlowStepMs, so
// the replacement (a new process loading libtorch) has up to 14 steps, 7 s, to join at a commit,
// however loaded the machine. 18 steps of 3 trainers stay within the sampler's epoch.
constexpr int64_t kJobSteps = 18;
constexpr int kSlowStepMs = 500;
constexpr char kToken[] = "elastic-hybrid-process-test-token";
// Far longer than the job may take: survivors waiting in step() for the dead trainer are woken by
// the membership, not by this timeout (GRADWIRE_TIMEOUT: the client's step timeout).
constexpr auto kStepTimeout = 60s;

// Two gradwire-ps-server processes listening on 127.0.0.1:0 (each prints the port it bound),
// with the token in a file. Destruction stops them: SIGTERM, then SIGKILL after 10 s (Child).
class ServerProcesses {
 public:
  explicit ServerProcesses(const TempDir& dir) {
    const std::string token_file = dir.file("token");
    std::ofstream(token_file) << kToken << "\n";
    ::chmod(token_file.c_str(), 0600);  // a token file others can read is refused
    for (int i = 0; i < 2; ++i) {
      out_.push_back(dir.file("server" + std::to_string(i) + ".out"));
      err_.push_back(dir.file("server" + std::to_string(i) + ".err"));
      servers_.push_back(std::make_unique<Child>(
          std::vector<std::string>{GRADWIRE_PS_SERVER_PATH, "--listen", "127.0.0.1:0",
                                   "--token-file", token_file},
          out_.back(), err_.back()));
    }
    constexpr char kListening[] = "gradwire-ps-server listening on ";
    for (int i = 0; i < 2; ++i) {
      std::string address;
      wait_until(
          [&] {
            const std::string text = read_file(out_[i]);
            const size_t at = text.find(kListening);
            const size_t end = text.find('\n', at);
            if (at == std::string::npos || end == std::string::npos) return false;
            address = text.substr(at + sizeof(kListening) - 1, end - at - (sizeof(kListening) - 1));
            return true;
          },
          30s);
      addresses_.push_back(address);
    }
  }
  ~ServerProcesses() {
    for (const auto& server : servers_) ::kill(server->pid(), SIGTERM);
    for (const auto& server : servers_) server->wait(10s);
    // Child's destructor SIGKILLs and reaps a server that is still there.
  }
  ServerProcesses(const ServerProcesses&) = delete;
  ServerProcesses& operator=(const ServerProcesses&) = delete;

  // Empty when a server did not print its address.
  std::string addresses() const {
    std::string joined;
    for (const std::string& address : addresses_) {
      if (address.empty()) return "";
      joined += (joined.empty() ? "" : ",") + address;
    }
    return joined;
  }
  std::string errors() const {
    std::string text;
    for (size_t i = 0; i < err_.size(); ++i) {
      text += "server " + std::to_string(i) + ": " + read_file(err_[i]);
    }
    return text;
  }

 private:
  std::vector<std::string> out_;
  std::vector<std::string> err_;
  std::vector<std::unique_ptr<Child>> servers_;
  std::vector<std::string> addresses_;
};

struct JobOutput {
  std::optional<int> status;  // gradwire-run's wait status; nullopt when it did not end in time
  std::chrono::steady_clock::duration took{};
  std::string text;                      // gradwire-run's stdout and stderr
  std::map<int64_t, int> world_at_step;  // the last report of each step wins (rollbacks redo)
  std::vector<double> dense;             // weight, then bias
  std::vector<double> rows;              // every row of the table, read back by rank 0
};

std::vector<double> values_of(const std::string& text) {
  std::vector<double> values;
  std::istringstream stream(text);
  for (double value; stream >> value;) values.push_back(value);
  return values;
}

// Reads the worker's "elastic-hybrid:" lines (elastic_hybrid_worker.cpp).
void parse(JobOutput& job) {
  const std::regex step(R"(elastic-hybrid: step (\d+) world (\d+))");
  const std::regex dense(R"(elastic-hybrid: dense(.*))");
  const std::regex rows(R"(elastic-hybrid: rows(.*))");
  std::istringstream lines(job.text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, step)) {
      job.world_at_step[std::stoll(match[1])] = std::stoi(match[2]);
    } else if (std::regex_search(line, match, dense)) {
      job.dense = values_of(match[1].str());
    } else if (std::regex_search(line, match, rows)) {
      job.rows = values_of(match[1].str());
    }
  }
}

// gradwire-run --elastic -n 3 --max-restarts 1 elastic_hybrid_worker with the servers' addresses
// and token in its environment; `death` as the worker takes it. A job still running after 100 s
// gets SIGTERM (gradwire-run stops its workers), then SIGKILL (its workers die with it:
// PR_SET_PDEATHSIG).
JobOutput run_job(const TempDir& dir, const std::string& addresses, const std::string& death) {
  const std::string out = dir.file("job.out");
  const std::string err = dir.file("job.err");
  JobOutput job;
  const auto start = std::chrono::steady_clock::now();
  {
    Child run(
        {"/usr/bin/env", "GRADWIRE_PS_ADDRS=" + addresses, std::string("GRADWIRE_TOKEN=") + kToken,
         "GRADWIRE_TIMEOUT=" + std::to_string(kStepTimeout.count()) + "s",
         "GRADWIRE_RENDEZVOUS_TIMEOUT=30s", GRADWIRE_RUN_PATH, "--elastic", "-n", "3",
         "--max-restarts", "1", "--grace-period", "2s", ELASTIC_HYBRID_WORKER_PATH,
         std::to_string(kJobSteps), death, std::to_string(kSlowStepMs), "3"},
        out, err);
    job.status = run.wait(100s);
    if (!job.status) {
      ::kill(run.pid(), SIGTERM);
      run.wait(10s);
    }
  }
  job.took = std::chrono::steady_clock::now() - start;
  job.text = read_file(out) + read_file(err);
  parse(job);
  return job;
}

class ElasticHybridRun : public ::testing::TestWithParam<const char*> {};

TEST_P(ElasticHybridRun, ATrainerKilledAndAReplacementEqualOneProcess) {
  TempDir dir;
  const ServerProcesses servers(dir);
  ASSERT_FALSE(servers.addresses().empty()) << servers.errors();
  const JobOutput job =
      run_job(dir, servers.addresses(), "0.1.0:" + std::to_string(kDieAt) + ":" + GetParam());
  ASSERT_TRUE(job.status.has_value()) << "the job did not end within 100 s\n" << job.text;
  ASSERT_TRUE(WIFEXITED(*job.status) && WEXITSTATUS(*job.status) == 0)
      << "wait status " << *job.status << "\n"
      << job.text << servers.errors();
  EXPECT_LT(job.took, kStepTimeout / 2) << "the survivors waited for the dead trainer's step\n"
                                        << job.text;

  // The schedule: 3 trainers up to the death, 2 after it, 3 again once the replacement joined.
  EXPECT_TRUE(contains(job.text, "worker 0.1.0")) << job.text;
  EXPECT_TRUE(contains(job.text, "killed by signal 9")) << job.text;
  EXPECT_TRUE(contains(job.text, "a replacement starts")) << job.text;
  EXPECT_TRUE(contains(job.text, "gradwire elastic: 0.1.1 is rank")) << job.text;
  ASSERT_EQ(job.world_at_step.size(), static_cast<size_t>(kJobSteps)) << job.text;
  std::string schedule;
  int steps_of_two = 0;
  for (const auto& [step, world] : job.world_at_step) {
    schedule += " " + std::to_string(step) + ":" + std::to_string(world);
    if (step <= kDieAt) EXPECT_EQ(world, 3) << "step " << step;
    if (step > kDieAt && world == 2) ++steps_of_two;
  }
  SCOPED_TRACE("steps:worlds" + schedule);
  EXPECT_GT(steps_of_two, 0) << "no step trained by the two survivors alone";
  EXPECT_EQ(job.world_at_step.at(kJobSteps), 3) << "the replacement did not join";

  const TableConfig table = make_table();
  const auto [rows, dense] = reference(job.world_at_step, table);
  const at::Tensor expected_dense =
      torch::cat({dense->weight.detach().flatten(), dense->bias.detach().flatten()});
  const at::Tensor expected_rows = rows.flatten();
  ASSERT_EQ(job.dense.size(), static_cast<size_t>(expected_dense.numel())) << job.text;
  ASSERT_EQ(job.rows.size(), static_cast<size_t>(expected_rows.numel())) << job.text;
  for (size_t i = 0; i < job.dense.size(); ++i) {
    EXPECT_NEAR(job.dense[i], expected_dense[i].item<double>(), 1e-5) << "dense parameter " << i;
  }
  for (size_t i = 0; i < job.rows.size(); ++i) {
    EXPECT_NEAR(job.rows[i], expected_rows[i].item<double>(), 1e-5)
        << "row " << i / kDim << ", column " << i % kDim;
  }
  EXPECT_FALSE(rows.allclose(initial_rows(table.initializer, at::arange(kRows, at::kLong), kDim)))
      << "training did not move";
}

INSTANTIATE_TEST_SUITE_P(Deaths, ElasticHybridRun, ::testing::Values("start", "before-server-step"),
                         [](const auto& info) {
                           return std::string(info.param) == "start" ? "AtAStepsStart"
                                                                     : "BeforeItsServerStep";
                         });

}  // namespace
}  // namespace gradwire::ps::elastic_hybrid
