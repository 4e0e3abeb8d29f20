// The reducer: fills buckets from autograd hooks, launches their reduction while backward runs,
// and writes averaged gradients back when backward ends. See docs/ddp.md.
//
// One iteration's states (checked transitions, see transition()):
//   kIdle ──arm()──> kArmed ──first gradient hook──> kReducing ──end of backward──> kIdle
//   kArmed ──arm()/disarm()──> (forward without backward: start over)
// Hooks that fire while kIdle (no_sync, or a backward not through DDP's forward) do nothing: the
// gradient stays accumulated in .grad and is reduced by the next synchronised iteration.
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "autograd_hooks.h"
#include "buckets.h"
#include "gradwire/comm/communicator.h"
#include "gradwire/ddp/ddp.h"
#include "iteration_timer.h"

namespace gradwire::ddp {

struct ReducerOptions {
  std::vector<size_t> caps_bytes;  // first bucket's cap, then the others'
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  bool shared_buckets = true;  // CPU buckets from comm->shared_buffer (collective)
  bool static_graph = false;
  std::shared_ptr<CommHook> comm_hook;  // never null
  bool record_events = false;
  ReductionSchedule schedule = ReductionSchedule::kOverlapped;
};

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  // params: distinct tensors that require grad; names: one per parameter, for messages.
  static std::shared_ptr<Reducer> create(std::vector<at::Tensor> params,
                                         std::vector<std::string> names,
                                         std::shared_ptr<Communicator> comm,
                                         ReducerOptions options);

  // Before a synchronised forward: rebuilds the buckets once, after the first iteration
  // (collective: rank 0's gradient order is broadcast).
  void rebuild_buckets_if_due();
  // After a synchronised forward: expect a backward pass. outputs: the forward's tensors (for
  // find_unused_parameters); outputs_known is false when the result type hid them. divisor: the
  // number of ranks the summed gradients are divided by in this iteration (comm->size() but
  // under a Join, join.h).
  void arm(const std::vector<at::Tensor>& outputs, bool outputs_known, double forward_seconds,
           int divisor);
  // After a forward that will not be synchronised.
  void disarm();
  // A joined rank's part in the others' synchronised backward (join.h): the same collectives in
  // the same order as finalize() issues them, with zero gradients: every bucket through the comm
  // hook, and the used-parameter map when tracked. Counts as a synchronised iteration (for the
  // rebuild). Blocks. The buckets' memory takes part in the reduction, so .grad that lives there
  // (homed, or gradient_as_bucket_view) holds the others' result afterwards. In join_shadow.cpp.
  void shadow_backward();

  DdpStats stats() const;
  void reset_stats();
  std::vector<DdpEvent> last_iteration_events() const;

 private:
  enum class State { kIdle, kArmed, kReducing };

  Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
          std::shared_ptr<Communicator> comm, ReducerOptions options);
  void transition(State from, State to);
  void on_grad_ready(size_t index);
  void mark_ready(size_t index, bool used);
  void copy_grad_to_bucket(size_t index, bool used);
  void launch_next_bucket();
  void launch_ready_buckets();
  void finalize();
  void finalize_locked();
  [[noreturn]] void fail_unused(const std::vector<size_t>& missing);
  at::Tensor reduce_used_map();
  // The reduced gradients of `bucket` into its parameters' .grad (copied, or pointed at the
  // bucket).
  void write_grads(const Bucket& bucket);
  void start_iteration(double forward_seconds);
  void set_divisor(int divisor);
  // Points .grad at the bucket (gradient_as_bucket_view) or moves it there (Note [homed
  // gradients]), at construction and at the rebuild.
  void bind_grads_to_views();
  void record(DdpEventKind kind, size_t index);
  bool tracks_unused() const;
  BucketLayout layout_for(const std::vector<size_t>& order);

  const std::vector<at::Tensor> params_;
  const std::vector<std::string> names_;
  const std::shared_ptr<Communicator> comm_;
  const ReducerOptions options_;
  std::unique_ptr<GradReadyHooks> hooks_;
  bool divides_on_fill_ = false;  // the comm hook's answer, asked once

  mutable std::mutex mutex_;   // guards everything below (hooks may run on autograd threads)
  double fill_scale_ = 1.0;    // this iteration: gradients are multiplied by it into a bucket
  double result_scale_ = 1.0;  // this iteration: a reduced bucket is multiplied by it (Join)
  State state_ = State::kIdle;
  BucketLayout layout_;
  std::vector<bool> ready_;     // this iteration
  std::vector<int32_t> used_;   // this iteration: got a gradient from autograd
  std::vector<size_t> unused_;  // to mark ready at the first hook (found by walk or static)
  std::optional<std::vector<size_t>> static_unused_;  // static_graph: found in iteration one
  at::Tensor globally_used_;  // int32 per parameter, from the last tracked iteration
  size_t next_to_launch_ = 0;
  std::vector<size_t> ready_order_;    // this iteration, for the rebuild
  std::vector<size_t> rebuild_order_;  // rank 0's candidate, kept from the first iteration
  int64_t synced_iterations_ = 0;
  int64_t backward_start_ns_ = 0;  // timeline::now_ns() at the first gradient (timeline on)
  bool rebuilt_ = false;
  IterationTimer timer_;
  std::vector<DdpEvent> events_;
  std::vector<DdpEvent> last_events_;
};

}  // namespace gradwire::ddp
