#include "comm/hierarchical/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/diagnostics/backend_text.h"
#include "gradwire/common/error.h"
#include "comm/core/op_context.h"
#include "comm/core/reduce_kernels.h"

namespace gradwire {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kWaitSlice{100};

const at::Tensor& only_tensor(const char* op, const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1) {
    throw InvalidArgument(std::string("gradwire hierarchical ") + op + ": takes one tensor, got " +
                          std::to_string(tensors.size()));
  }
  const at::Tensor& tensor = tensors[0];
  if (!tensor.defined() || !tensor.is_contiguous() || !tensor.device().is_cpu()) {
    throw InvalidArgument(std::string("gradwire hierarchical ") + op +
                          ": tensors must be defined, contiguous and on the CPU");
  }
  return tensor;
}

const char* op_name(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return "sum";
    case c10d::ReduceOp::AVG:
      return "avg";
    case c10d::ReduceOp::MIN:
      return "min";
    case c10d::ReduceOp::MAX:
      return "max";
    default:
      throw InvalidArgument("gradwire hierarchical: reduce op " + std::to_string(int(op.op_)) +
                            " is not supported; use sum, avg, min or max");
  }
}

std::chrono::milliseconds until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

HierarchicalProcessGroup::HierarchicalProcessGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                   int rank, int size, HierarchicalOptions options)
    : c10d_adapter::BackendBase(rank, size),
      options_(std::move(options)),
      layout_(plan_host_layout(exchange_host_identities(*store, "hosts", rank, size,
                                                        options_.host_identity, options_.timeout))),
      host_(layout_.host_of_rank.at(rank)),
      queue_(queue_options()) {
  auto prefixed = [&](const std::string& prefix) {
    return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  };
  // Same order on every rank: all ranks, then each host, then the leaders.
  all_ = c10d_adapter::make_gloo(prefixed("all"), rank, size, options_.gloo);
  const auto& mine = layout_.members[host_];
  if (mine.size() > 1) {
    local_ = c10::make_intrusive<shm::ProcessGroup>(
        prefixed("host/" + std::to_string(host_)), layout_.local_index(rank),
        static_cast<int>(mine.size()), options_.shm, c10d_adapter::BackendPtr());
  }
  if (layout_.host_count() > 1 && layout_.leader(host_) == rank) {
    leaders_ =
        c10d_adapter::make_gloo(prefixed("leaders"), host_, layout_.host_count(), options_.gloo);
  }
}

HierarchicalProcessGroup::~HierarchicalProcessGroup() {
  queue_.shutdown([this] { aborting_ = true; });
}

// A timed-out wait says which step this rank's progress thread was in.
SerialWorkQueueOptions HierarchicalProcessGroup::queue_options() {
  std::weak_ptr<Progress> state = progress_state_;
  const std::string who = "rank " + std::to_string(getRank()) + " of the communicator (host '" +
                          layout_.hosts[host_] + "')";
  SerialWorkQueueOptions options;
  options.name = "hierarchical";
  options.describe_wait = [state, who] {
    auto alive = state.lock();
    if (!alive) return who + " has shut the communicator down";
    std::lock_guard<std::mutex> lock(alive->mutex);
    return alive->step.empty() ? who + " had not started a step of it yet"
                               : who + " was in step: " + alive->step;
  };
  return options;
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::enqueue(
    std::string what, std::function<void(Clock::time_point)> run) {
  // Note [last step]: a job's last step stays recorded until the next job starts. Cleared when
  // the job ended, a wait that timed out just as its job failed (the job's own deadline is about
  // the wait's) read an empty step between the clearing and the work's completion, and said the
  // operation had not started. The queue completes works in order, and a timed-out wait reads the
  // step before its own work completed, so the step it reads is its job's or an earlier one's.
  return queue_.enqueue(std::move(what), [this, run = std::move(run)] {
    note_step("");
    run(Clock::now() + options_.timeout);
  });
}

void HierarchicalProcessGroup::note_step(std::string step) {
  std::lock_guard<std::mutex> lock(progress_state_->mutex);
  progress_state_->step = std::move(step);
}

void HierarchicalProcessGroup::run_step(
    const std::string& step, const std::function<c10::intrusive_ptr<c10d::Work>()>& issue,
    Clock::time_point deadline) {
  note_step(step);
  const auto fail = [&](const std::string& why) {
    return std::runtime_error("hierarchical step '" + step + "' failed: " + why);
  };
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = issue();
  } catch (const std::exception& e) {
    throw fail(first_line(e.what()));
  }
  while (true) {
    if (aborting_) throw fail("aborted: the communicator is shutting down");
    if (Clock::now() >= deadline) {
      throw fail("timed out (limit " + format_duration(options_.timeout) + ")");
    }
    try {
      work->wait(std::min(until(deadline), kWaitSlice));
      return;
    } catch (const std::exception& e) {
      if (!work->isCompleted()) continue;  // only this slice ran out
      try {
        work->wait(std::chrono::milliseconds(1));  // the operation's own outcome
        return;
      } catch (const std::exception& failure) {
        throw fail(first_line(failure.what()));
      }
    }
  }
}

