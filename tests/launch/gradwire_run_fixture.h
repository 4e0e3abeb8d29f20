// The fixture of the gradwire-run executable's tests (gradwire_run_test.cpp,
// gradwire_run_servers_test.cpp): running gradwire-run as a child of the test with every wait
// bounded, its output in files, and the workers' pids for cleanup.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_support.h"

namespace gradwire::launch::testing {

class GradwireRunTest : public ::testing::Test {
 protected:
  // Runs gradwire-run with `args` to completion (at most 30 s); returns its exit status.
  int run(const std::vector<std::string>& args) {
    std::vector<std::string> argv{GRADWIRE_RUN_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    Child child(argv, dir_.file("stdout"), dir_.file("stderr"));
    const std::optional<int> status = child.wait(30s);
    if (!status) {
      ADD_FAILURE() << "gradwire-run did not exit within 30 s";
      return -1;
    }
    if (!WIFEXITED(*status)) {
      ADD_FAILURE() << "gradwire-run did not exit normally, status " << *status;
      return -1;
    }
    return WEXITSTATUS(*status);
  }
  std::string out() const { return read_file(dir_.file("stdout")); }
  std::string err() const { return read_file(dir_.file("stderr")); }

  // Starts gradwire-run with 2 workers that run the shell commands `first`, write their pid to
  // DIR/pid<rank> and then run `then`.
  std::unique_ptr<Child> start_two_workers(const std::string& then,
                                           const std::string& grace_period = "3",
                                           const std::string& first = "") {
    const std::string script = first + "echo $$ > " + dir_.path() + "/pid$RANK; " + then;
    return std::make_unique<Child>(
        std::vector<std::string>{GRADWIRE_RUN_PATH, "--nproc-per-node", "2", "--grace-period",
                                 grace_period, "/bin/sh", "-c", script},
        dir_.file("stdout"), dir_.file("stderr"));
  }
  std::vector<pid_t> worker_pids() {
    std::vector<pid_t> pids;
    for (int rank = 0; rank < 2; ++rank) {
      pids.push_back(wait_for_pid_file(dir_.file("pid" + std::to_string(rank))));
    }
    worker_pids_ = pids;
    return pids;
  }
  void TearDown() override { kill_leftovers(worker_pids_); }

  TempDir dir_;
  std::vector<pid_t> worker_pids_;
};

}  // namespace gradwire::launch::testing
