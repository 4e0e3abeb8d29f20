// gradwire-ps-server: a parameter server for gradwire trainers (docs/ps.md).
//
//   gradwire-ps-server [--listen HOST:PORT ...] [--token-file F] [--checkpoint-dir D]
//                      [--checkpoint-every N] [--checkpoint-keep K] [--threads T] [--tls-cert F
//                      --tls-key F]
//                      [--max-message-bytes N] [--max-trainers N] [--max-tables N]
//                      [--max-total-table-bytes N] [--max-pending-bytes N]
//                      [--max-waiting-steps N] [--max-grpc-memory-bytes N]
//                      [--max-shared-region-bytes N] [--max-shared-bytes N]
//                      [--max-shared-process-bytes N] [--no-shared-memory]
//                      [--metrics HOST:PORT] [--index N]
//
// --listen given several times runs one server per address in this process, with the same
// options (ps::start_servers: they share one thread per trainer for calls over shared memory).
// The token comes from --token-file, else GRADWIRE_TOKEN, else GRADWIRE_JOB_TOKEN. When all are
// ready it prints one line per server, "gradwire-ps-server listening on HOST:PORT", on stdout, in
// the order of the --listen options; with --metrics, then one line "gradwire-ps-server metrics on
// http://HOST:PORT/metrics" (Prometheus's text format, all the servers of this process, no token:
// docs/observability.md). SIGTERM or
// With GRADWIRE_TIMELINE set, the process writes its timeline (docs/timeline.md) as "ps server N"
// (one server) or "ps servers A-B" (several), N the index of its first server: --index, else the
// position of its first --listen address in GRADWIRE_PS_ADDRS (gradwire-run sets it), else 0.
// SIGINT shut it down gracefully (tables are checkpointed first when --checkpoint-dir is set).
// Exit status: 0 after a signal, 2 for usage and configuration errors, 1 for other failures
// (e.g. a damaged checkpoint file).
#include <malloc.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"
#include "gradwire/common/timeline.h"
#include "gradwire/ps/server.h"
#include "server_label.h"

namespace {

constexpr int kUsageError = 2;

void add_options(CLI::App& app, gradwire::ps::ServerOptions& options,
                 std::vector<std::string>& listen, std::optional<int>& index) {
  app.add_option("--listen", listen,
                 "HOST:PORT to listen on; port 0 picks a free one (printed when ready). Given "
                 "several times: one server per address, in this process")
      ->default_val(std::vector<std::string>{options.listen})
      ->capture_default_str();
  app.add_option("--token-file", options.token_file,
                 "File holding the job's token (default: GRADWIRE_TOKEN, else GRADWIRE_JOB_TOKEN)");
  app.add_option("--checkpoint-dir", options.checkpoint_dir,
                 "Directory of checkpoint files: restored at start, written on request, every "
                 "--checkpoint-every steps and at shutdown");
  app.add_option("--checkpoint-every", options.checkpoint_every_steps,
                 "Also checkpoint a table after every N applied steps (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-keep", options.checkpoint_keep,
                 "Checkpoint files kept per table shard, newest first (a restarted group may "
                 "resume from the one before the newest)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", options.threads,
                 "Threads for tensor work: row gathers and optimizer updates (ATen intra-op)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate chain: serve TLS");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key of --tls-cert");
  app.add_option("--max-message-bytes", options.max_message_bytes, "Largest answer in bytes")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1024}, int64_t{2147483647}));
  app.add_option("--max-request-bytes", options.max_request_bytes,
                 "Largest request in bytes, read before the token is checked (clients split "
                 "larger lookups and pushes)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1024}, int64_t{2147483647}));
  // Limits (docs/ps.md "Limits"): a request above one is refused with RESOURCE_EXHAUSTED.
  app.add_option("--max-trainers", options.max_trainers,
                 "Most trainers (num_trainers) a table may have")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-tables", options.max_tables,
                 "Most tables this server holds (served, being built, restored and waiting)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-total-table-bytes", options.max_total_table_bytes,
                 "Most bytes of all tables held here together (rows and optimizer state)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-bytes", options.max_pending_bytes,
                 "Most bytes of sync pushes (ids, gradients and 1 KiB per push) a table holds "
                 "for one step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-total-pending-bytes", options.max_total_pending_bytes,
                 "Most bytes of sync pushes, counted alike, all tables hold together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-waiting-steps", options.max_waiting_steps,
                 "Most sync Step calls waiting for other trainers at once, all tables together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-shared-region-bytes", options.max_shared_region_bytes,
                 "Most bytes of one trainer's shared-memory region this server maps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-shared-bytes", options.max_shared_bytes,
                 "Most bytes of trainers' shared-memory regions mapped at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-shared-process-bytes", options.max_shared_process_bytes,
                 "Most bytes of one trainer process's shared-memory regions mapped at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-grpc-memory-bytes", options.max_grpc_memory_bytes,
                 "Memory gRPC may use for connections and calls in flight (0: 64 x "
                 "--max-message-bytes, at least 256 MiB)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--metrics", options.metrics_listen,
                 "HOST:PORT (or PORT for 127.0.0.1:PORT; port 0 picks a free one) where GET "
                 "/metrics serves every server's metrics in Prometheus's text format, without a "
                 "token (docs/observability.md). Default: no metrics endpoint");
  app.add_option("--index", index,
                 "Index of this process's first server among the job's servers (the others follow "
                 "in the order of --listen), for its name on the timeline. Default: the position "
                 "of the first --listen address in GRADWIRE_PS_ADDRS, else 0")
      ->check(CLI::NonNegativeNumber);
  app.add_flag_callback(
      "--no-shared-memory", [&options] { options.shared_memory = false; },
      "Take tensors as bytes only, also from trainers on this host (default: they may share "
      "memory with the server; docs/ps.md \"Shared memory\")");
  app.footer("Every call must carry the job's token. See docs/ps.md.");
}

