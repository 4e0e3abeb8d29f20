// The parameter servers of a launch (LaunchOptions::servers): which program they run, where they
// listen, which process hosts which servers (server_processes.h decides), starting the processes
// under the Supervisor and waiting until each server accepts connections, and starting a process
// again after it exited while the workers ran (launch-internal). The workers start only after
// that; see docs/launcher.md.
#pragma once

#include <signal.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "supervisor.h"

namespace gradwire::launch::detail {

// The program name looked up when LaunchOptions::server_command is empty.
inline constexpr char kDefaultServerProgram[] = "gradwire-ps-server";

// Where and how the servers run, decided before anything starts.
struct ServerPlan {
  // Program and arguments (with --tls-cert/--tls-key last when given), without --listen.
  std::vector<std::string> command;
  std::string host;                    // what they listen on
  std::vector<int> ports;              // by server index
  std::vector<std::string> addresses;  // HOST:PORT by server index (GRADWIRE_PS_ADDRS order)
  // The server indices each server process hosts, by process index (split_servers): one server
  // per process unless LaunchOptions::server_processes or the cores decide otherwise.
  std::vector<std::vector<int>> processes;
};

// `server_command` when it names a program. When it is empty or its program name is empty, the
// program is kDefaultServerProgram in the directory of `own_executable` when an executable file
// is there, else kDefaultServerProgram (PATH lookup); the arguments are kept.
std::vector<std::string> resolve_server_command(const std::vector<std::string>& server_command,
                                                const std::string& own_executable);

// The argv of a server listening on `address`: `command` then "--listen", address.
std::vector<std::string> server_argv(const std::vector<std::string>& command,
                                     const std::string& address);

// The argv of a process hosting servers listening on `addresses`: `command` then "--listen",
// address for each, in order (one address: the same as above).
std::vector<std::string> server_argv(const std::vector<std::string>& command,
                                     const std::vector<std::string>& addresses);

// The addresses of the servers process `process` of `plan` hosts, in server order, and its argv.
std::vector<std::string> process_addresses(const ServerPlan& plan, size_t process);
std::vector<std::string> process_argv(const ServerPlan& plan, size_t process);

// Log file names by process: server_I.log for a process hosting server I alone,
// servers_I-J.log for one hosting servers I..J.
std::vector<std::string> server_log_names(const ServerPlan& plan);

// Resolves the command (own executable: /proc/self/exe; options.tls_cert_file and tls_key_file
// appended as --tls-cert/--tls-key), picks options.servers distinct free ports on
// options.server_host, none equal to `master_port`, and splits the servers over the processes
// (server_process_count with `cores`, the CPUs the launcher may use). Empty plan without
// servers. Throws InvalidArgument when a TLS file cannot be read (naming its flag) or
// server_host cannot be resolved, gradwire::Error when no ports are free. Precondition: the
// options are valid.
ServerPlan plan_servers(const LaunchOptions& options, int master_port, int cores);

// True when a TCP connection to host:port succeeds within `timeout` (closed at once).
bool accepts_connections(const std::string& host, int port, std::chrono::milliseconds timeout);

// Starts every server process of `plan` under `supervisor` (environment `env`, initial signal
// mask `signal_mask`, output to `log_files` by process index when valid) and supervises them
// until every server accepts connections (a process is ready when all its addresses do).
// Returns nullopt when all do. When a signal arrives first, everything is stopped and the
// finished launch is returned. When a server process exits first, or
// options.server_ready_timeout passes, everything is stopped and reaped (output copied), then
// PeerLostError / TimeoutError is thrown naming the process, its servers, their addresses, its
// pid and command, and what happened.
std::optional<LaunchResult> start_servers(const ServerPlan& plan, const LaunchOptions& options,
                                          const std::map<std::string, std::string>& env,
                                          const sigset_t& signal_mask,
                                          std::vector<UniqueFd> log_files, Supervisor& supervisor);

// Starts server process `process` of `plan` again, with the same argv (the same --listen
// addresses) and `env`, after it exited while the workers ran and the workers were stopped; its
// output keeps its prefix and log file. Then waits as start_servers() does, with the same
// outcomes (nullopt when its servers accept connections; the finished launch on a signal;
// PeerLostError or TimeoutError, everything stopped, when it or another server process exits
// first or it times out). Precondition: no worker runs and the supervisor does not allow
// restarts.
std::optional<LaunchResult> restart_server(const ServerPlan& plan, int process,
                                           const LaunchOptions& options,
                                           const std::map<std::string, std::string>& env,
                                           const sigset_t& signal_mask, Supervisor& supervisor);

}  // namespace gradwire::launch::detail
