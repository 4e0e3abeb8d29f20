// The fixture the launcher's server tests share (servers_test.cpp, grouped_servers_test.cpp):
// fake servers (fake_ps_server.cpp) and /bin/sh trainers under run_workers, their output in files,
// processes a failed test left behind killed.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "test_support.h"

namespace gradwire::launch::testing {

class ServersFixture : public ::testing::Test {
 protected:
  // `servers` fake servers (FAKE_PS_SERVER_PATH and `server_args`) in `processes` processes (0:
  // automatic), and `nproc` trainers running `script` under /bin/sh with DIR (this test's
  // directory) and FAKE (the fake server) set; output captured in files of `dir_`.
  LaunchOptions server_options(const std::string& script, int nproc, int servers, int processes,
                               const std::vector<std::string>& server_args) {
    LaunchOptions options;
    options.nproc_per_node = nproc;
    options.command = {"/bin/sh", "-c", script, "trainer"};
    options.servers = servers;
    options.server_processes = processes;
    options.server_command = {FAKE_PS_SERVER_PATH};
    options.server_command.insert(options.server_command.end(), server_args.begin(),
                                  server_args.end());
    options.stdout_fd = out_.get();
    options.stderr_fd = err_.get();
    options.grace_period = std::chrono::milliseconds(2000);
    options.extra_env["DIR"] = dir_.path();
    options.extra_env["FAKE"] = FAKE_PS_SERVER_PATH;
    return options;
  }
  std::string out() const { return read_file(dir_.file("stdout")); }
  std::string err() const { return read_file(dir_.file("stderr")); }

  void TearDown() override { kill_leftovers(spawned_); }

  TempDir dir_;
  UniqueFd out_{::open(dir_.file("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  UniqueFd err_{::open(dir_.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  std::vector<pid_t> spawned_;  // killed in TearDown should a test fail half-way
};

}  // namespace gradwire::launch::testing
