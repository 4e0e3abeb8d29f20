// DistributedDataParallel for any torch::nn::Module.
//
//   auto comm = gradwire::init().communicator();
//   gradwire::ddp::DistributedDataParallel ddp(model, comm);      // model: a ModuleHolder or
//   torch::optim::SGD opt(model->parameters(), 0.1);              // std::shared_ptr<Module>
//   for (...) {
//     opt.zero_grad();
//     auto loss = criterion(ddp(input), target);                  // the module's own forward
//     loss.backward();                                            // gradients averaged here
//     opt.step();
//   }
//
// What it does (docs/ddp.md has the details and the differences from PyTorch):
//  - Construction: checks that every rank holds the same parameters and buffers (count, names,
//    shapes, dtypes) and the same options that shape communication (bucket caps,
//    broadcast_buffers, find_unused_parameters, static_graph); InvalidArgument naming the first
//    mismatch and the ranks that differ, on every rank. Then broadcasts parameters and buffers from rank 0. Blocks; collective.
//  - Buckets: parameters in reverse registration order, grouped by dtype and device, capped at
//    first_bucket_mb for the first bucket and bucket_cap_mb for the others. A hook on each
//    parameter's gradient accumulator copies its gradient into the bucket; a full bucket's
//    reduction (the comm hook) starts at once, while backward goes on, in bucket order. When
//    backward ends, the reducer waits for every bucket and writes the averaged gradients to .grad.
//  - After the first synchronised iteration the buckets are rebuilt once from the order in which
//    gradients became ready on rank 0 (not with find_unused_parameters unless static_graph).
//  - Forward, when broadcast_buffers: buffers (e.g. BatchNorm running statistics) are broadcast
//    from rank 0 first. Forward and backward are collective: every rank runs them in step.
//
// Thread safety: one training loop drives one instance; not for concurrent forward calls.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "gradwire/common/env.h"
#include "gradwire/ddp/comm_hook.h"

