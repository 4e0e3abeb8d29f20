#include "comm/shm/process_group.h"

#include <ATen/ATen.h>
#include <sys/prctl.h>

#include "comm/core/reduce_kernels.h"
#include "comm/shm/attach.h"
#include "gradwire/common/error.h"

namespace gradwire::shm {

namespace {

ReduceOp from_c10d(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return ReduceOp::kSum;
    case c10d::ReduceOp::AVG:
      return ReduceOp::kAvg;
    case c10d::ReduceOp::MIN:
      return ReduceOp::kMin;
    case c10d::ReduceOp::MAX:
      return ReduceOp::kMax;
    default:
      throw InvalidArgument("gradwire shm: reduce op " + std::to_string(int(op.op_)) +
                            " is not supported; use sum, avg, min or max");
  }
}

const at::Tensor& only_tensor(const char* op, const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1) {
    throw InvalidArgument(std::string("gradwire shm ") + op + ": takes one tensor, got " +
                          std::to_string(tensors.size()));
  }
  return tensors[0];
}

void check_tensor(const char* op, const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_contiguous() || !tensor.device().is_cpu()) {
    throw InvalidArgument(std::string("gradwire shm ") + op +
                          ": tensors must be defined, contiguous and on the CPU");
  }
}

void check_reducible(const char* op, const at::Tensor& tensor, ReduceOp reduce_op) {
  if (!reducible(tensor.scalar_type())) {
    throw InvalidArgument(std::string("gradwire shm ") + op + ": cannot reduce " +
                          c10::toString(tensor.scalar_type()) +
                          " tensors; use float, double, half, bfloat16, int8, uint8, int32 or "
                          "int64");
  }
  if (reduce_op == ReduceOp::kAvg && c10::isIntegralType(tensor.scalar_type(), true)) {
    throw InvalidArgument(std::string("gradwire shm ") + op +
                          ": avg of integer tensors is not an integer; use sum");
  }
}

size_t byte_size(const at::Tensor& tensor) { return tensor.numel() * tensor.element_size(); }

}  // namespace

ProcessGroup::Core::Core(Segment segment_in, int rank, const shm::Options& options)
    : segment(std::move(segment_in)),
      sync(segment, rank),
      collectives(segment, sync, rank, options.small_bytes, options.streaming_bytes) {}

ProcessGroup::ProcessGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           shm::Options options, c10d_adapter::BackendPtr point_to_point)
    : c10d_adapter::BackendBase(rank, size),
      options_(options),
      core_(std::make_shared<Core>(
          join_segment(*store, rank,
                       compute_layout(size, std::max(options.slot_bytes,
                                                     kCacheLine * static_cast<size_t>(size))),
                       options.port, options.timeout),
          rank, options)),
      point_to_point_(std::move(point_to_point)),
      queue_(SerialWorkQueueOptions{
          "shm",
          // Waits sleep on a futex with a timeout for liveness checks; a tighter timer slack than
          // the default 50 µs keeps those timeouts close. The progress thread only.
          [] { prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); },
          // A timed-out wait says which ranks the progress thread was waiting for.
          [core = std::weak_ptr<Core>(core_)] {
            auto alive = core.lock();
            return alive ? alive->sync.describe_wait() : std::string();
          },
          // A caller waiting for an operation that has not started runs it itself (Note [caller
          // runs] in core/serial_work_queue.h): a small allreduce then needs no thread hand-off.
          options.timeout}) {}

