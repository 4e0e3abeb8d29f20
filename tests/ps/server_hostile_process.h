// The fixture of issue 37's demonstrations against a real gradwire-ps-server process
// (server_hostile_process_test.cpp, server_hostile_process_limits_test.cpp): a server started
// with small caps on its command line, a victim sync table trained by a well-behaved trainer
// first, what /proc/PID/status says of the server, raw requests, and SIGTERM with a stopwatch.
#pragma once

#include <grpcpp/client_context.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "../launch/test_support.h"
#include "ps/messages/service_messages.h"
#include "rpc/wire.h"
#include "server_test_support.h"

namespace gradwire::ps::server_hostile_process_test {

using namespace std::chrono_literals;
using testing::push_request;
using testing::ServerClient;
using testing::table_config;

inline constexpr char kHost[] = "hostile-process-test-host";
inline constexpr int64_t kMiB = int64_t{1} << 20;
// The caps on the server's command line.
// kRegionCap lets a call channel (a 4 KiB header and four 1 MiB slots) be mapped.
inline constexpr int64_t kRegionCap = 5 * kMiB, kProcessCap = 8 * kMiB, kSharedCap = 12 * kMiB;
inline constexpr int64_t kPendingCap = kMiB, kTotalPendingCap = 3 * kMiB / 2;
inline constexpr int kMaxWaiting = 8;

// What /proc/PID/status says of a process (kB; threads).
struct Usage {
  int64_t size_kb = -1, rss_kb = -1, hwm_kb = -1, threads = -1;
};

inline Usage usage_of(pid_t pid) {
  Usage usage;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t value = -1;
    fields >> key >> value;
    if (key == "VmSize:") usage.size_kb = value;
    if (key == "VmRSS:") usage.rss_kb = value;
    if (key == "VmHWM:") usage.hwm_kb = value;
    if (key == "Threads:") usage.threads = value;
  }
  return usage;
}

// The figures for the record (issue 37's closing note).
inline void print(const std::string& what, const Usage& before, const Usage& after) {
  std::cout << "[hostile] " << what << ": VmSize " << before.size_kb << " -> " << after.size_kb
            << " kB, VmRSS " << before.rss_kb << " -> " << after.rss_kb << " kB, VmHWM "
            << before.hwm_kb << " -> " << after.hwm_kb << " kB, Threads " << before.threads
            << " -> " << after.threads << std::endl;
}

inline bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

inline at::Tensor ids(const std::vector<int64_t>& values) { return testing::ids_tensor(values); }

inline v1::LookupRequest lookup_request(const std::string& table, const at::Tensor& ids) {
  v1::LookupRequest request;
  request.set_table(table);
  rpc::encode_tensor(ids, request.mutable_ids(), "ids");
  return request;
}