namespace gradwire::ddp {

// When the reducer starts reducing buckets. Only kOverlapped is for training; the others exist to
// measure what overlapping communication with backward buys (`gradwire-bench reducers`): they
// use the same buckets, copies and comm hook, and differ only in when the hook runs.
enum class ReductionSchedule {
  kOverlapped,         // a bucket's reduction starts as soon as it is full, while backward runs
  kAfterBackward,      // every bucket's reduction starts when backward ends; all then waited
  kAfterBackwardSync,  // when backward ends, each bucket is reduced and waited in turn
};
// "overlapped", "async" (kAfterBackward) or "sync" (kAfterBackwardSync).
const char* to_string(ReductionSchedule schedule);

struct DdpOptions {
  // Cap of every bucket but the first, in MiB. nullopt: GRADWIRE_BUCKET_CAP_MB, else 25 (PyTorch's
  // bucket_cap_mb). Every rank must use the same caps (the construction checks it).
  std::optional<double> bucket_cap_mb;
  // Cap of the first bucket to be reduced, in MiB: small, so communication starts early.
  // nullopt: GRADWIRE_FIRST_BUCKET_MB, else 1.
  std::optional<double> first_bucket_mb;
  // Broadcast buffers from rank 0 at every forward.
  bool broadcast_buffers = true;
  // Walk the autograd graph from the forward outputs after each forward; parameters not reached
  // are marked ready at once (and any parameter still without gradient when backward ends).
  // Parameters unused on every rank keep their .grad unchanged. Costs a graph walk per forward.
  bool find_unused_parameters = false;
  // .grad of each parameter is a view into its bucket (saves one copy and the memory of .grad).
  bool gradient_as_bucket_view = false;
  // CPU buckets live in Communicator::shared_buffer memory, which the shm backend reduces in
  // place (every rank of the host maps every rank's buckets) instead of copying them through its
  // segment; other backends give ordinary memory. false: ordinary memory everywhere.
  bool shared_buckets = true;
  // The graph is the same every iteration: unused parameters are found once, in the first
  // iteration, and buckets are rebuilt even with unused parameters.
  bool static_graph = false;
  // How each bucket is reduced; nullptr means allreduce_hook().
  std::shared_ptr<CommHook> comm_hook;
  // Keep the events of the last synchronised iteration (see last_iteration_events()).
  bool record_events = false;
  // When buckets are reduced; anything but the default is for measurements only.
  ReductionSchedule schedule = ReductionSchedule::kOverlapped;
};

// Pure: `options` with the fields that read a variable (bucket_cap_mb, first_bucket_mb) taken from
// `env`, else their defaults, as the constructor uses them. ConfigError naming a malformed
// variable. The constructor resolves from the process's environment.
DdpOptions resolve(const DdpOptions& options, const EnvMap& env);

// One bucket of the current layout.
struct BucketInfo {
  size_t index = 0;
  size_t bytes = 0;
  std::string dtype;                    // e.g. "Float"
  std::string device;                   // e.g. "cpu"
  std::vector<std::string> parameters;  // parameter names in buffer order
};

// Averages per synchronised iteration, in seconds, over the iterations since the last reset.
//  forward:        the wrapper's forward, including the buffer broadcast.
//  backward:       first gradient ready to last gradient ready (backward compute seen by DDP).
//  communication:  first bucket launched to every bucket reduced.
//  overlapped:     the part of communication before the last gradient was ready.
//  exposed:        backward end to gradients written (time backward waits for the network).
struct DdpStats {
  int64_t iterations = 0;
  double forward_s = 0;
  double backward_s = 0;
  double communication_s = 0;
  double overlapped_s = 0;
  double exposed_s = 0;
  bool buckets_rebuilt = false;
  std::string comm_hook;
  std::vector<BucketInfo> buckets;
};
// A few lines for logs: the averages and one line per bucket.
std::string to_string(const DdpStats& stats);

enum class DdpEventKind { kGradReady, kBucketLaunched, kBucketReduced, kBackwardEnd };
const char* to_string(DdpEventKind kind);
struct DdpEvent {
  DdpEventKind kind;
  size_t index;  // parameter index (kGradReady), bucket index (kBucket*), 0 otherwise
  std::chrono::steady_clock::time_point time;
};

class Join;          // join.h
struct JoinOptions;  // join.h
struct JoinResult;   // join.h

namespace detail {

// The non-template engine behind DistributedDataParallel (src/ddp). Holds the module's parameter
// tensors (not the module).
class DdpCore {
 public:
  DdpCore(torch::nn::Module& module, std::shared_ptr<Communicator> comm, DdpOptions options);
  ~DdpCore();
  DdpCore(const DdpCore&) = delete;
  DdpCore& operator=(const DdpCore&) = delete;

  void before_forward();
  void after_forward(const std::vector<at::Tensor>& outputs, bool outputs_known);
  bool set_sync(bool enabled);  // returns the previous value
  DdpStats stats() const;
  void reset_stats();
  std::vector<DdpEvent> last_iteration_events() const;
  Communicator& communicator() const;

