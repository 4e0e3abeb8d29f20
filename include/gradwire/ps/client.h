// The trainer's side of the parameter servers: creating tables, looking rows up on all owning
// servers in parallel, pushing sparse gradients and ending steps (docs/ps.md).
//
// Thread safety: a Client may be used from several threads; pushes from one thread are sent in
// order. Every call has a deadline; an unreachable server is an error naming its address.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {

struct ClientOptions {
  // Server addresses HOST:PORT in sharding order. Unset: GRADWIRE_PS_ADDRS (comma-separated). None
  // (or an empty list): ConfigError.
  std::optional<std::vector<std::string>> servers;
  // The job's token. Unset (or empty): the content of token_file (when not empty), else
  // GRADWIRE_TOKEN, else GRADWIRE_JOB_TOKEN. None of them: ConfigError.
  std::optional<std::string> token;
  std::string token_file;
  // This trainer's rank among the trainers and their number. Unset: the rank and world size the
  // launcher states (gradwire::launcher_rank: RANK / WORLD_SIZE under torchrun or gradwire-run,
  // OMPI_COMM_WORLD_RANK / _SIZE under mpirun, SLURM_PROCID / SLURM_STEP_NUM_TASKS in an srun
  // step), else 0 / 1 when no launcher started the process. A partial or malformed set of the
  // launcher's variables is a ConfigError naming them.
  std::optional<int> rank;
  std::optional<int> world_size;
  // The job's attempt: how often the trainers' group was restarted (docs/ps.md "Restarts"). Unset:
  // TORCHELASTIC_RESTART_COUNT (gradwire-run, torchrun), else SLURM_RESTART_COUNT, else 0.
  std::optional<int64_t> attempt;
  // This trainer's process among the processes that played its rank; a later one must be larger.
  // Unset: the time this process first connected, in ns since the epoch (the same for every
  // client of the process).
  std::optional<uint64_t> incarnation;
  // Deadline of each call (lookups, pushes, table creation).
  std::chrono::milliseconds call_deadline{30000};
  // How long step() waits for the other trainers in sync mode. Unset: GRADWIRE_TIMEOUT, else
  // 300 s.
  std::optional<std::chrono::milliseconds> step_timeout;
  // Idempotent calls (lookups, table creation) are retried this many times on UNAVAILABLE, with
  // exponential backoff from retry_backoff (doubling, at most 2 s), as long as the deadline
  // allows: the default rides out about 7 s of a server that is starting or a loaded machine.
  int max_retries = 8;
  std::chrono::milliseconds retry_backoff{50};
  // TLS: a PEM file of root certificates to trust. Unset: the file GRADWIRE_TLS_ROOTS names, else
  // plaintext (loopback and trusted nets); empty: plaintext.
  std::optional<std::string> tls_root_cert_file;
  // Largest response, in bytes (lookups ask for at most this much per call).
  int64_t max_message_bytes = 64 << 20;
  // Largest request, in bytes: larger lookups and pushes go as several calls. At most the
  // servers' --max-request-bytes (4 MiB by default, gRPC's default: what any caller, token or
  // not, can make a server read).
  int64_t max_request_bytes = 4 << 20;
  // Pushes wait for this client's next call to their server and travel in it (docs/ps.md
  // "Batched calls"): a lookup() or lookup_many() that asks that server (not start_lookup()),
  // flush() or step(); flush() and step() also wait for such lookups on other threads. A sync step then costs
  // one round trip per server (pushes and steps together) instead of two. Off (the default):
  // each push is sent at once, overlapping the transfer with what the trainer does next
  // (DenseModel's buckets during backward). Either way a server's waiting pushes go out once
  // they fill a request (max_request_bytes).
  bool defer_pushes = false;
  // Servers on this trainer's host take pushes and answer lookups through memory shared with them
  // when the tensors live in it (shared_tensor(); docs/ps.md "Shared memory"): no bytes on the
  // socket. Each server says at create_table whether it can (same host identity, region mapped).
  // Unset: on, unless GRADWIRE_PS_SHARED_MEMORY is 0.
  std::optional<bool> shared_memory;
  // An elastic job's trainer (docs/elastic.md "Parameter servers"): create_table takes an existing
  // table whatever its num_trainers, which the job's membership sets (Client::regroup). Unset: on
  // when GRADWIRE_ELASTIC_ID is set (gradwire-run --elastic sets it for each worker).
  std::optional<bool> elastic;
  // This trainer's host identity for that choice. Unset: GRADWIRE_HOST_ID, else
  // "<hostname>/<boot id>" (gradwire/common/host_identity.h).
  std::optional<std::string> host_identity;
};

