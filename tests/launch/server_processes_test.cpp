// Unit tests of the pure server-process layout (server_processes.h): how many processes host the
// servers, which servers each hosts and how they are named (the validation of
// LaunchOptions::server_processes is with the other options' in server_group_test.cpp).
#include "launch/server_processes.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {
// Named after the file: the unity build puts several test files in one translation unit.
namespace server_processes_test {

int count(int servers, int nproc, int cores, int requested = 0) {
  ServerProcessInputs inputs;
  inputs.servers = servers;
  inputs.nproc_per_node = nproc;
  inputs.cores = cores;
  inputs.requested = requested;
  return server_process_count(inputs);
}

TEST(ServerProcessesTest, OneProcessPerServerWhenTheCoresSuffice) {
  EXPECT_EQ(count(2, 2, 4), 2);
  EXPECT_EQ(count(8, 8, 16), 8);
  EXPECT_EQ(count(1, 1, 2), 1);
  EXPECT_EQ(count(0, 8, 2), 0);  // no servers, no processes
}

TEST(ServerProcessesTest, FewerProcessesWhenServersAndTrainersOutnumberTheCores) {
  EXPECT_EQ(count(8, 8, 2), 1);    // the 2-core machine: 8 trainers, 8 servers
  EXPECT_EQ(count(8, 2, 2), 1);    // no core to spare: still one process
  EXPECT_EQ(count(8, 1, 2), 1);    // one core to spare
  EXPECT_EQ(count(8, 8, 10), 2);   // two cores to spare
  EXPECT_EQ(count(16, 8, 16), 8);  // eight to spare
  EXPECT_EQ(count(4, 2, 5), 3);
  EXPECT_EQ(count(3, 2, 4), 2);
  EXPECT_EQ(count(1, 4, 1), 1);
}

TEST(ServerProcessesTest, RequestedCountWins) {
  EXPECT_EQ(count(8, 8, 2, 8), 8);   // one per server although the cores are few
  EXPECT_EQ(count(8, 2, 64, 1), 1);  // one for all although the cores suffice
  EXPECT_EQ(count(4, 2, 64, 2), 2);
}

TEST(ServerProcessesTest, ServersAreSplitContiguouslyAndEvenly) {
  using Split = std::vector<std::vector<int>>;
  EXPECT_EQ(split_servers(8, 1), (Split{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(split_servers(4, 2), (Split{{0, 1}, {2, 3}}));
  EXPECT_EQ(split_servers(3, 3), (Split{{0}, {1}, {2}}));
  EXPECT_EQ(split_servers(5, 3), (Split{{0}, {1, 2}, {3, 4}}));
  EXPECT_EQ(split_servers(0, 0), Split{});
  for (int servers = 1; servers <= 17; ++servers) {
    for (int processes = 1; processes <= servers; ++processes) {
      const Split split = split_servers(servers, processes);
      ASSERT_EQ(split.size(), static_cast<size_t>(processes));
      int next = 0;
      size_t smallest = split[0].size(), largest = 0;
      for (const std::vector<int>& hosted : split) {
        ASSERT_FALSE(hosted.empty()) << servers << " over " << processes;
        for (int server : hosted) EXPECT_EQ(server, next++) << servers << " over " << processes;
        smallest = std::min(smallest, hosted.size());
        largest = std::max(largest, hosted.size());
      }
      EXPECT_EQ(next, servers);
      EXPECT_LE(largest - smallest, 1u) << servers << " over " << processes;
    }
  }
}

TEST(ServerProcessesTest, NamesOfOneServerAreTodaysAndOfSeveralSayTheRange) {
  EXPECT_EQ(server_process_label({3}), "server 3");
  EXPECT_EQ(server_process_label({0, 1, 2, 3}), "servers 0-3");
  EXPECT_EQ(server_process_log_name({3}), "server_3.log");
  EXPECT_EQ(server_process_log_name({4, 5}), "servers_4-5.log");
  EXPECT_EQ(server_process_name(2, {3}), "server 3");
  EXPECT_EQ(server_process_name(0, {0, 1}), "server process 0");
  EXPECT_EQ(server_process_details({3}, {"127.0.0.1:4003"}, 12), "127.0.0.1:4003, pid 12");
  EXPECT_EQ(server_process_details({0, 1}, {"h:1", "h:2"}, 12), "servers 0-1: h:1, h:2, pid 12");
}

TEST(ServerProcessesTest, DescribingAnExit) {
  ServerExit exit;
  exit.index = 1;
  exit.address = "h:2";
  exit.pid = 40;
  // A record filled as before (no server_indices): one server, its index and address.
  EXPECT_EQ(describe_server_exit(exit), "server 1 (h:2, pid 40)");
  exit.server_indices = {2, 3};
  exit.addresses = {"h:2", "h:3"};
  EXPECT_EQ(describe_server_exit(exit), "server process 1 (servers 2-3: h:2, h:3, pid 40)");
  exit.server_indices = {2};
  exit.addresses = {"h:2"};
  EXPECT_EQ(describe_server_exit(exit), "server 2 (h:2, pid 40)");
}

}  // namespace server_processes_test
}  // namespace gradwire::launch::detail