// Blocks SIGTERM and SIGINT in this thread and every thread started after it (gRPC's), so that
// sigwait below is the only place they arrive.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int run(int argc, char** argv) {
  CLI::App app{"gradwire-ps-server: a parameter server for gradwire trainers"};
  gradwire::ps::ServerOptions options;
  std::vector<std::string> listen;
  std::optional<int> index;
  add_options(app, options, listen, index);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kUsageError;
  }

  const sigset_t stop_signals = block_stop_signals();
  const gradwire::EnvMap env = gradwire::EnvMap::from_process();
  const int first = gradwire::ps_server::first_server_index(
      index, listen, env.get(gradwire::settings::kPsAddrs.name).value_or(""));
  std::vector<gradwire::ps::ServerOptions> each(listen.size(), options);
  for (size_t i = 0; i < listen.size(); ++i) {
    each[i].listen = listen[i];
    each[i].timeline_name = gradwire::ps_server::server_timeline_name(first + static_cast<int>(i));
  }
  std::vector<std::unique_ptr<gradwire::ps::Server>> servers;
  try {
    // Before the servers start: a restart's instant is recorded as they restore their tables.
    gradwire::timeline::start_from_env(
        env, gradwire::ps_server::process_label(first, static_cast<int>(listen.size())));
    servers = gradwire::ps::start_servers(each);
  } catch (const gradwire::ConfigError& error) {
    std::cerr << "gradwire-ps-server: " << error.what() << "\n";
    return kUsageError;
  } catch (const gradwire::Error& error) {
    std::cerr << "gradwire-ps-server: " << error.what() << "\n";
    return 1;
  }
  for (const auto& server : servers) {
    std::cout << "gradwire-ps-server listening on " << server->address() << std::endl;
  }
  if (!servers.front()->metrics_address().empty()) {
    std::cout << "gradwire-ps-server metrics on http://" << servers.front()->metrics_address()
              << "/metrics" << std::endl;
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::cerr << "gradwire-ps-server: " << (signal_number == SIGINT ? "SIGINT" : "SIGTERM")
            << ", shutting down" << (options.checkpoint_dir.empty() ? "" : " after a checkpoint")
            << std::endl;
  // All at once: each may wait its grace for calls in flight.
  std::vector<std::thread> stopping;
  for (const auto& server : servers)
    stopping.emplace_back([&server] {
      gradwire::timeline::name_thread("shutdown");
      server->shutdown();
    });
  for (std::thread& thread : stopping) thread.join();
  gradwire::timeline::stop();  // std::_Exit below runs no exit handlers
  // Note [exit after shutdown]: shutdown() returned, so no call runs and the checkpoint is
  // written; what is left is gRPC's own clean-up, which the Server's destructor would run as the
  // process's last gRPC object. That clean-up joins gRPC's executor threads, and one of them may
  // be in a TCP backup poller (started when a large answer met a full socket buffer) that sleeps
  // up to 10 s without being woken: the launcher's 5 s grace passed and it killed the server.
  // Nothing is left to release that the kernel does not, so the process ends here.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(0);
}

// Note [server memory]: the service decodes every push and encodes every answer into fresh
// buffers of up to a request's 4 MiB, on gRPC's handler threads. With glibc's defaults each
// handler thread gets a malloc arena of its own, and such buffers go back to the kernel when
// freed, so every step faults its pages in again: with a dense model a quarter of a server's time,
// and its step grows superlinearly above 16 MiB per server (docs/ps-or-allreduce.md). The server
// keeps one arena and keeps freed memory, unless the user set glibc's variables for them.
void keep_freed_memory() {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {  // a bug or out of memory: still say what happened
    std::cerr << "gradwire-ps-server: " << error.what() << "\n";
    return 1;
  }
}