// Pure: `options` with every field that defaults from the environment filled from `env`
// (servers, token, rank, world_size, attempt, step_timeout, tls_root_cert_file, shared_memory,
// elastic, host_identity), as connect()
// uses them; the incarnation stays unset (connect() takes the process's). Throws ConfigError
// naming what is missing or malformed.
ClientOptions resolve(const ClientOptions& options, const EnvMap& env);

// One table's ids in a lookup of several tables (Client::lookup_many).
struct TableIds {
  std::string table;
  at::Tensor ids;
};

// A lookup in flight (Client::start_lookup).
class PendingLookup {
 public:
  virtual ~PendingLookup() = default;
  // Blocks until every owner answered (or the call deadline passed) and returns the rows as
  // lookup() would. Throws what lookup() throws; call it once.
  virtual at::Tensor wait() = 0;
};

class Client {
 public:
  virtual ~Client() = default;

  virtual int num_servers() const = 0;
  virtual const std::vector<std::string>& servers() const = 0;
  // This trainer's rank among the trainers, and their number (ClientOptions::rank, world_size).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Creates the table on every server, or checks that it exists with an equal config (then keeps
  // its content: a restarted server's restored rows stay). A different config is InvalidArgument.
  // Sets this client's step counter for a sync table to the servers' step, for an async one to 0.
  // Sync servers that disagree on the step (a group restarted mid-step, a server restored from an
  // older checkpoint) make every later call on the table a BackendError until resume(). Blocks.
  virtual void create_table(const TableConfig& config) = 0;
  // A restarted trainer resumes at `step`, its own checkpoint's (0 without one): every sync table
  // this client created is brought to that step on every server (a server whose table is
  // elsewhere reloads its checkpoint file of that step; BackendError naming the steps it holds
  // when it has none), and what an earlier attempt left of a step in progress is discarded. The
  // step counters become `step` (async tables: only the counter). Every trainer of the group
  // calls it with the same step before training on (docs/ps.md "Restarts"). Blocks.
  virtual void resume(int64_t step) = 0;
  // An elastic job's new membership (docs/elastic.md "Parameter servers"; ps::ElasticMember does
  // this for an elastic::State): this client becomes trainer `rank` of `world_size`, its calls
  // carry attempt `attempt` (the generation's number: newer than any before), pushes not yet
  // accepted are dropped (their steps were rolled back), every sync table is brought to `step`
  // (the commit the members go on from) as resume() does, and every table has `world_size`
  // trainers from now on (the servers discard the step in progress when the count changes).
  // Every member calls it with the same step, world_size and attempt before training on. No other
  // call of this client may run meanwhile. Blocks.
  virtual void regroup(int64_t step, int rank, int world_size, int64_t attempt) = 0;
  // The names of the tables this client created, in order of name.
  virtual std::vector<std::string> table_names() const = 0;
  virtual const TableConfig& table(const std::string& name) const = 0;

  // Rows of `ids` (int64, 1-D, duplicates allowed) as an ids.size(0) x dim float tensor. Ids are
  // deduplicated per server and all owners are asked in parallel. Out-of-range ids are
  // InvalidArgument. Blocks until every owner answered.
  virtual at::Tensor lookup(const std::string& table, const at::Tensor& ids) = 0;

  // The rows of several tables at once: result i is lookup(lookups[i].table, lookups[i].ids), but
  // each server gets one call carrying its share of every table (docs/ps.md "Batched calls"),
  // more only where the byte limits need it. Throws what lookup() throws, naming the table.
  // Blocks until every owner answered.
  virtual std::vector<at::Tensor> lookup_many(const std::vector<TableIds>& lookups) = 0;

  // lookup() started without waiting: the calls go out now and wait() collects them, so a trainer
  // can compute while rows arrive (DenseModel's pulls). Unlike lookup(), an unavailable server is
  // not retried: wait() throws. Input errors are thrown here. `wire` at::kHalf or at::kBFloat16
  // has the servers answer in 16 bits (half the bytes; the rows arrive widened to float32).
  // `out` (float [n, dim], contiguous), when given, receives the rows and wait() returns it; a
  // server that shares memory writes them there itself when `out` is a shared_tensor() and the
  // ids are unique, sorted and its own (DenseModel's pulls).
  virtual std::unique_ptr<PendingLookup> start_lookup(const std::string& table,
                                                      const at::Tensor& ids,
                                                      at::ScalarType wire = at::kFloat,
                                                      const at::Tensor& out = {}) = 0;

