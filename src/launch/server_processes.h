// Pure: how many processes host the parameter servers of a launch (LaunchOptions::servers,
// server_processes), which servers each one hosts, and how a server process is named in output
// prefixes, log files and messages (launch-internal). See docs/launcher.md, "Server processes".
#pragma once

#include <string>
#include <vector>

#include "gradwire/launch/launcher.h"

namespace gradwire::launch::detail {

// What the number of server processes depends on.
struct ServerProcessInputs {
  int servers = 0;         // S: LaunchOptions::servers
  int nproc_per_node = 1;  // the workers started beside them
  int cores = 1;           // the CPUs this launcher may use (its sched_getaffinity mask)
  int requested = 0;       // LaunchOptions::server_processes: 0 = automatic, else 1..S
};

// The number of server processes P. 0 without servers; `requested` when it is not 0; otherwise
// one process per server (P = S) when nproc_per_node + servers <= cores, else
// max(1, min(servers, cores - nproc_per_node)): fewer processes competing with the workers for
// the cores. Precondition: 0 <= requested <= servers.
int server_process_count(const ServerProcessInputs& inputs);

// The server indices each of `processes` processes hosts, by process: process p gets
// [p * servers / processes, (p + 1) * servers / processes), so the servers are split
// contiguously and as evenly as possible, in order. Empty when servers == 0. Precondition:
// 1 <= processes <= servers, or both 0.
std::vector<std::vector<int>> split_servers(int servers, int processes);

// The output prefix and message name of a process hosting `servers` (ascending, contiguous, not
// empty): "server 3" for one, "servers 0-3" for several.
std::string server_process_label(const std::vector<int>& servers);

// Its log file: "server_3.log" for one server, "servers_0-3.log" for several.
std::string server_process_log_name(const std::vector<int>& servers);

// How messages name process `process` hosting `servers`: "server 3" when it hosts one (the
// wording of a launch with one process per server), "server process 0" for several.
std::string server_process_name(int process, const std::vector<int>& servers);

// What messages say about it in parentheses: "127.0.0.1:4001, pid 12" for one server,
// "servers 0-3: 127.0.0.1:4001, 127.0.0.1:4002, 127.0.0.1:4003, 127.0.0.1:4004, pid 12" for
// several. `addresses` are those of `servers`, in the same order; `servers` is not empty.
std::string server_process_details(const std::vector<int>& servers,
                                   const std::vector<std::string>& addresses, int pid);

// The servers an exit record's process hosted: its server_indices, or for a record without
// them (filled by hand, as before processes could host several) {index}.
std::vector<int> hosted_servers(const ServerExit& server);

// "server 1 (127.0.0.1:4001, pid 12)" or "server process 0 (servers 0-3: ..., pid 12)" for an
// exit record. A record without server_indices stands for one server: its index and address.
std::string describe_server_exit(const ServerExit& server);

}  // namespace gradwire::launch::detail
