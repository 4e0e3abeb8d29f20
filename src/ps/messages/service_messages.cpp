#include "ps/messages/service_messages.h"

#include <array>
#include <sstream>
#include <utility>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

[[noreturn]] void throw_bad_enum(const std::string& field, int value) {
  throw InvalidArgument(
      "gradwire: table config field '" + field + "' has " +
      (value == 0 ? std::string("no value") : "unknown value " + std::to_string(value)) +
      "; the client and the server must use the same gradwire version");
}

// One enum of ours against its wire enum: each pair written once, read both ways.
template <typename Ours, typename Wire, size_t N>
struct EnumPairs {
  const char* field;  // named in the error for a value the table does not hold
  std::array<std::pair<Ours, Wire>, N> pairs;

  Ours from(int value) const {
    for (const auto& [ours, wire] : pairs) {
      if (static_cast<int>(wire) == value) return ours;
    }
    throw_bad_enum(field, value);
  }
  Wire to(Ours value) const {
    for (const auto& [ours, wire] : pairs) {
      if (ours == value) return wire;
    }
    throw_bad_enum(field, static_cast<int>(value));
  }
};

constexpr EnumPairs<OptimizerKind, v1::OptimizerKind, 4> kOptimizers{
    "optimizer.kind",
    {{{OptimizerKind::kSgd, v1::SGD},
      {OptimizerKind::kAdagrad, v1::ADAGRAD},
      {OptimizerKind::kAdam, v1::ADAM},
      {OptimizerKind::kAssign, v1::ASSIGN}}}};
constexpr EnumPairs<TableKind, v1::TableKind, 2> kKinds{
    "kind", {{{TableKind::kEmbedding, v1::EMBEDDING}, {TableKind::kDense, v1::DENSE}}}};
constexpr EnumPairs<InitializerKind, v1::InitializerKind, 3> kInitializers{
    "initializer.kind",
    {{{InitializerKind::kNormal, v1::NORMAL},
      {InitializerKind::kUniform, v1::UNIFORM},
      {InitializerKind::kZeros, v1::ZEROS}}}};
constexpr EnumPairs<UpdateMode, v1::UpdateMode, 2> kModes{
    "mode", {{{UpdateMode::kSync, v1::SYNC}, {UpdateMode::kAsync, v1::ASYNC}}}};
constexpr EnumPairs<GradientReduction, v1::GradientReduction, 2> kReductions{
    "reduction", {{{GradientReduction::kMean, v1::MEAN}, {GradientReduction::kSum, v1::SUM}}}};

// Appends "NAME A, asked B" to `out` when a != b.
template <typename T>
void compare(std::vector<std::string>& out, const std::string& name, const T& a, const T& b) {
  if (a == b) return;
  std::ostringstream text;
  text << (name.empty() ? "" : name + " ") << a << ", asked " << b;
  out.push_back(text.str());
}

}  // namespace

v1::TableConfig to_message(const TableConfig& config) {
  v1::TableConfig message;
  message.set_name(config.name);
  message.set_num_rows(config.num_rows);
  message.set_dim(config.dim);
  v1::OptimizerConfig* optimizer = message.mutable_optimizer();
  optimizer->set_kind(kOptimizers.to(config.optimizer.kind));
  optimizer->set_lr(config.optimizer.lr);
  optimizer->set_momentum(config.optimizer.momentum);
  optimizer->set_beta1(config.optimizer.beta1);
  optimizer->set_beta2(config.optimizer.beta2);
  optimizer->set_eps(config.optimizer.eps);
  v1::InitializerConfig* initializer = message.mutable_initializer();
  initializer->set_kind(kInitializers.to(config.initializer.kind));
  initializer->set_scale(config.initializer.scale);
  initializer->set_seed(config.initializer.seed);
  message.set_mode(kModes.to(config.mode));
  message.set_reduction(kReductions.to(config.reduction));
  message.set_num_trainers(config.num_trainers);
  message.set_kind(kKinds.to(config.kind));
  message.set_staleness(config.staleness);
  return message;
}

TableConfig from_message(const v1::TableConfig& message) {
  TableConfig config;
  config.name = message.name();
  config.num_rows = message.num_rows();
  config.dim = message.dim();
  config.optimizer.kind = kOptimizers.from(message.optimizer().kind());
  config.optimizer.lr = message.optimizer().lr();
  config.optimizer.momentum = message.optimizer().momentum();
  config.optimizer.beta1 = message.optimizer().beta1();
  config.optimizer.beta2 = message.optimizer().beta2();
  config.optimizer.eps = message.optimizer().eps();
  config.initializer.kind = kInitializers.from(message.initializer().kind());
  config.initializer.scale = message.initializer().scale();
  config.initializer.seed = message.initializer().seed();
  config.mode = kModes.from(message.mode());
  config.reduction = kReductions.from(message.reduction());
  config.num_trainers = message.num_trainers();
  config.kind = kKinds.from(message.kind());
  config.staleness = message.staleness();
  return config;
}

std::string describe_difference(const TableConfig& existing, const TableConfig& asked) {
  std::vector<std::string> parts;
  if (existing.num_rows != asked.num_rows || existing.dim != asked.dim) {
    parts.push_back(std::to_string(existing.num_rows) + " x " + std::to_string(existing.dim) +
                    ", asked " + std::to_string(asked.num_rows) + " x " +
                    std::to_string(asked.dim));
  }
  compare(parts, "optimizer", std::string(to_string(existing.optimizer.kind)),
          std::string(to_string(asked.optimizer.kind)));
  compare(parts, "lr", existing.optimizer.lr, asked.optimizer.lr);
  compare(parts, "momentum", existing.optimizer.momentum, asked.optimizer.momentum);
  compare(parts, "beta1", existing.optimizer.beta1, asked.optimizer.beta1);
  compare(parts, "beta2", existing.optimizer.beta2, asked.optimizer.beta2);
  compare(parts, "eps", existing.optimizer.eps, asked.optimizer.eps);
  compare(parts, "initializer", std::string(to_string(existing.initializer.kind)),
          std::string(to_string(asked.initializer.kind)));
  compare(parts, "initializer scale", existing.initializer.scale, asked.initializer.scale);
  compare(parts, "seed", existing.initializer.seed, asked.initializer.seed);
  compare(parts, "mode", std::string(to_string(existing.mode)), std::string(to_string(asked.mode)));
  compare(parts, "reduction", std::string(to_string(existing.reduction)),
          std::string(to_string(asked.reduction)));
  compare(parts, "num_trainers", existing.num_trainers, asked.num_trainers);
  compare(parts, "kind", std::string(to_string(existing.kind)), std::string(to_string(asked.kind)));
  compare(parts, "staleness", existing.staleness, asked.staleness);
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

Attempt from_message(const v1::Attempt& message) {
  if (message.restart() < 0) {
    throw InvalidArgument("gradwire: attempt.restart is " + std::to_string(message.restart()) +
                          "; need >= 0 (the job's restart count)");
  }
  return Attempt{message.restart(), message.incarnation()};
}

v1::Attempt to_message(const Attempt& attempt) {
  v1::Attempt message;
  message.set_restart(attempt.restart);
  message.set_incarnation(attempt.incarnation);
  return message;
}

std::string quoted_name(const std::string& name, size_t limit) {
  if (name.size() <= limit) return "'" + name + "'";
  return "'" + name.substr(0, limit) + "...' (" + std::to_string(name.size()) + " characters)";
}

}  // namespace gradwire::ps
