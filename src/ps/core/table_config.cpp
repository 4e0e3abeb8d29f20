// TableConfig checks and descriptions (gradwire/ps/table.h).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/enum_names.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {
namespace {

constexpr size_t kMaxNameLength = 64;
// rows x dim x 4 bytes x 3 (weights and two Adam moments) must stay far from int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 56;

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

bool name_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

[[noreturn]] void reject(const TableConfig& config, const std::string& field,
                         const std::string& problem) {
  // A name from a request can be long: the message keeps the first kMaxNameLength characters.
  const std::string name = config.name.size() <= kMaxNameLength
                               ? config.name
                               : config.name.substr(0, kMaxNameLength) + "...";
  throw InvalidArgument("gradwire: table '" + name + "': " + field + " " + problem +
                        ". Fix the TableConfig passed to create the table.");
}

void check_finite(const TableConfig& config, const std::string& field, double value) {
  if (!std::isfinite(value)) reject(config, field, "is " + format_number(value) + ", not finite");
}

void validate_optimizer(const TableConfig& config) {
  const OptimizerConfig& opt = config.optimizer;
  if (opt.kind != OptimizerKind::kSgd && opt.kind != OptimizerKind::kAdagrad &&
      opt.kind != OptimizerKind::kAdam && opt.kind != OptimizerKind::kAssign) {
    reject(config, "optimizer.kind",
           "is " + std::to_string(static_cast<int>(opt.kind)) +
               ", not one of sgd, adagrad, adam, assign");
  }
  if (opt.kind == OptimizerKind::kAssign && config.mode != UpdateMode::kSync) {
    reject(config, "optimizer.kind",
           "is assign (the summation role), which needs sync mode: its rows are one step's reduced "
           "gradient");
  }
  check_finite(config, "optimizer.lr", opt.lr);
  if (opt.lr <= 0) reject(config, "optimizer.lr", "is " + format_number(opt.lr) + "; need > 0");
  check_finite(config, "optimizer.momentum", opt.momentum);
  if (opt.momentum < 0) {
    reject(config, "optimizer.momentum", "is " + format_number(opt.momentum) + "; need >= 0");
  }
  check_finite(config, "optimizer.beta1", opt.beta1);
  check_finite(config, "optimizer.beta2", opt.beta2);
  if (opt.beta1 < 0 || opt.beta1 >= 1) {
    reject(config, "optimizer.beta1", "is " + format_number(opt.beta1) + "; need 0 <= beta1 < 1");
  }
  if (opt.beta2 < 0 || opt.beta2 >= 1) {
    reject(config, "optimizer.beta2", "is " + format_number(opt.beta2) + "; need 0 <= beta2 < 1");
  }
  check_finite(config, "optimizer.eps", opt.eps);
  if (opt.eps <= 0) reject(config, "optimizer.eps", "is " + format_number(opt.eps) + "; need > 0");
}

// Optimizer state tensors of a table, each the shape of its weights.
int64_t state_tensors(const OptimizerConfig& optimizer) {
  switch (optimizer.kind) {
    case OptimizerKind::kSgd:
      return optimizer.momentum != 0.0 ? 1 : 0;
    case OptimizerKind::kAdagrad:
      return 1;
    case OptimizerKind::kAdam:
      return 2;
    case OptimizerKind::kAssign:
      return 0;
  }
  return 0;
}

}  // namespace

namespace {
constexpr EnumNames<OptimizerKind, 4> kOptimizerNames{{{{OptimizerKind::kSgd, "sgd"},
                                                        {OptimizerKind::kAdagrad, "adagrad"},
                                                        {OptimizerKind::kAdam, "adam"},
                                                        {OptimizerKind::kAssign, "assign"}}}};
constexpr EnumNames<TableKind, 2> kKindNames{
    {{{TableKind::kEmbedding, "embedding"}, {TableKind::kDense, "dense"}}}};
constexpr EnumNames<InitializerKind, 3> kInitializerNames{{{{InitializerKind::kNormal, "normal"},
                                                            {InitializerKind::kUniform, "uniform"},
                                                            {InitializerKind::kZeros, "zeros"}}}};
constexpr EnumNames<UpdateMode, 2> kModeNames{
    {{{UpdateMode::kSync, "sync"}, {UpdateMode::kAsync, "async"}}}};
constexpr EnumNames<GradientReduction, 2> kReductionNames{
    {{{GradientReduction::kMean, "mean"}, {GradientReduction::kSum, "sum"}}}};
}  // namespace

const char* to_string(OptimizerKind kind) { return kOptimizerNames.name(kind); }
const char* to_string(InitializerKind kind) { return kInitializerNames.name(kind); }
const char* to_string(UpdateMode mode) { return kModeNames.name(mode); }
const char* to_string(TableKind kind) { return kKindNames.name(kind); }
const char* to_string(GradientReduction reduction) { return kReductionNames.name(reduction); }

