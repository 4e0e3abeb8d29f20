#include "server_processes.h"

#include <algorithm>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {
namespace {

// "3" or "0-3".
std::string index_range(const std::vector<int>& servers) {
  GRADWIRE_CHECK(!servers.empty());
  const std::string first = std::to_string(servers.front());
  return servers.size() == 1 ? first : first + "-" + std::to_string(servers.back());
}

}  // namespace

int server_process_count(const ServerProcessInputs& inputs) {
  GRADWIRE_CHECK_GE(inputs.requested, 0);
  GRADWIRE_CHECK_LE(inputs.requested, std::max(inputs.servers, 0));
  if (inputs.servers <= 0) return 0;
  if (inputs.requested > 0) return inputs.requested;
  // 64-bit: a huge nproc_per_node plus servers must not overflow.
  if (static_cast<long long>(inputs.nproc_per_node) + inputs.servers <= inputs.cores) {
    return inputs.servers;
  }
  const long long spare = static_cast<long long>(inputs.cores) - inputs.nproc_per_node;
  return static_cast<int>(std::max(1LL, std::min<long long>(inputs.servers, spare)));
}

std::vector<std::vector<int>> split_servers(int servers, int processes) {
  GRADWIRE_CHECK_GE(servers, 0);
  GRADWIRE_CHECK((servers == 0 && processes == 0) || (processes >= 1 && processes <= servers));
  std::vector<std::vector<int>> hosted(static_cast<size_t>(processes));
  for (int p = 0; p < processes; ++p) {
    const long long first = static_cast<long long>(p) * servers / processes;
    const long long end = static_cast<long long>(p + 1) * servers / processes;
    for (long long server = first; server < end; ++server) {
      hosted[static_cast<size_t>(p)].push_back(static_cast<int>(server));
    }
  }
  return hosted;
}

std::string server_process_label(const std::vector<int>& servers) {
  return (servers.size() == 1 ? "server " : "servers ") + index_range(servers);
}

std::string server_process_log_name(const std::vector<int>& servers) {
  return (servers.size() == 1 ? "server_" : "servers_") + index_range(servers) + ".log";
}

std::string server_process_name(int process, const std::vector<int>& servers) {
  return servers.size() == 1 ? server_process_label(servers)
                             : "server process " + std::to_string(process);
}

std::string server_process_details(const std::vector<int>& servers,
                                   const std::vector<std::string>& addresses, int pid) {
  std::string details = servers.size() == 1 ? "" : server_process_label(servers) + ": ";
  for (const std::string& address : addresses) details += address + ", ";
  return details + "pid " + std::to_string(pid);
}

std::vector<int> hosted_servers(const ServerExit& server) {
  return server.server_indices.empty() ? std::vector<int>{server.index} : server.server_indices;
}

std::string describe_server_exit(const ServerExit& server) {
  const std::vector<int> servers = hosted_servers(server);
  const std::vector<std::string> addresses =
      server.addresses.empty() ? std::vector<std::string>{server.address} : server.addresses;
  return server_process_name(server.index, servers) + " (" +
         server_process_details(servers, addresses, server.pid) + ")";
}

}  // namespace gradwire::launch::detail
