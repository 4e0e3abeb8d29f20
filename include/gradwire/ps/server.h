// A parameter server: holds shards of tables created by clients, applies server-side optimizers to
// pushed sparse gradients, checkpoints its tables (docs/ps.md). `gradwire-ps-server` is a thin
// command line around this class; tests start servers in-process with it.
//
// Threads: gRPC's handler threads run the calls; each table shard has its own mutex, so calls on
// different tables never wait for each other. In sync mode a Step call blocks its handler thread
// until every trainer has finished that step or the call's deadline passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/env.h"

namespace gradwire::ps {

struct ServerOptions {
  // HOST:PORT to listen on. Port 0 picks a free port (read it back with Server::address()).
  std::string listen = "127.0.0.1:0";
  // The job's shared token; every call must carry it. Unset (or empty): the content of token_file
  // (when not empty), else GRADWIRE_TOKEN, else GRADWIRE_JOB_TOKEN (the rule the client follows);
  // none of them is a ConfigError naming all four.
  std::optional<std::string> token;
  std::string token_file;
  // Where tables are checkpointed and, at start, restored from. Empty: no checkpoints.
  std::string checkpoint_dir;
  // Also checkpoint a table after every this many applied steps (0: only on request).
  int64_t checkpoint_every_steps = 0;
  // Checkpoint files kept per table shard (each write is a new file; older ones go). A restarted
  // group resumes from its trainers' checkpoint, which can be one older than the servers' newest
  // (docs/ps.md "Restarts"): keep at least 2.
  int checkpoint_keep = 2;
  // ATen intra-op threads for the server's tensor work (row gathers, optimizer updates). Calls
  // run on gRPC's handler threads, one per call in flight (docs/ps.md "Threads and locks").
  // 1 suits servers that share a host with trainers.
  int threads = 1;
  // TLS: both set = serve TLS with this certificate chain and private key (PEM files).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest answer sent, in bytes (a lookup whose answer would be larger is refused).
  int64_t max_message_bytes = 64 << 20;
  // Largest request read, in bytes: gRPC reads a request before its token can be checked, so this
  // bounds what any caller can make the server read per call. gRPC's default; clients split
  // larger lookups and pushes (ClientOptions::max_request_bytes, the same default).
  int64_t max_request_bytes = 4 << 20;
  // Largest table this server accepts (rows held here x dim x 4 bytes, optimizer state included).
  int64_t max_table_bytes = int64_t{8} << 30;