  // For Join (join.h) only. attach_join: from the next forward on, each forward that communicates
  // starts with a join round (InvalidArgument if a Join is attached already). finish_join: this
  // rank joined; shadows the others, takes the final model, detaches. detach_join: detaches
  // without shadowing.
  void attach_join(const JoinOptions& options);
  JoinResult finish_join();
  void detach_join();

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

// The tensors of a forward result, for the unused-parameter graph walk. Tensor, vectors, tuples
// and pairs are searched; any other type yields none (then unused parameters are only found when
// backward ends).
template <typename T>
bool collect_tensors(const T&, std::vector<at::Tensor>&);
template <typename T>
bool collect_tensors(const std::vector<T>& v, std::vector<at::Tensor>& out);
template <typename... Ts>
bool collect_tensors(const std::tuple<Ts...>& t, std::vector<at::Tensor>& out);
template <typename A, typename B>
bool collect_tensors(const std::pair<A, B>& p, std::vector<at::Tensor>& out);

inline bool collect_tensors(const at::Tensor& t, std::vector<at::Tensor>& out) {
  out.push_back(t);
  return true;
}
template <typename T>
bool collect_tensors(const T&, std::vector<at::Tensor>&) {
  return false;
}
template <typename T>
bool collect_tensors(const std::vector<T>& v, std::vector<at::Tensor>& out) {
  bool all = true;
  for (const auto& x : v) all = collect_tensors(x, out) && all;
  return all;
}
template <typename... Ts>
bool collect_tensors(const std::tuple<Ts...>& t, std::vector<at::Tensor>& out) {
  return std::apply([&](const auto&... xs) { return (collect_tensors(xs, out) & ... & true); }, t);
}
template <typename A, typename B>
bool collect_tensors(const std::pair<A, B>& p, std::vector<at::Tensor>& out) {
  bool a = collect_tensors(p.first, out);
  bool b = collect_tensors(p.second, out);
  return a && b;
}

}  // namespace detail

// While alive, forward/backward accumulate gradients locally without communication (gradient
// accumulation). The next synchronised iteration reduces the accumulated .grad.
class NoSyncGuard {
 public:
  explicit NoSyncGuard(detail::DdpCore& core) : core_(&core), previous_(core.set_sync(false)) {}
  ~NoSyncGuard() {
    if (core_) core_->set_sync(previous_);
  }
  NoSyncGuard(NoSyncGuard&& other) noexcept : core_(other.core_), previous_(other.previous_) {
    other.core_ = nullptr;
  }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(NoSyncGuard&&) = delete;

 private:
  detail::DdpCore* core_;
  bool previous_;
};

template <typename ModuleType>
class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<ModuleType> module, std::shared_ptr<Communicator> comm,
                          DdpOptions options = {})
      : module_(std::move(module)),
        core_(std::make_unique<detail::DdpCore>(*module_, std::move(comm), std::move(options))) {}
  DistributedDataParallel(torch::nn::ModuleHolder<ModuleType> module,
                          std::shared_ptr<Communicator> comm, DdpOptions options = {})
      : DistributedDataParallel(module.ptr(), std::move(comm), std::move(options)) {}

  // Calls the module's forward with the same arguments and returns its result.
  template <typename... Args>
  auto forward(Args&&... args) {
    core_->before_forward();
    auto result = module_->forward(std::forward<Args>(args)...);
    std::vector<at::Tensor> outputs;
    bool known = detail::collect_tensors(result, outputs);
    core_->after_forward(outputs, known);
    return result;
  }
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*core_); }

  ModuleType& module() { return *module_; }
  const std::shared_ptr<ModuleType>& module_ptr() const { return module_; }
  ModuleType* operator->() { return module_.get(); }
  Communicator& communicator() const { return core_->communicator(); }

  DdpStats stats() const { return core_->stats(); }
  void reset_stats() { core_->reset_stats(); }
  // Events of the last synchronised iteration, in order (needs DdpOptions::record_events).
  std::vector<DdpEvent> last_iteration_events() const { return core_->last_iteration_events(); }

 private:
  friend class Join;

  std::shared_ptr<ModuleType> module_;
  std::unique_ptr<detail::DdpCore> core_;
};

template <typename Impl>
DistributedDataParallel(torch::nn::ModuleHolder<Impl>, std::shared_ptr<Communicator>)
    -> DistributedDataParallel<Impl>;
template <typename Impl>
DistributedDataParallel(torch::nn::ModuleHolder<Impl>, std::shared_ptr<Communicator>, DdpOptions)
    -> DistributedDataParallel<Impl>;

}  // namespace gradwire::ddp