ProcessGroup::~ProcessGroup() {
  queue_.shutdown([this] { core_->sync.abort(); });
  core_->sync.withdraw();  // peers still waiting for this rank fail now, naming it
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::enqueue(std::string what, uint64_t signature,
                                                     std::function<void()> run, uint64_t argument) {
  return queue_.enqueue(what, [this, what, signature, argument, run = std::move(run)] {
    const auto start = std::chrono::steady_clock::now();
    core_->sync.begin(what, signature, start + options_.timeout, options_.timeout, argument);
    run();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& options) {
  at::Tensor tensor = only_tensor("broadcast", tensors);
  check_tensor("broadcast", tensor);
  const int root = static_cast<int>(options.rootRank);
  const auto signature =
      op_signature(OpKind::kBroadcast, 0, int(tensor.scalar_type()), root, byte_size(tensor));
  return enqueue("broadcast", signature, [this, tensor, root] {
    core_->collectives.broadcast(tensor.data_ptr(), byte_size(tensor), root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& options) {
  at::Tensor tensor = only_tensor("allreduce", tensors);
  check_tensor("allreduce", tensor);
  const ReduceOp op = from_c10d(options.reduceOp);
  check_reducible("allreduce", tensor, op);
  const std::string what = std::string("allreduce(") + to_string(op) + ")";
  if (auto region = core_->shared_buffers.find(tensor.data_ptr(), byte_size(tensor))) {
    const auto signature = op_signature(OpKind::kSharedAllreduce, int(op),
                                        int(tensor.scalar_type()), 0, byte_size(tensor));
    const uint64_t argument = region->argument();
    return enqueue(
        what, signature,
        [this, tensor, op, region = std::move(*region)] {
          core_->collectives.allreduce_shared(region, tensor.scalar_type(), tensor.numel(), op);
        },
        argument);
  }
  const auto signature =
      op_signature(OpKind::kAllreduce, int(op), int(tensor.scalar_type()), 0, byte_size(tensor));
  return enqueue(what, signature, [this, tensor, op] {
    core_->collectives.allreduce(tensor.data_ptr(), tensor.scalar_type(), tensor.numel(), op);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allocate_shared(int64_t numel, at::ScalarType dtype,
                                                             std::shared_ptr<at::Tensor> out) {
  if (numel < 0) throw InvalidArgument("gradwire shm: a shared buffer cannot have a negative size");
  const size_t bytes = static_cast<size_t>(numel) * c10::elementSize(dtype);
  return enqueue("shared buffer allocation", op_signature(OpKind::kSharedAlloc, 0, 0, 0, bytes),
                 [this, numel, dtype, bytes, out] {
                   std::shared_ptr<const SharedMapping> mapping = allocate_shared_buffer(
                       core_->segment, core_->sync, getRank(), ++core_->shared_buffer_count, bytes);
                   core_->shared_buffers.add(mapping);
                   // The tensor owns the mapping: the storage's deleter holds it.
                   *out = at::from_blob(
                       mapping->own(), {numel}, [mapping](void*) {},
                       at::TensorOptions().dtype(dtype));
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  at::Tensor input = only_tensor("allgather", inputs);
  check_tensor("allgather", input);
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize()) {
    throw InvalidArgument("gradwire shm allgather: needs one list of size() output tensors");
  }
  std::vector<at::Tensor> targets = outputs[0];
  for (const auto& target : targets) {
    check_tensor("allgather", target);
    if (byte_size(target) != byte_size(input)) {
      throw InvalidArgument("gradwire shm allgather: every output must have the input's size");
    }
  }
  const auto signature =
      op_signature(OpKind::kAllgather, 0, int(input.scalar_type()), 0, byte_size(input));
  return enqueue("allgather", signature, [this, input, targets] {
    std::vector<void*> outs;
    for (const auto& target : targets) outs.push_back(target.data_ptr());
    core_->collectives.allgather(input.data_ptr(), byte_size(input), outs.data());
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& options) {
  check_tensor("reduce_scatter", input);
  check_tensor("reduce_scatter", output);
  const ReduceOp op = from_c10d(options.reduceOp);
  check_reducible("reduce_scatter", input, op);
  if (input.numel() != output.numel() * getSize() || input.scalar_type() != output.scalar_type()) {
    throw InvalidArgument(
        "gradwire shm reduce_scatter: input must hold size() * output.numel() elements of the "
        "output's dtype");
  }
  const auto signature =
      op_signature(OpKind::kReduceScatter, int(op), int(input.scalar_type()), 0, byte_size(input));
  return enqueue(std::string("reduce_scatter(") + to_string(op) + ")", signature,
                 [this, input, output, op] {
                   core_->collectives.reduce_scatter(input.data_ptr(), output.data_ptr(),
                                                     input.scalar_type(), output.numel(), op);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::barrier(const c10d::BarrierOptions&) {
  return enqueue("barrier", op_signature(OpKind::kBarrier, 0, 0, 0, 0),
                 [this] { core_->collectives.barrier(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                  int tag) {
  if (!point_to_point_) throw InvalidArgument("gradwire shm: this group has no send/recv");
  return point_to_point_->send(tensors, dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                  int tag) {
  if (!point_to_point_) throw InvalidArgument("gradwire shm: this group has no send/recv");
  return point_to_point_->recv(tensors, src_rank, tag);
}

}  // namespace gradwire::shm
