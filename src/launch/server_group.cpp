#include "server_group.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <utility>

#include "gradwire/common/error.h"
#include "process.h"
#include "server_processes.h"
#include "worker_env.h"

namespace gradwire::launch::detail {
namespace {

// How often a server that does not accept connections yet is tried again, and how long one try
// may wait for the handshake (a local refusal is immediate).
constexpr std::chrono::milliseconds kReadyCheckInterval{50};
constexpr std::chrono::milliseconds kConnectTimeout{200};
// Attempts at finding distinct free ports before giving up.
constexpr int kPortAttempts = 100;

std::string join_words(const std::vector<std::string>& words) {
  std::string joined;
  for (const std::string& word : words) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

std::vector<int> pick_distinct_ports(const std::string& host, int count, int master_port) {
  std::vector<int> ports;
  for (int attempt = 0; static_cast<int>(ports.size()) < count; ++attempt) {
    if (attempt == count * kPortAttempts) {
      throw Error("gradwire-run: cannot find " + std::to_string(count) +
                  " distinct free ports on " + host +
                  " for the servers; free some ports or "
                  "use fewer --servers");
    }
    int port = 0;
    try {
      port = pick_free_port(host);
    } catch (const InvalidArgument& error) {
      throw InvalidArgument("gradwire-run: --server-host '" + host + "' is not usable: " +
                            error.what() + " (pass an address of this machine, e.g. 127.0.0.1)");
    }
    if (port != master_port && std::find(ports.begin(), ports.end(), port) == ports.end()) {
      ports.push_back(port);
    }
  }
  return ports;
}

// The server process's identity (its servers, their addresses), pid and command, for error
// messages: "server 1 (127.0.0.1:4001, pid 12, command: ...)" or "server process 0 (servers 0-3:
// ..., pid 12, command: ...)".
std::string describe_process(const ServerPlan& plan, size_t process, int pid) {
  const std::vector<int>& servers = plan.processes[process];
  return server_process_name(static_cast<int>(process), servers) + " (" +
         server_process_details(servers, process_addresses(plan, process), pid) +
         ", command: " + join_words(process_argv(plan, process)) + ")";
}

[[noreturn]] void throw_server_exited(const ServerPlan& plan, const ServerExit& server) {
  const size_t process = static_cast<size_t>(server.index);
  throw PeerLostError(
      "gradwire-run: " + describe_process(plan, process, server.pid) + " " +
          describe_exit(ProcessExit{server.exit_code, server.signal}) +
          " before accepting connections; the trainers were not started. Its output above "
          "(prefixed [" +
          server_process_label(plan.processes[process]) + "]) says why.",
      {});
}

// Throws InvalidArgument naming `flag` unless `path` can be opened for reading (and is no
// directory). The servers read the files themselves; this only refuses an obvious mistake
// before anything starts.
void require_readable(const std::string& path, const std::string& flag) {
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  std::string problem;
  struct stat info {};
  if (!file.valid() || ::fstat(file.get(), &info) != 0) {
    problem = errno_text(errno);
  } else if (S_ISDIR(info.st_mode)) {
    problem = "it is a directory";
  }
  if (!problem.empty()) {
    throw InvalidArgument("gradwire-run: " + flag + " file '" + path +
                          "' cannot be read: " + problem);
  }
}

// Starts server process `process` of `plan` under `supervisor`; returns its pid.
int start_process(const ServerPlan& plan, size_t process,
                  const std::map<std::string, std::string>& env, const sigset_t& signal_mask,
                  UniqueFd log_file, Supervisor& supervisor) {
  ProcessIdentity who;
  who.role = ProcessRole::kServer;
  who.index = who.rank = static_cast<int>(process);
  who.servers = plan.processes[process];
  who.addresses = process_addresses(plan, process);
  SpawnRequest request;
  request.argv = process_argv(plan, process);
  request.env = env;
  request.signal_mask = signal_mask;
  return supervisor.start(who, request, std::move(log_file));
}

// Supervises until every server of the processes `processes` (started as `pids`) accepts
// connections; the outcomes of start_servers().
std::optional<LaunchResult> wait_until_ready(const ServerPlan& plan,
                                             const std::vector<size_t>& processes,
                                             const std::vector<int>& pids,
                                             const LaunchOptions& options, Supervisor& supervisor) {
  // Every server to probe, as (position in `processes`, server index), in order; a server found
  // ready is not tried again.
  std::vector<std::pair<size_t, int>> probes;
  for (size_t i = 0; i < processes.size(); ++i) {
    for (int server : plan.processes[processes[i]]) probes.emplace_back(i, server);
  }
  size_t ready = 0;
  auto all_ready = [&] {
    while (ready < probes.size() &&
           accepts_connections(plan.host, plan.ports[probes[ready].second], kConnectTimeout)) {
      ++ready;
    }
    return ready == probes.size();
  };
  const auto started = Supervisor::Clock::now();
  const Supervisor::WaitOutcome outcome = supervisor.supervise_until(
      all_ready, started + options.server_ready_timeout, kReadyCheckInterval);
  if (outcome == Supervisor::WaitOutcome::kDone) return std::nullopt;

  supervisor.stop_all();
  LaunchResult result = supervisor.run();
  if (const ServerExit* failed =
          result.first_failed_server >= 0 ? &result.servers[result.first_failed_server] : nullptr) {
    throw_server_exited(plan, *failed);
  }
  if (outcome == Supervisor::WaitOutcome::kDeadline) {
    const auto [position, server] = probes[ready];
    const size_t process = processes[position];
    // A process hosting several servers: which one was not listening yet.
    const bool alone = plan.processes[process].size() == 1;
    const std::string where = alone ? "" : " on " + plan.addresses[static_cast<size_t>(server)];
    throw TimeoutError("gradwire-run: " + describe_process(plan, process, pids[position]) +
                       " did not accept connections" + where + " within " +
                       format_duration(options.server_ready_timeout) +
                       "; the trainers were not started. Check that the server program listens "
                       "on the " +
                       (alone ? "address" : "addresses") +
                       " given with --listen, or raise --server-ready-timeout.");
  }
  return result;  // a signal arrived: the launch ends as interrupted
}

}  // namespace

std::vector<std::string> resolve_server_command(const std::vector<std::string>& server_command,
                                                const std::string& own_executable) {
  if (!server_command.empty() && !server_command.front().empty()) return server_command;
  std::vector<std::string> command = server_command;
  if (command.empty()) command.emplace_back();
  command.front() = kDefaultServerProgram;
  if (!own_executable.empty()) {
    const std::filesystem::path beside =
        std::filesystem::path(own_executable).parent_path() / kDefaultServerProgram;
    std::error_code error;
    if (std::filesystem::is_regular_file(beside, error) && ::access(beside.c_str(), X_OK) == 0) {
      command.front() = beside.string();
    }
  }
  return command;
}

std::vector<std::string> server_argv(const std::vector<std::string>& command,
                                     const std::string& address) {
  std::vector<std::string> argv = command;
  argv.push_back("--listen");
  argv.push_back(address);
  return argv;
}

std::vector<std::string> server_argv(const std::vector<std::string>& command,
                                     const std::vector<std::string>& addresses) {
  std::vector<std::string> argv = command;
  for (const std::string& address : addresses) {
    argv.push_back("--listen");
    argv.push_back(address);
  }
  return argv;
}

std::vector<std::string> process_addresses(const ServerPlan& plan, size_t process) {
  GRADWIRE_CHECK_LT(process, plan.processes.size());
  std::vector<std::string> addresses;
  for (int server : plan.processes[process]) {
    addresses.push_back(plan.addresses.at(static_cast<size_t>(server)));
  }
  return addresses;
}

std::vector<std::string> process_argv(const ServerPlan& plan, size_t process) {
  return server_argv(plan.command, process_addresses(plan, process));
}

std::vector<std::string> server_log_names(const ServerPlan& plan) {
  std::vector<std::string> names;
  for (const std::vector<int>& servers : plan.processes) {
    names.push_back(server_process_log_name(servers));
  }
  return names;
}

ServerPlan plan_servers(const LaunchOptions& options, int master_port, int cores) {
  ServerPlan plan;
  if (options.servers <= 0) return plan;
  std::error_code error;
  const std::filesystem::path own = std::filesystem::read_symlink("/proc/self/exe", error);
  plan.command = resolve_server_command(options.server_command, error ? "" : own.string());
  if (!options.tls_cert_file.empty()) {
    require_readable(options.tls_cert_file, "--tls-cert");
    require_readable(options.tls_key_file, "--tls-key");
    plan.command.insert(plan.command.end(),
                        {"--tls-cert", options.tls_cert_file, "--tls-key", options.tls_key_file});
  }
  plan.host = options.server_host;
  plan.ports = pick_distinct_ports(options.server_host, options.servers, master_port);
  for (int port : plan.ports) plan.addresses.push_back(host_port(plan.host, port));
  ServerProcessInputs layout;
  layout.servers = options.servers;
  layout.nproc_per_node = options.nproc_per_node;
  layout.cores = cores;
  layout.requested = options.server_processes;
  plan.processes = split_servers(options.servers, server_process_count(layout));
  return plan;
}

bool accepts_connections(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return false;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  for (addrinfo* entry = addresses.get(); entry != nullptr; entry = entry->ai_next) {
    UniqueFd socket(::socket(entry->ai_family, entry->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                             entry->ai_protocol));
    if (!socket.valid()) continue;
    if (::connect(socket.get(), entry->ai_addr, entry->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS) continue;
    pollfd writable{socket.get(), POLLOUT, 0};
    if (::poll(&writable, 1, static_cast<int>(timeout.count())) != 1) continue;
    int socket_error = 0;
    socklen_t length = sizeof(socket_error);
    if (::getsockopt(socket.get(), SOL_SOCKET, SO_ERROR, &socket_error, &length) == 0 &&
        socket_error == 0) {
      return true;
    }
  }
  return false;
}

std::optional<LaunchResult> start_servers(const ServerPlan& plan, const LaunchOptions& options,
                                          const std::map<std::string, std::string>& env,
                                          const sigset_t& signal_mask,
                                          std::vector<UniqueFd> log_files, Supervisor& supervisor) {
  std::vector<size_t> processes;
  std::vector<int> pids;
  for (size_t process = 0; process < plan.processes.size(); ++process) {
    UniqueFd log_file = process < log_files.size() ? std::move(log_files[process]) : UniqueFd();
    processes.push_back(process);
    pids.push_back(start_process(plan, process, env, signal_mask, std::move(log_file), supervisor));
  }
  return wait_until_ready(plan, processes, pids, options, supervisor);
}

std::optional<LaunchResult> restart_server(const ServerPlan& plan, int process,
                                           const LaunchOptions& options,
                                           const std::map<std::string, std::string>& env,
                                           const sigset_t& signal_mask, Supervisor& supervisor) {
  GRADWIRE_CHECK_GE(process, 0);
  GRADWIRE_CHECK_LT(static_cast<size_t>(process), plan.processes.size());
  const size_t which = static_cast<size_t>(process);
  // The pump still holds the log file opened for the process's label: the new one appends to it.
  const int pid = start_process(plan, which, env, signal_mask, UniqueFd(), supervisor);
  return wait_until_ready(plan, {which}, {pid}, options, supervisor);
}

}  // namespace gradwire::launch::detail