// A refusal with `code` whose message says `part` (the limit, its flag, or why).
inline ::testing::AssertionResult refused(const grpc::Status& status, grpc::StatusCode code,
                                          const std::string& part) {
  if (status.error_code() == code && status.error_message().find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "status " << status.error_code() << " '"
                                       << status.error_message() << "', expected code " << code
                                       << " naming '" << part << "'";
}

// One server per test; the Child is SIGKILLed and reaped if a test ends before stop().
class HostileProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GRADWIRE_TOKEN");
    ::unsetenv("GRADWIRE_JOB_TOKEN");
    if (const char* old = std::getenv("GRADWIRE_HOST_ID")) old_host_ = old;
    ::setenv("GRADWIRE_HOST_ID", kHost, 1);  // the server's shared host, inherited
    std::ofstream(dir_.file("token")) << testing::kToken << "\n";
    ::chmod(dir_.file("token").c_str(), 0600);
    const auto flag = [](int64_t value) { return std::to_string(value); };
    child_ = std::make_unique<launch::testing::Child>(
        std::vector<std::string>{
            GRADWIRE_PS_SERVER_PATH, "--listen", "127.0.0.1:0", "--token-file", dir_.file("token"),
            "--max-message-bytes", flag(kMiB), "--max-pending-bytes", flag(kPendingCap),
            "--max-total-pending-bytes", flag(kTotalPendingCap), "--max-shared-region-bytes",
            flag(kRegionCap), "--max-shared-process-bytes", flag(kProcessCap),
            "--max-shared-bytes", flag(kSharedCap), "--max-waiting-steps", flag(kMaxWaiting)},
        dir_.file("out"), dir_.file("err"));
    constexpr char kListening[] = "gradwire-ps-server listening on ";
    launch::testing::wait_until(
        [&] {
          const std::string text = launch::testing::read_file(dir_.file("out"));
          const size_t at = text.find(kListening), end = text.find('\n', at);
          if (at == std::string::npos || end == std::string::npos) return false;
          address_ = text.substr(at + sizeof(kListening) - 1, end - at - (sizeof(kListening) - 1));
          return true;
        },
        20s);
    ASSERT_FALSE(address_.empty()) << launch::testing::read_file(dir_.file("err"));
    client_ = std::make_unique<ServerClient>(address_);
    ASSERT_TRUE(client_->create(victim_).ok());
    for (int64_t step = 0; step < 3; ++step) {
      const at::Tensor grads = at::arange(32, at::kFloat).reshape({4, 8}).mul_(0.01 * (step + 1));
      ASSERT_TRUE(client_->push("victim", 0, step, ids({1, 5, 5, 9}), grads).ok());
      ASSERT_TRUE(client_->step("victim", 0, step).ok());
    }
    victim_rows_ = client_->rows("victim", at::arange(victim_.num_rows, at::kLong));
  }

  void TearDown() override {
    child_.reset();  // SIGKILL unless stop() reaped it
    if (old_host_.empty()) {
      ::unsetenv("GRADWIRE_HOST_ID");
    } else {
      ::setenv("GRADWIRE_HOST_ID", old_host_.c_str(), 1);
    }
  }

  pid_t pid() const { return child_->pid(); }
  Usage usage() const { return usage_of(pid()); }
  // Resets VmHWM to the current VmRSS: VmHWM afterwards is the peak since.
  void reset_peak() const {
    std::ofstream("/proc/" + std::to_string(pid()) + "/clear_refs") << "5";
  }

  // The victim's rows are bit-for-bit those trained, and it is still at step 3.
  void expect_victim_unchanged() {
    EXPECT_TRUE(same_bits(client_->rows("victim", at::arange(victim_.num_rows, at::kLong)),
                          victim_rows_))
        << "the victim table changed";
    v1::CreateTableResponse again;
    EXPECT_TRUE(client_->create(victim_, 0, 1, &again).ok());
    EXPECT_FALSE(again.created());
    EXPECT_EQ(again.step(), 3);
  }

  // CreateTable as a trainer on the server's host: its host identity and its probe.
  grpc::Status create_probed(const TableConfig& config, const v1::SharedBytes& probe,
                             v1::CreateTableResponse* response) {
    return client_->create_probed(config, kHost, probe, response);
  }

  // SIGTERM: the server exits with status 0 within `bound`.
  void stop(std::chrono::milliseconds bound) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(pid(), SIGTERM), 0);
    const std::optional<int> status = child_->wait(bound);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    std::cout << "[hostile] exit after SIGTERM: " << took.count() << " ms" << std::endl;
    ASSERT_TRUE(status.has_value()) << "still running " << bound.count() << " ms after SIGTERM";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << launch::testing::read_file(dir_.file("err"));
  }

  launch::testing::TempDir dir_;
  std::string old_host_;
  std::unique_ptr<launch::testing::Child> child_;
  std::string address_;
  std::unique_ptr<ServerClient> client_;
  const TableConfig victim_ = table_config("victim", 64, 8, UpdateMode::kSync, 1);
  at::Tensor victim_rows_;
};

}  // namespace gradwire::ps::server_hostile_process_test
