// Parameter-server tables: what a table is (its configuration), how its rows are spread over the
// servers and how they start. Shared by the server, the client and the modules (docs/ps.md).
//
// Sharding rule: with S servers listed in a fixed order (GRADWIRE_PS_ADDRS), row `id` lives on
// server `id % S` at local row `id / S`. A table's content never depends on S: row `id` is
// initialised from (initializer, seed, id) alone, and every optimizer works row by row.
#pragma once

#include <cstdint>
#include <string>

namespace gradwire::ps {

// kAssign is the summation role of dense tables (docs/ps.md "Dense parameters"): the row becomes
// the step's reduced gradient, and the trainers run their own optimizer on it. It needs sync mode.
enum class OptimizerKind { kSgd, kAdagrad, kAdam, kAssign };
const char* to_string(OptimizerKind kind);

// Server-side optimizer of one table. The update is sparse: only rows that received a gradient
// in a step change, and their state (momentum, sums, moments) likewise.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0.01;
  // SGD: buffer = momentum * buffer + grad; row -= lr * buffer (PyTorch's SGD, dampening 0).
  double momentum = 0.0;
  // Adagrad: sum += grad^2; row -= lr * grad / (sqrt(sum) + eps). initial_accumulator_value 0.
  // Adam: PyTorch's Adam (SparseAdam for the rows touched): betas, eps; bias correction uses the
  // table's step count, incremented once per applied update.
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;  // Adagrad uses 1e-10 in PyTorch; set it explicitly to match.
  // Assign: row = the step's reduced gradient (lr and the rest unused).
};

enum class InitializerKind { kNormal, kUniform, kZeros };
const char* to_string(InitializerKind kind);

// How rows start: normal(0, scale) (torch.nn.Embedding's default with scale 1), uniform(-scale,
// scale) or zeros, drawn from a counter-based generator keyed by (seed, row id).
struct InitializerConfig {
  InitializerKind kind = InitializerKind::kNormal;
  double scale = 1.0;
  uint64_t seed = 0;
};

// When pushed gradients are applied.
//  kSync:  the server collects the pushes of all `num_trainers` trainers for a step, reduces them,
//          applies the optimizer once, and only then answers lookups of the next step.
//  kAsync: each push is applied when it arrives (Hogwild-style, as PyTorch's DistributedOptimizer).
enum class UpdateMode { kSync, kAsync };
const char* to_string(UpdateMode mode);

// How the gradients of the trainers are combined. kMean (default) divides by num_trainers, which
// matches DDP's averaging of dense gradients: N trainers with equal batches then train exactly like
// one process on the concatenated batch. In async mode each push is scaled by 1/num_trainers.
enum class GradientReduction { kMean, kSum };
const char* to_string(GradientReduction reduction);

// What a table holds (docs/ps.md).
//  kEmbedding: rows drawn by the initializer, looked up and pushed a few at a time.
//  kDense:     a model's dense parameters cut into blocks of whole rows (gradwire/ps/dense.h). A
//              new dense shard waits for its values: lookups wait (up to their deadline) until
//              trainer 0 assigned the rows it holds (Client::assign), so every trainer starts
//              from trainer 0's parameters. A shard restored from a checkpoint has its values.
enum class TableKind { kEmbedding, kDense };
const char* to_string(TableKind kind);

// A table: num_rows x dim float32 rows.
struct TableConfig {
  std::string name;  // [A-Za-z0-9_.-]{1,64}
  int64_t num_rows = 0;
  int64_t dim = 0;
  OptimizerConfig optimizer;
  InitializerConfig initializer;
  UpdateMode mode = UpdateMode::kSync;
  GradientReduction reduction = GradientReduction::kMean;
  int num_trainers = 1;  // trainers pushing to this table (the sync barrier's size)
  TableKind kind = TableKind::kEmbedding;
  // kAsync: bounded staleness. 0: finish_step never waits. K >= 1: a trainer's step s returns
  // once every trainer finished step s - K or later (stale synchronous parallel), so no trainer
  // runs more than K steps ahead of the slowest. At most 1000000.
  int staleness = 0;
};

// Throws InvalidArgument naming the field when the config cannot work (empty or bad name, rows or
// dim < 1, lr <= 0, betas outside [0, 1), num_trainers < 1 ...).
void validate(const TableConfig& config);
// Whether two configs describe the same table (creating it again with an equal config is fine).
bool same_table(const TableConfig& a, const TableConfig& b);
// One line for messages: "table 'emb' (300 x 64, adagrad lr 0.05, sync, 2 trainers)".
std::string describe(const TableConfig& config);

// The sharding rule (see the top of this file).
inline int owner_of(int64_t id, int num_servers) { return static_cast<int>(id % num_servers); }
inline int64_t local_row(int64_t id, int num_servers) { return id / num_servers; }
// Rows of a table held by server `server` of `num_servers` (ceil((num_rows - server) /
// num_servers), computed without overflow for any num_rows).
inline int64_t rows_on_server(int64_t num_rows, int server, int num_servers) {
  return num_rows > server ? (num_rows - 1 - server) / num_servers + 1 : 0;
}

// Bytes of the shard that server `server_index` of `num_servers` holds: its rows x dim x 4 for
// the weights and again for each optimizer state tensor (SGD with momentum 1, Adagrad 1, Adam 2).
// The whole table's bytes are computed first, with checked multiplication, on every server (one
// that holds no rows too): InvalidArgument saying the table is too large when they exceed int64,
// or when num_rows or dim is negative. Needs 0 <= server_index < num_servers (InvalidArgument).
int64_t shard_bytes(const TableConfig& config, int server_index, int num_servers);

}  // namespace gradwire::ps
