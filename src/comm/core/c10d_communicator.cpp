#include "comm/core/c10d_communicator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <future>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/core/op_context.h"
#include "comm/core/reduce_kernels.h"
#include "comm/core/rendezvous.h"
#include "comm/core/shared_buffer_source.h"
#include "comm/core/work.h"
#include "common/enum_names.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {
constexpr EnumNames<ReduceOp, 4> kReduceOpNames{{{{ReduceOp::kSum, "sum"},
                                                  {ReduceOp::kAvg, "avg"},
                                                  {ReduceOp::kMin, "min"},
                                                  {ReduceOp::kMax, "max"}}}};
}  // namespace

const char* to_string(ReduceOp op) { return kReduceOpNames.name(op, "?"); }

at::Tensor Communicator::shared_buffer(int64_t numel, at::ScalarType dtype) {
  if (numel < 0) throw InvalidArgument("gradwire shared_buffer: a negative size");
  return at::zeros({numel}, at::TensorOptions().dtype(dtype));
}

namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kAvg:
      return c10d::ReduceOp::AVG;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
  }
  return c10d::ReduceOp::SUM;
}

std::string describe(const char* op, const at::Tensor& tensor, const std::string& extra = "") {
  return std::string(op) + extra + " of " + std::to_string(tensor.numel()) + " " +
         std::string(c10::toString(tensor.scalar_type())) + " elements";
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

// Each request of the progress board's store connection gives up after this long, so that reading
// the board after a timeout cannot hang on a dead store host (1 s is libtorch 1.13's least).
constexpr std::chrono::milliseconds kBoardStoreTimeout{1000};

// The progress board of the communicator under `prefix`; null (no desync reports) when the store
// connection cannot be made, which must not fail the communicator itself.
std::shared_ptr<ProgressBoard> make_board(CommunicatorShared& shared, const std::string& prefix,
                                          int rank, int size) {
  try {
    c10::intrusive_ptr<c10d::Store> store;
    {
      std::lock_guard<std::mutex> lock(shared.board_store_mutex);
      if (!shared.board_store) {
        shared.board_store = connect_board_store(shared.store, kBoardStoreTimeout);
      }
      store = shared.board_store;
    }
    ProgressBoardOptions options;
    options.key_prefix = prefix + "/progress/";
    options.rank = rank;
    options.size = size;
    return std::make_shared<ProgressBoard>(std::move(store), std::move(options));
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

at::Tensor as_transport_dtype(const at::Tensor& tensor) {
  // Gloo moves these bytes untouched (no arithmetic), so any 2-byte type it knows will do.
  if (tensor.scalar_type() == at::kBFloat16 || tensor.scalar_type() == at::kShort) {
    return tensor.view(at::kHalf);
  }
  if (tensor.scalar_type() == at::kBool) return tensor.view(at::kByte);
  return tensor;
}

namespace {

// Note [creation deadline]: Gloo connects a new group's pairs one after another, each waiting up
// to the timeout, so creating a backend whose peers cannot be reached took a multiple of it (25 s
// against a 5 s limit: 4 ranks on 2 hosts whose addresses did not route). So the backend is made
// on a thread of its own, and a caller still waiting at the limit (plus a margin, so that the
// backend's own timeout error, which names the peer's address, comes first when it can) gets a
// timeout naming the limit. The thread then ends by itself when its connects give up; it holds
// copies of what it uses.
c10d_adapter::BackendPtr make_within(const BackendTraits& traits,
                                     const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds limit) {
  auto made = std::make_shared<std::promise<c10d_adapter::BackendPtr>>();
  std::future<c10d_adapter::BackendPtr> result = made->get_future();
  std::thread([make = traits.make, store, rank, size, made] {
    try {
      made->set_value(make(store, rank, size));
    } catch (...) {
      made->set_exception(std::current_exception());
    }
  }).detach();
  const auto margin = std::min(std::chrono::milliseconds(500), limit / 10);
  if (result.wait_for(limit + margin) != std::future_status::ready) {
    throw std::runtime_error("timeout: the backend's connections were not all made within the "
                             "limit (its peers may be unreachable at the addresses they gave)");
  }
  return result.get();
}

}  // namespace

C10dCommunicator::C10dCommunicator(std::shared_ptr<CommunicatorShared> shared, std::string prefix,
                                   int rank, std::vector<int> world_ranks)
    : shared_(std::move(shared)),
      prefix_(std::move(prefix)),
      rank_(rank),
      world_ranks_(std::move(world_ranks)) {
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix_, shared_->store);
  join_members(*shared_->store, prefix_, rank_, size(), shared_->timeout, world_ranks_);
  board_ = make_board(*shared_, prefix_, rank_, size());
  const auto started = std::chrono::steady_clock::now();
  try {
    backend_ = make_within(shared_->traits, store, rank_, size(), shared_->timeout);
  } catch (const std::exception& e) {
    OpContext context{"creating the " + shared_->traits.name + " backend", world_ranks_,
                      shared_->peers, shared_->timeout};
    context.issued = started;  // the error says how long the creation took, not the catch
    std::rethrow_exception(translate_failure(e, context));
  }
  const auto& traits = shared_->traits;
  if ((!traits.native_reduce_scatter || !traits.native_bfloat16) && size() > 1) {
    RingReduceScatterOptions ring;
    ring.rank = rank_;
    ring.size = size();
    ring.timeout = shared_->timeout;
    ring_ = std::make_unique<RingReduceScatter>(backend_, ring);
  }
}

void C10dCommunicator::check_tensor(const char* op, const at::Tensor& tensor) const {
  if (shared_->unfinished) shared_->unfinished->check();  // an earlier operation's failure first
  if (!tensor.defined())
    throw InvalidArgument(std::string("gradwire ") + op + ": tensor is undefined");
  if (!tensor.is_contiguous()) {
    throw InvalidArgument(std::string("gradwire ") + op +
                          ": tensor must be contiguous; call .contiguous() first");
  }
  if (tensor.device().type() != shared_->traits.device.type()) {
    throw InvalidArgument(std::string("gradwire ") + op + ": the " + shared_->traits.name +
                          " backend takes " + c10::DeviceTypeName(shared_->traits.device.type(), true) +
                          " tensors, got one on " + tensor.device().str());
  }
}

void C10dCommunicator::check_rank(const char* op, const char* what, int rank) const {
  if (rank < 0 || rank >= size()) {
    throw InvalidArgument(std::string("gradwire ") + op + ": " + what + " " + std::to_string(rank) +
                          " is not a rank of this communicator (size " + std::to_string(size()) +
                          ")");
  }
}

WorkHandle C10dCommunicator::wrap(c10d_adapter::WorkPtr work, std::string description,
                                  std::function<void()> finish, bool collective) const {
  OpContext context{std::move(description), world_ranks_, shared_->peers, shared_->timeout};
  context.algorithm = shared_->traits.name;
  if (collective && board_) {
    context.sequence = board_->note_issued(context.description);
    context.progress = board_;
  }
  return std::make_shared<C10dWork>(std::move(work), std::move(context), std::move(finish),
                                    shared_->unfinished);
}

namespace {
void check_reduce_op(const at::Tensor& tensor, ReduceOp op) {
  const bool integral = c10::isIntegralType(tensor.scalar_type(), /*includeBool=*/true);
  if (op == ReduceOp::kAvg && integral) {
    throw InvalidArgument(
        "gradwire allreduce: avg of integer tensors is not an integer; use sum "
        "and divide, or convert to floating point");
  }
}
}  // namespace

WorkHandle C10dCommunicator::allreduce(at::Tensor& tensor, ReduceOp op) {
  check_tensor("allreduce", tensor);
  check_reduce_op(tensor, op);
  if (tensor.numel() == 0) return std::make_shared<CompletedWork>();
  const auto& traits = shared_->traits;
  // Reduce in float32 when the backend cannot do bfloat16 arithmetic; round once at the end.
  const bool upcast = tensor.scalar_type() == at::kBFloat16 && !traits.native_bfloat16;
  const bool divide_after = op == ReduceOp::kAvg && !traits.native_avg;
  at::Tensor buffer = upcast ? tensor.to(at::kFloat) : tensor;
  std::vector<at::Tensor> tensors{buffer};
  c10d::AllreduceOptions options;
  options.reduceOp = to_c10d(divide_after ? ReduceOp::kSum : op);
  options.timeout = shared_->timeout;
  auto work = backend_->allreduce(tensors, options);
  std::function<void()> finish;
  if (upcast || divide_after) {
    const int members = size();
    finish = [tensor, buffer, upcast, divide_after, members]() mutable {
      if (divide_after) buffer.div_(members);
      if (upcast) tensor.copy_(buffer);
    };
  }
  return wrap(std::move(work),
              describe("allreduce", tensor, std::string("(") + to_string(op) + ")"),
              std::move(finish));
}

WorkHandle C10dCommunicator::broadcast(at::Tensor& tensor, int root) {
  check_tensor("broadcast", tensor);
  check_rank("broadcast", "root", root);
  if (tensor.numel() == 0) return std::make_shared<CompletedWork>();
  std::vector<at::Tensor> tensors{as_transport_dtype(tensor)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  options.timeout = shared_->timeout;
  return wrap(backend_->broadcast(tensors, options),
              describe("broadcast", tensor, "(root " + std::to_string(root) + ")"));
}

WorkHandle C10dCommunicator::allgather(const at::Tensor& input, at::Tensor& output) {
  check_tensor("allgather", input);
  check_tensor("allgather", output);
  if (output.numel() != input.numel() * size() || output.scalar_type() != input.scalar_type()) {
    throw InvalidArgument("gradwire allgather: output must hold size() * input.numel() = " +
                          std::to_string(input.numel() * size()) + " elements of the input's " +
                          "dtype; got " + std::to_string(output.numel()) + " elements");
  }
  if (input.numel() == 0) return std::make_shared<CompletedWork>();
  const int64_t n = input.numel();
  at::Tensor flat_out = as_transport_dtype(output).view({-1});
  std::vector<at::Tensor> chunks;
  for (int r = 0; r < size(); ++r) chunks.push_back(flat_out.narrow(0, r * n, n));
  std::vector<std::vector<at::Tensor>> outputs{chunks};
  std::vector<at::Tensor> inputs{as_transport_dtype(input).view({-1})};
  c10d::AllgatherOptions options;
  options.timeout = shared_->timeout;
  return wrap(backend_->allgather(outputs, inputs, options), describe("allgather", input));
}

WorkHandle C10dCommunicator::reduce_scatter(const at::Tensor& input, at::Tensor& output,
                                            ReduceOp op) {
  check_tensor("reduce_scatter", input);
  check_tensor("reduce_scatter", output);
  if (input.numel() != output.numel() * size() || output.scalar_type() != input.scalar_type()) {
    throw InvalidArgument("gradwire reduce_scatter: input must hold size() * output.numel() = " +
                          std::to_string(output.numel() * size()) + " elements of the output's " +
                          "dtype; got " + std::to_string(input.numel()) + " elements");
  }
  const bool integral = c10::isIntegralType(input.scalar_type(), /*includeBool=*/true);
  if (op == ReduceOp::kAvg && integral) {
    throw InvalidArgument(
        "gradwire reduce_scatter: avg of integer tensors is not an integer; use sum "
        "and divide, or convert to floating point");
  }
  if (output.numel() == 0) return std::make_shared<CompletedWork>();
  const std::string description =
      describe("reduce_scatter", input, std::string("(") + to_string(op) + ")");
  const auto& traits = shared_->traits;
  const bool upcast = input.scalar_type() == at::kBFloat16 && !traits.native_bfloat16;
  if (traits.native_reduce_scatter && !upcast) {
    const bool divide_after = op == ReduceOp::kAvg && !traits.native_avg;
    c10d::ReduceScatterOptions options;
    options.reduceOp = to_c10d(divide_after ? ReduceOp::kSum : op);
    options.timeout = shared_->timeout;
    at::Tensor flat_out = output.view({-1});
    at::Tensor flat_in = input.reshape({-1});
    std::function<void()> finish;
    if (divide_after) {
      const int members = size();
      finish = [flat_out, members]() mutable { flat_out.div_(members); };
    }
    return wrap(backend_->_reduce_scatter_base(flat_out, flat_in, options), description,
                std::move(finish));
  }
  if (!shm::reducible(input.scalar_type())) {
    throw InvalidArgument("gradwire reduce_scatter: the " + traits.name +
                          " backend cannot reduce " +
                          std::string(c10::toString(input.scalar_type())) +
                          " tensors; use float, double, half, bfloat16, int8, uint8, int32 or "
                          "int64");
  }
  if (size() == 1) {  // the only chunk is this rank's; avg over one rank is the value
    output.view({-1}).copy_(input.reshape({-1}));
    return std::make_shared<CompletedWork>();
  }
  // Backends without reduce_scatter (Gloo, hierarchical): a ring over send/recv, numbered on the
  // progress board as one collective.
  GRADWIRE_CHECK(ring_ != nullptr);
  return wrap(ring_->enqueue(input, output, op), description);
}

WorkHandle C10dCommunicator::barrier() {
  if (shared_->unfinished) shared_->unfinished->check();
  c10d::BarrierOptions options;
  options.timeout = shared_->timeout;
  return wrap(backend_->barrier(options), "barrier");
}

WorkHandle C10dCommunicator::send(const at::Tensor& tensor, int dst_rank, int tag) {
  check_tensor("send", tensor);
  check_rank("send", "destination", dst_rank);
  std::vector<at::Tensor> tensors{as_transport_dtype(tensor)};
  return wrap(backend_->send(tensors, dst_rank, tag),
              describe("send", tensor,
                       "(to " + std::to_string(dst_rank) + ", tag " + std::to_string(tag) + ")"),
              nullptr, /*collective=*/false);
}

WorkHandle C10dCommunicator::recv(at::Tensor& tensor, int src_rank, int tag) {
  check_tensor("recv", tensor);
  check_rank("recv", "source", src_rank);
  std::vector<at::Tensor> tensors{as_transport_dtype(tensor)};
  return wrap(backend_->recv(tensors, src_rank, tag),
              describe("recv", tensor,
                       "(from " + std::to_string(src_rank) + ", tag " + std::to_string(tag) + ")"),
              nullptr, /*collective=*/false);
}

at::Tensor C10dCommunicator::shared_buffer(int64_t numel, at::ScalarType dtype) {
  auto* source = dynamic_cast<SharedBufferSource*>(backend_.get());
  if (source == nullptr) return Communicator::shared_buffer(numel, dtype);
  auto out = std::make_shared<at::Tensor>();
  wrap(source->allocate_shared(numel, dtype, out), "shared buffer allocation of " +
                                                       std::to_string(numel) + " elements of " +
                                                       c10::toString(dtype))
      ->wait();
  return *out;
}

std::shared_ptr<Communicator> C10dCommunicator::split(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (ranks.empty() || sorted != ranks || !distinct || me == ranks.end() || ranks.front() < 0 ||
      ranks.back() >= size()) {
    throw InvalidArgument("gradwire split: ranks " + format_ranks(ranks) +
                          " must be sorted, distinct, within [0, " + std::to_string(size()) +
                          ") and include this rank (" + std::to_string(rank_) + ")");
  }
  int occurrence;
  {
    std::lock_guard<std::mutex> lock(split_mutex_);
    occurrence = split_counts_[join_ranks(ranks)]++;
  }
  std::vector<int> members;
  for (int r : ranks) members.push_back(world_ranks_[r]);
  std::string prefix = prefix_ + "/split/" + join_ranks(ranks) + "/" + std::to_string(occurrence);
  return std::make_shared<C10dCommunicator>(
      shared_, std::move(prefix), static_cast<int>(me - ranks.begin()), std::move(members));
}

}  // namespace gradwire