  // Dense tables (TableKind::kDense) start without values on a new server: trainer 0 writes them
  // here (ids as in lookup, unique; rows float [n, dim]), and the servers' lookups wait until it
  // did. Ends the waiting on every server, also those that own none of `ids`, so one call must
  // carry every row. Blocks. InvalidArgument from a trainer other than 0 or for a table that has
  // its values (awaiting_values() false).
  virtual void assign(const std::string& table, const at::Tensor& ids, const at::Tensor& rows) = 0;
  // Whether some server said at create_table that the dense table waits for its values.
  virtual bool awaiting_values(const std::string& table) const = 0;

  // Sends gradient rows (ids: int64 1-D of N, grads: float N x dim; float16 or bfloat16 grads
  // travel in 16 bits and are widened on the server) to their owners without
  // waiting (with ClientOptions::defer_pushes, in this client's next call to each owner);
  // duplicate ids are summed first. Input errors are thrown here; the servers' errors surface
  // from flush() or step(), or from the lookup that carried a deferred push. Grads in a
  // shared_tensor() go by reference to servers that share memory (unique sorted ids): the
  // servers read them until the step is applied, so leave them unchanged until step() returns
  // (sync) or flush() (async).
  virtual void push(const std::string& table, const at::Tensor& ids, const at::Tensor& grads) = 0;
  // Waits until every push sent so far was applied (async) or accepted (sync); throws the first
  // push error.
  virtual void flush() = 0;
  // Ends this trainer's step on every table: flush(); then, for sync tables, waits until every
  // trainer finished the step and the servers applied it (TimeoutError naming the trainers that
  // did not arrive within step_timeout). Each server gets one call for the steps of all tables,
  // carrying the deferred pushes too (docs/ps.md "Batched calls").
  virtual void step() = 0;
  // Steps this client has completed on `table` (sync: the servers' count at create_table, plus
  // step(); async: the step() calls since create_table).
  virtual int64_t step_count(const std::string& table) const = 0;

  // Asks every server to checkpoint its tables now (ServerOptions::checkpoint_dir). Blocks.
  virtual void checkpoint() = 0;
  // A zero-filled contiguous CPU tensor in memory this trainer can share with the servers on its
  // host (docs/ps.md "Shared memory"); an ordinary tensor for every other use. BackendError when
  // the system refuses the memory.
  virtual at::Tensor shared_tensor(at::IntArrayRef sizes, at::ScalarType dtype = at::kFloat) = 0;
  // Whether `server` said at the last create_table that it shares memory with this trainer.
  virtual bool shares_memory_with(int server) const = 0;
  // How this trainer's lookups, pushes and steps reach `server` now: "shared memory" (a call
  // channel in memory shared with a server on this host, docs/ps.md "Shared-memory calls") or
  // "grpc" (other hosts, shared memory off, or a channel given up after a timeout).
  virtual std::string transport(int server) const = 0;
  // A sync dense table's rows on `server` where that server keeps them, in memory it shares with
  // this trainer (float [rows_on_server(...), dim], view only: never write it): what a lookup
  // would return, read in place. Valid from step()'s (or create_table's) return until this
  // trainer's next push to the table; DenseModel reads its pulls here. An undefined tensor when
  // the server does not offer it (async tables, other hosts, no shared memory).
  virtual at::Tensor server_rows(const std::string& table, int server) = 0;
};

// Connects lazily: no call is made until the first request. Throws ConfigError when no server or
// no token can be found, or the launcher's rank variables are partial or malformed. Reads the
// defaults from the process environment (a snapshot taken now).
std::shared_ptr<Client> connect(const ClientOptions& options = {});
// The same with the defaults read from `env` instead of the process environment (GRADWIRE_PS_ADDRS,
// the token variables, the launcher's rank variables, GRADWIRE_TIMEOUT); `env` is not kept.
std::shared_ptr<Client> connect(const ClientOptions& options, const EnvMap& env);

}  // namespace gradwire::ps