  // Limits on what requests can make the server hold (docs/ps.md "Limits"). A request above one
  // is refused with RESOURCE_EXHAUSTED naming the limit, its value, what was asked and the flag
  // that raises it; nothing is changed. Each must be >= 1 (ConfigError otherwise).
  //
  // Most trainers a table may have (TableConfig::num_trainers): a sync table keeps state per
  // trainer. --max-trainers.
  int max_trainers = 1024;
  // Most tables this server holds: served, being built, or restored from checkpoints and waiting
  // for CreateTable. Tables restored at start are never refused, but count. --max-tables.
  int max_tables = 1024;
  // Most bytes of all those tables together, each counted as for max_table_bytes; a new table's
  // bytes are reserved before it is built. --max-total-table-bytes.
  int64_t max_total_table_bytes = int64_t{16} << 30;
  // Most bytes of sync pushes one table shard holds for the step in progress, all trainers
  // together; released when the step is applied or discarded. A push is counted as what it holds:
  // its ids' and gradients' storage and 1 KiB of bookkeeping (kPendingPushOverheadBytes, so many
  // tiny pushes cannot hold far more than is counted). --max-pending-bytes.
  int64_t max_pending_bytes = int64_t{1} << 30;
  // Most bytes of sync pushes, counted alike, all table shards of this server hold together.
  // --max-total-pending-bytes.
  int64_t max_total_pending_bytes = int64_t{4} << 30;
  // Most sync Step calls waiting for other trainers at once, all tables together (each holds a
  // handler thread). The call that completes a step never waits, so it is never refused.
  // --max-waiting-steps.
  int max_waiting_steps = 1024;
  // Memory gRPC may use for connections and calls in flight (its ResourceQuota): near it gRPC
  // slows reading, at it closes idle connections and cancels calls. 0: 64 x max_message_bytes,
  // at least 256 MiB (4 GiB with the defaults); else at least max_message_bytes.
  // --max-grpc-memory-bytes.
  int64_t max_grpc_memory_bytes = 0;
  // Most bytes of one trainer's shared-memory region the server maps (a region is mapped whole);
  // larger ones are refused. --max-shared-region-bytes.
  int64_t max_shared_region_bytes = int64_t{1} << 30;
  // Most bytes of trainers' regions mapped at once, all together and from one trainer process;
  // past them a call naming another region is refused. --max-shared-bytes,
  // --max-shared-process-bytes.
  int64_t max_shared_bytes = int64_t{16} << 30;
  int64_t max_shared_process_bytes = int64_t{4} << 30;
  // Trainers on this server's host may push and pull through memory they share with it instead
  // of bytes on the socket (docs/ps.md "Shared memory"); false: bytes only. --no-shared-memory.
  bool shared_memory = true;
  // This server's host identity, which a trainer's must equal for shared memory. Unset:
  // GRADWIRE_HOST_ID, else "<hostname>/<boot id>" (gradwire/common/host_identity.h).
  std::optional<std::string> host_identity;
  // HOST:PORT (or PORT alone: 127.0.0.1:PORT) where the server serves its metrics over HTTP, GET
  // /metrics in Prometheus's text format, without a token (docs/observability.md); port 0 picks a
  // free one (Server::metrics_address()). Servers started together (start_servers) that name the
  // same address share one endpoint, each series labelled with its server's address. Empty: none.
  // --metrics.
  std::string metrics_listen;
  // The server's name on the timeline (docs/timeline.md): its handler threads' tracks are
  // "<timeline_name> calls", and its restart instant names it. gradwire-ps-server sets
  // "ps server N". Empty: "ps server HOST:PORT", the address it listens on.
  std::string timeline_name;
};

// The ResourceQuota size a server with these options gives gRPC (see max_grpc_memory_bytes).
int64_t grpc_memory_bytes(const ServerOptions& options);

// `options` with what defaults from the environment filled from `env`, as start_server() uses
// them: the token (token, else token_file's content, else GRADWIRE_TOKEN, else
// GRADWIRE_JOB_TOKEN) and the host identity (GRADWIRE_HOST_ID, else "<hostname>/<boot id>"); then
// checked. Reads token_file. Throws ConfigError naming what is missing or malformed (no token,
// a limit below 1...).
ServerOptions resolve(const ServerOptions& options, const EnvMap& env);

class Server {
 public:
  virtual ~Server() = default;
  // "HOST:PORT" actually listened on (the picked port when ServerOptions::listen had port 0).
  virtual std::string address() const = 0;
  // "HOST:PORT" of the metrics endpoint (ServerOptions::metrics_listen), empty when there is none.
  // It stops serving when the last server using it has shut down.
  virtual std::string metrics_address() const { return {}; }
  // Stops accepting calls, finishes or cancels running ones (within `grace`) and returns.
  virtual void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(2000)) = 0;
  // Blocks until shutdown() was called (from another thread or a signal handler's thread).
  virtual void wait() = 0;
};

// Binds, restores tables found in checkpoint_dir, starts serving and returns. Throws ConfigError
// for bad options (no token, unreadable TLS files, address in use) and CorruptDataError for a
// checkpoint that fails its checks (naming the file). The token defaults from this process's
// environment, or from `env` in the second form.
std::unique_ptr<Server> start_server(const ServerOptions& options);
std::unique_ptr<Server> start_server(const ServerOptions& options, const EnvMap& env);

// Starts one server per options (each with its own address, tables and limits) in this process,
// in order, as start_server does. They share what a process needs once: the threads that answer
// a trainer's calls over shared memory are one per trainer process for all of them, not one per
// trainer and server (docs/ps.md "Several servers in one process"), which keeps a small host from
// running a thread per server and trainer. Throws as start_server (servers already started are
// shut down first); ConfigError for an empty list.
std::vector<std::unique_ptr<Server>> start_servers(const std::vector<ServerOptions>& options);
std::vector<std::unique_ptr<Server>> start_servers(const std::vector<ServerOptions>& options,
                                                   const EnvMap& env);

}  // namespace gradwire::ps