void validate(const TableConfig& config) {
  if (config.name.empty() || config.name.size() > kMaxNameLength) {
    reject(config, "name",
           "has " + std::to_string(config.name.size()) +
               " characters; need 1 to 64 of [A-Za-z0-9_.-]");
  }
  for (char c : config.name) {
    if (!name_char_ok(c)) {
      reject(config, "name",
             "has the character '" + std::string(1, c) + "'; use only [A-Za-z0-9_.-]");
    }
  }
  if (config.name == "." || config.name == "..") reject(config, "name", "may not be . or ..");
  if (config.num_rows < 1) {
    reject(config, "num_rows", "is " + std::to_string(config.num_rows) + "; need >= 1");
  }
  if (config.dim < 1) reject(config, "dim", "is " + std::to_string(config.dim) + "; need >= 1");
  if (config.num_rows > kMaxElements / config.dim) {
    reject(config, "num_rows x dim",
           "is " + std::to_string(config.num_rows) + " x " + std::to_string(config.dim) +
               ", too large (at most 2^56 values)");
  }
  validate_optimizer(config);
  const InitializerConfig& init = config.initializer;
  if (init.kind != InitializerKind::kNormal && init.kind != InitializerKind::kUniform &&
      init.kind != InitializerKind::kZeros) {
    reject(config, "initializer.kind",
           "is " + std::to_string(static_cast<int>(init.kind)) +
               ", not one of normal, uniform, zeros");
  }
  check_finite(config, "initializer.scale", init.scale);
  if (init.scale < 0) {
    reject(config, "initializer.scale", "is " + format_number(init.scale) + "; need >= 0");
  }
  if (config.mode != UpdateMode::kSync && config.mode != UpdateMode::kAsync) {
    reject(config, "mode",
           "is " + std::to_string(static_cast<int>(config.mode)) + ", not sync or async");
  }
  if (config.reduction != GradientReduction::kMean && config.reduction != GradientReduction::kSum) {
    reject(config, "reduction",
           "is " + std::to_string(static_cast<int>(config.reduction)) + ", not mean or sum");
  }
  if (config.num_trainers < 1) {
    reject(config, "num_trainers", "is " + std::to_string(config.num_trainers) + "; need >= 1");
  }
  if (config.staleness < 0 || config.staleness > 1000000) {
    reject(config, "staleness", "is " + std::to_string(config.staleness) + "; need 0 to 1000000");
  }
  if (config.staleness > 0 && config.mode != UpdateMode::kAsync) {
    reject(config, "staleness",
           "is " + std::to_string(config.staleness) + ", but bounds only async tables (sync is 0)");
  }
  if (config.kind != TableKind::kEmbedding && config.kind != TableKind::kDense) {
    reject(config, "kind",
           "is " + std::to_string(static_cast<int>(config.kind)) + ", not embedding or dense");
  }
}

int64_t shard_bytes(const TableConfig& config, int server_index, int num_servers) {
  if (num_servers < 1 || server_index < 0 || server_index >= num_servers) {
    reject(config, "shard",
           "server " + std::to_string(server_index) + " of " + std::to_string(num_servers) +
               " is no server (need 0 <= server_index < num_servers)");
  }
  if (config.num_rows < 0 || config.dim < 0) {
    reject(config, "num_rows x dim",
           "is " + std::to_string(config.num_rows) + " x " + std::to_string(config.dim) +
               "; need sizes >= 0");
  }
  const int64_t tensors = 1 + state_tensors(config.optimizer);
  // The table's bytes first, whether or not this server holds rows of it.
  int64_t row_bytes = 0;
  int64_t table_bytes = 0;
  if (__builtin_mul_overflow(config.dim, 4 * tensors, &row_bytes) ||
      __builtin_mul_overflow(config.num_rows, row_bytes, &table_bytes)) {
    reject(config, "num_rows x dim",
           "is " + std::to_string(config.num_rows) + " x " + std::to_string(config.dim) +
               ", too large: with 4 bytes a value and " + std::to_string(tensors) +
               " tensor(s) (weights and optimizer state) its bytes exceed 2^63 - 1");
  }
  return rows_on_server(config.num_rows, server_index, num_servers) * row_bytes;
}

bool same_table(const TableConfig& a, const TableConfig& b) {
  const OptimizerConfig& oa = a.optimizer;
  const OptimizerConfig& ob = b.optimizer;
  return a.name == b.name && a.num_rows == b.num_rows && a.dim == b.dim && oa.kind == ob.kind &&
         oa.lr == ob.lr && oa.momentum == ob.momentum && oa.beta1 == ob.beta1 &&
         oa.beta2 == ob.beta2 && oa.eps == ob.eps && a.initializer.kind == b.initializer.kind &&
         a.initializer.scale == b.initializer.scale && a.initializer.seed == b.initializer.seed &&
         a.mode == b.mode && a.reduction == b.reduction && a.num_trainers == b.num_trainers &&
         a.kind == b.kind && a.staleness == b.staleness;
}

std::string describe(const TableConfig& config) {
  const OptimizerConfig& opt = config.optimizer;
  std::string text = std::string(config.kind == TableKind::kDense ? "dense " : "") + "table '" +
                     config.name + "' (" + std::to_string(config.num_rows) + " x " +
                     std::to_string(config.dim) + ", " + to_string(opt.kind) + " lr " +
                     format_number(opt.lr);
  if (opt.kind == OptimizerKind::kSgd && opt.momentum != 0) {
    text += " momentum " + format_number(opt.momentum);
  }
  text += std::string(", ") + to_string(config.mode) + ", " + std::to_string(config.num_trainers) +
          (config.num_trainers == 1 ? " trainer" : " trainers");
  if (config.staleness > 0) text += ", staleness " + std::to_string(config.staleness);
  if (config.reduction == GradientReduction::kSum) text += ", sum";
  return text + ")";
}

}  // namespace gradwire::ps
