// The parameter servers of a launch (LaunchOptions::servers): which program they run, where they
// listen, starting them under the Supervisor and waiting until each accepts connections, and
// starting one again after it exited while the workers ran (launch-internal). The workers start
// only after that; see docs/launcher.md.
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
};

// `server_command` when it names a program. When it is empty or its program name is empty, the
// program is kDefaultServerProgram in the directory of `own_executable` when an executable file
// is there, else kDefaultServerProgram (PATH lookup); the arguments are kept.
std::vector<std::string> resolve_server_command(const std::vector<std::string>& server_command,
                                                const std::string& own_executable);

// The argv of a server listening on `address`: `command` then "--listen", address.
std::vector<std::string> server_argv(const std::vector<std::string>& command,
                                     const std::string& address);

// Resolves the command (own executable: /proc/self/exe; options.tls_cert_file and tls_key_file
// appended as --tls-cert/--tls-key) and picks options.servers distinct free ports on
// options.server_host, none equal to `master_port`. Empty plan without servers. Throws
// InvalidArgument when a TLS file cannot be read (naming its flag) or server_host cannot be
// resolved, gradwire::Error when no ports are free.
ServerPlan plan_servers(const LaunchOptions& options, int master_port);

// True when a TCP connection to host:port succeeds within `timeout` (closed at once).
bool accepts_connections(const std::string& host, int port, std::chrono::milliseconds timeout);

// Starts every server of `plan` under `supervisor` (environment `env`, initial signal mask
// `signal_mask`, output to `log_files` by index when valid) and supervises them until each
// accepts connections. Returns nullopt when all do. When a signal arrives first, everything is
// stopped and the finished launch is returned. When a server exits first, or
// options.server_ready_timeout passes, everything is stopped and reaped (output copied), then
// PeerLostError / TimeoutError is thrown naming the server, its address and what happened.
std::optional<LaunchResult> start_servers(const ServerPlan& plan, const LaunchOptions& options,
                                          const std::map<std::string, std::string>& env,
                                          const sigset_t& signal_mask,
                                          std::vector<UniqueFd> log_files, Supervisor& supervisor);

// Starts server `index` of `plan` again, with the same argv (the same --listen address) and
// `env`, after it exited while the workers ran and the workers were stopped; its output keeps
// its prefix and log file. Then waits as start_servers() does, with the same outcomes
// (nullopt when it accepts connections; the finished launch on a signal; PeerLostError or
// TimeoutError, everything stopped, when it or another server exits first or it times out).
// Precondition: no worker runs and the supervisor does not allow restarts.
std::optional<LaunchResult> restart_server(const ServerPlan& plan, int index,
                                           const LaunchOptions& options,
                                           const std::map<std::string, std::string>& env,
                                           const sigset_t& signal_mask, Supervisor& supervisor);

}  // namespace gradwire::launch::detail