void HierarchicalProcessGroup::hierarchical_allreduce(at::Tensor tensor, c10d::ReduceOp op,
                                                      Clock::time_point deadline) {
  const auto& mine = layout_.members[host_];
  const std::string host_text =
      "host '" + layout_.hosts[host_] + "' (ranks " + format_ranks(mine) + ")";
  auto allreduce_on = [&](const c10d_adapter::BackendPtr& group, at::Tensor target,
                          c10d::ReduceOp reduce_op) {
    return [&group, target, reduce_op, deadline]() {
      std::vector<at::Tensor> tensors{target};
      c10d::AllreduceOptions options;
      options.reduceOp = reduce_op;
      options.timeout = until(deadline);
      return group->allreduce(tensors, options);
    };
  };
  if (layout_.single_host()) {  // shm does it all, avg included
    if (local_)
      run_step("shm allreduce within " + host_text, allreduce_on(local_, tensor, op), deadline);
    return;
  }
  const bool average = op.op_ == c10d::ReduceOp::AVG;
  const c10d::ReduceOp combine = average ? c10d::ReduceOp(c10d::ReduceOp::SUM) : op;
  if (local_) {
    run_step("shm allreduce within " + host_text, allreduce_on(local_, tensor, combine), deadline);
  }
  if (leaders_) {
    // Gloo has no bfloat16 arithmetic: the leaders reduce in float32 and round once.
    const bool upcast = tensor.scalar_type() == at::kBFloat16;
    at::Tensor buffer = upcast ? tensor.to(at::kFloat) : tensor;
    run_step("Gloo allreduce among the host leaders, ranks " + format_ranks(layout_.leaders()) +
                 " (" + layout_.describe() + ")",
             allreduce_on(leaders_, buffer, combine), deadline);
    if (average) buffer.div_(getSize());
    if (upcast) tensor.copy_(buffer);
  }
  if (local_) {
    run_step(
        "shm broadcast from rank " + std::to_string(layout_.leader(host_)) + ", the leader of " +
            host_text,
        [&] {
          std::vector<at::Tensor> tensors{tensor};
          c10d::BroadcastOptions options;
          options.rootRank = 0;
          options.timeout = until(deadline);
          return local_->broadcast(tensors, options);
        },
        deadline);
  }
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::allreduce(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& options) {
  at::Tensor tensor = only_tensor("allreduce", tensors);
  const char* name = op_name(options.reduceOp);
  if (!shm::reducible(tensor.scalar_type())) {
    throw InvalidArgument(std::string("gradwire hierarchical allreduce: cannot reduce ") +
                          c10::toString(tensor.scalar_type()) +
                          " tensors; use float, double, half, bfloat16, int8, uint8, int32 or "
                          "int64");
  }
  if (options.reduceOp.op_ == c10d::ReduceOp::AVG &&
      c10::isIntegralType(tensor.scalar_type(), true)) {
    throw InvalidArgument("gradwire hierarchical allreduce: avg of integer tensors; use sum");
  }
  const c10d::ReduceOp op = options.reduceOp;
  return enqueue(std::string("allreduce(") + name + ")",
                 [this, tensor, op](Clock::time_point deadline) {
                   hierarchical_allreduce(tensor, op, deadline);
                 });
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::broadcast(
    std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& options) {
  std::vector<at::Tensor> inputs{only_tensor("broadcast", tensors)};
  const int root = static_cast<int>(options.rootRank);
  return enqueue("broadcast", [this, inputs, root](Clock::time_point deadline) {
    run_step(
        "Gloo broadcast from rank " + std::to_string(root) + " among all ranks",
        [&]() mutable {
          std::vector<at::Tensor> targets = inputs;
          c10d::BroadcastOptions options;
          options.rootRank = root;
          options.timeout = until(deadline);
          return all_->broadcast(targets, options);
        },
        deadline);
  });
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  std::vector<at::Tensor> input{only_tensor("allgather", inputs)};
  auto targets = outputs;
  return enqueue("allgather", [this, input, targets](Clock::time_point deadline) {
    run_step(
        "Gloo allgather among all ranks",
        [&]() mutable {
          auto out = targets;
          auto in = input;
          c10d::AllgatherOptions options;
          options.timeout = until(deadline);
          return all_->allgather(out, in, options);
        },
        deadline);
  });
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::barrier(const c10d::BarrierOptions&) {
  return enqueue("barrier", [this](Clock::time_point deadline) {
    run_step(
        "Gloo barrier among all ranks",
        [&] {
          c10d::BarrierOptions options;
          options.timeout = until(deadline);
          return all_->barrier(options);
        },
        deadline);
  });
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::send(std::vector<at::Tensor>& tensors,
                                                              int dst_rank, int tag) {
  return all_->send(tensors, dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> HierarchicalProcessGroup::recv(std::vector<at::Tensor>& tensors,
                                                              int src_rank, int tag) {
  return all_->recv(tensors, src_rank, tag);
}

}  // namespace gradwire
