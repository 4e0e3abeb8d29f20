// A stand-in for gradwire-ps-server in the launcher tests (so they do not depend on the real one)
// and a tiny client for the test trainers.
//
//   fake_ps_server [--mode serve|exit-at-once|never-listen] [--ignore-term]
//                  [--listen-after-ms MS] [ARGS...] --listen HOST:PORT [--listen HOST:PORT]...
//     serve (default): prints "args: ...", "pid=N", "token=... job_token=... ps_addrs=...",
//       "restart_count=N" (TORCHELASTIC_RESTART_COUNT),
//       (after MS milliseconds) listens on every HOST:PORT (as gradwire-ps-server hosts one
//       server per --listen), prints "gradwire-ps-server listening on HOST:PORT" for each, in
//       order, once all listen (exit 2 if one cannot), then prints "received: LINE" for the first
//       line of each connection to any of them; a line "die" makes it exit 3, a line "quit" exit
//       0, a line "kill" kill itself with SIGKILL (as the OOM killer would). Exits 0 on SIGTERM
//       (unless --ignore-term), after serving the connections already waiting.
//       Gives up after 60 s in any case.
//     exit-at-once: prints a line to stderr and exits 1.
//     never-listen: prints "pid=N" and waits for SIGTERM (at most 60 s) without listening.
//   fake_ps_server --send HOST:PORT[,HOST:PORT...] MESSAGE
//     Connects to each address once (no retry) and sends MESSAGE and a newline; exits 1 naming
//     the address when one cannot be reached.
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

volatile std::sig_atomic_t g_terminate = 0;  // set by the SIGTERM handler

void on_sigterm(int) { g_terminate = 1; }

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Splits "HOST:PORT" (the host may be "[v6]").
bool split_address(const std::string& address, std::string& host, std::string& port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return true;
}

// A socket connected to (or, with `listen`, listening on) `address`; -1 on failure.
int open_socket(const std::string& address, bool listen) {
  std::string host, port;
  if (!split_address(address, host, port)) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* entry = found; entry != nullptr && fd < 0; entry = entry->ai_next) {
    fd = ::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    if (listen) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const bool ok =
        listen ? ::bind(fd, entry->ai_addr, entry->ai_addrlen) == 0 && ::listen(fd, 16) == 0
               : ::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0;
    if (!ok) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

int send_to_all(const std::string& addresses, const std::string& message) {
  std::stringstream list(addresses);
  for (std::string address; std::getline(list, address, ',');) {
    const int fd = open_socket(address, /*listen=*/false);
    if (fd < 0) {
      std::fprintf(stderr, "fake_ps_server --send: cannot connect to %s\n", address.c_str());
      return 1;
    }
    const std::string line = message + "\n";
    const bool sent = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!sent) return 1;
  }
  return 0;
}

// The first line a client sent (waiting at most 2 s); empty when it sent none.
std::string read_first_line(int fd) {
  std::string text;
  char buffer[256];
  for (;;) {
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, 2000);
    if (ready < 0 && errno == EINTR) continue;  // SIGTERM: the line is still to be read
    if (ready != 1) break;
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
    if (text.find('\n') != std::string::npos) break;
  }
  return text.substr(0, text.find('\n'));
}

// Accepts one connection if one is waiting on any of `listen_fds` within `wait_ms` and prints
// its first line; exits on "die" or "quit". Returns false when none was waiting.
bool serve_one(const std::vector<int>& listen_fds, int wait_ms) {
  std::vector<pollfd> incoming;
  for (int fd : listen_fds) incoming.push_back({fd, POLLIN, 0});
  // With no address (never-listen) this only sleeps.
  if (::poll(incoming.data(), incoming.size(), wait_ms) < 1) return false;
  int client = -1;
  for (const pollfd& entry : incoming) {
    if (entry.revents != 0 && client < 0) {
      client = ::accept4(entry.fd, nullptr, nullptr, SOCK_CLOEXEC);
    }
  }
  if (client < 0) return false;
  const std::string line = read_first_line(client);
  ::close(client);
  if (line.empty()) return true;  // the launcher's readiness probe sends nothing
  say("received: " + line);
  if (line == "kill") ::kill(::getpid(), SIGKILL);
  if (line == "die" || line == "quit") {
    say("exiting as asked");
    std::exit(line == "die" ? 3 : 0);
  }
  return true;
}

// Waits for SIGTERM (or 60 s); returns true when it came. Connections already waiting when it
// comes are served first: a trainer that sent its line and exited may be what made the launcher
// stop the servers.
bool wait_for_sigterm(const std::vector<int>& listen_fds) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    if (g_terminate) {
      while (!listen_fds.empty() && serve_one(listen_fds, 0)) {
      }
      return true;
    }
    serve_one(listen_fds, 50);
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "--send") return send_to_all(args[1], args[2]);

  std::string mode = "serve";
  std::vector<std::string> listen_addresses;
  bool ignore_term = false;
  int listen_after_ms = 0;
  std::string all_args;
  for (size_t i = 0; i < args.size(); ++i) {
    all_args += (all_args.empty() ? "" : " ") + args[i];
    if (args[i] == "--mode" && i + 1 < args.size()) mode = args[i + 1];
    if (args[i] == "--listen" && i + 1 < args.size()) listen_addresses.push_back(args[i + 1]);
    if (args[i] == "--ignore-term") ignore_term = true;
    if (args[i] == "--listen-after-ms" && i + 1 < args.size()) {
      listen_after_ms = std::atoi(args[i + 1].c_str());
    }
  }
  std::signal(SIGTERM, ignore_term ? SIG_IGN : on_sigterm);

  if (mode == "exit-at-once") {
    std::fprintf(stderr, "fake server: failing at once\n");
    return 1;
  }
  say("pid=" + std::to_string(::getpid()));
  if (mode == "never-listen") return wait_for_sigterm({}) ? 0 : 1;

  say("args: " + all_args);
  say("token=" + env_or_empty("GRADWIRE_TOKEN") + " job_token=" +
      env_or_empty("GRADWIRE_JOB_TOKEN") + " ps_addrs=" + env_or_empty("GRADWIRE_PS_ADDRS"));
  say("restart_count=" + env_or_empty("TORCHELASTIC_RESTART_COUNT"));
  ::usleep(static_cast<useconds_t>(listen_after_ms) * 1000);
  std::vector<int> listen_fds;
  for (const std::string& address : listen_addresses) {
    const int fd = open_socket(address, /*listen=*/true);
    if (fd < 0) {
      std::fprintf(stderr, "fake server: cannot listen on '%s': %s\n", address.c_str(),
                   std::strerror(errno));
      return 2;
    }
    listen_fds.push_back(fd);
  }
  if (listen_fds.empty()) {
    std::fprintf(stderr, "fake server: no --listen address given\n");
    return 2;
  }
  for (const std::string& address : listen_addresses) {
    say("gradwire-ps-server listening on " + address);
  }
  if (wait_for_sigterm(listen_fds)) {
    say("stopping on SIGTERM");
    return 0;
  }
  return 1;
}
