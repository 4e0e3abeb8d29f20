#include "cases/collective_ops.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace gradwire::bench {

namespace {

constexpr std::int64_t kPatternPeriod = 1021;  // prime, so the pattern does not align with sizes
constexpr std::int64_t kFloatBytes = 4;

// rank_value(rank, i) for i in [0, count), as a float32 tensor.
at::Tensor rank_values(int rank, std::int64_t count) {
  return at::arange(count, at::kLong).remainder(kPatternPeriod).add(rank + 1).to(at::kFloat);
}

std::int64_t count_mismatches(const at::Tensor& actual, const at::Tensor& expected) {
  return actual.ne(expected).sum().item<std::int64_t>();
}

std::int64_t whole_buffer_count(std::uint64_t bytes, int /*ranks*/) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes) / kFloatBytes);
}

std::uint64_t whole_buffer_bytes(std::int64_t count, int /*ranks*/) {
  return static_cast<std::uint64_t>(count * kFloatBytes);
}

CollectiveBuffers allocate_in_place(std::int64_t count, int /*ranks*/) {
  return {at::zeros({count}, at::kFloat), at::Tensor()};
}

// allreduce (sum): everyone ends with sum over ranks r of rank_value(r, i).
void allreduce_fill(CollectiveBuffers& buffers, int rank) {
  buffers.input.copy_(rank_values(rank, buffers.input.numel()));
}
WorkHandle allreduce_issue(Communicator& communicator, CollectiveBuffers& buffers) {
  return communicator.allreduce(buffers.input, ReduceOp::kSum);
}
std::int64_t allreduce_wrong(const CollectiveBuffers& buffers, int /*rank*/, int ranks) {
  // sum_r (pattern + r + 1) = ranks * pattern + ranks * (ranks + 1) / 2
  const auto count = buffers.input.numel();
  const at::Tensor expected = at::arange(count, at::kLong)
                                  .remainder(kPatternPeriod)
                                  .mul(ranks)
                                  .add(static_cast<std::int64_t>(ranks) * (ranks + 1) / 2)
                                  .to(at::kFloat);
  return count_mismatches(buffers.input, expected);
}

// broadcast (root 0): everyone ends with rank 0's values; the others start poisoned.
constexpr int kBroadcastRoot = 0;
void broadcast_fill(CollectiveBuffers& buffers, int rank) {
  if (rank == kBroadcastRoot) {
    buffers.input.copy_(rank_values(rank, buffers.input.numel()));
  } else {
    buffers.input.fill_(-1.0f);
  }
}
WorkHandle broadcast_issue(Communicator& communicator, CollectiveBuffers& buffers) {
  return communicator.broadcast(buffers.input, kBroadcastRoot);
}
std::int64_t broadcast_wrong(const CollectiveBuffers& buffers, int /*rank*/, int /*ranks*/) {
  return count_mismatches(buffers.input, rank_values(kBroadcastRoot, buffers.input.numel()));
}

// allgather: chunk r of everyone's output holds rank r's values; the output starts poisoned.
std::int64_t allgather_count(std::uint64_t bytes, int ranks) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes) / kFloatBytes / ranks);
}
std::uint64_t allgather_bytes(std::int64_t count, int ranks) {
  return static_cast<std::uint64_t>(count * ranks * kFloatBytes);
}
CollectiveBuffers allgather_allocate(std::int64_t count, int ranks) {
  return {at::zeros({count}, at::kFloat), at::zeros({count * ranks}, at::kFloat)};
}
void allgather_fill(CollectiveBuffers& buffers, int rank) {
  buffers.input.copy_(rank_values(rank, buffers.input.numel()));
  buffers.output.fill_(-1.0f);
}
WorkHandle allgather_issue(Communicator& communicator, CollectiveBuffers& buffers) {
  return communicator.allgather(buffers.input, buffers.output);
}
std::int64_t allgather_wrong(const CollectiveBuffers& buffers, int /*rank*/, int ranks) {
  const auto count = buffers.input.numel();
  std::int64_t wrong = 0;
  for (int r = 0; r < ranks; ++r) {
    wrong += count_mismatches(buffers.output.narrow(0, r * count, count), rank_values(r, count));
  }
  return wrong;
}

// reduce_scatter (sum): as nccl-tests, the size is each rank's whole input (ranks chunks of
// `count`); rank r's output is the sum over ranks of chunk r. The output starts poisoned.
std::int64_t reduce_scatter_count(std::uint64_t bytes, int ranks) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes) / kFloatBytes / ranks) * ranks;
}
CollectiveBuffers reduce_scatter_allocate(std::int64_t count, int ranks) {
  return {at::zeros({count}, at::kFloat), at::zeros({count / ranks}, at::kFloat)};
}
void reduce_scatter_fill(CollectiveBuffers& buffers, int rank) {
  buffers.input.copy_(rank_values(rank, buffers.input.numel()));
  buffers.output.fill_(-1.0f);
}
WorkHandle reduce_scatter_issue(Communicator& communicator, CollectiveBuffers& buffers) {
  return communicator.reduce_scatter(buffers.input, buffers.output, ReduceOp::kSum);
}
std::int64_t reduce_scatter_wrong(const CollectiveBuffers& buffers, int rank, int ranks) {
  // Element i of chunk `rank` is input element rank * count + i on every rank r:
  // sum_r (pattern + r + 1) = ranks * pattern + ranks * (ranks + 1) / 2.
  const auto count = buffers.output.numel();
  const at::Tensor expected = at::arange(count, at::kLong)
                                  .add(static_cast<std::int64_t>(rank) * count)
                                  .remainder(kPatternPeriod)
                                  .mul(ranks)
                                  .add(static_cast<std::int64_t>(ranks) * (ranks + 1) / 2)
                                  .to(at::kFloat);
  return count_mismatches(buffers.output, expected);
}

}  // namespace

float rank_value(int rank, std::int64_t index) {
  return static_cast<float>(index % kPatternPeriod + rank + 1);
}

const std::vector<CollectiveOp>& collective_ops() {
  static const std::vector<CollectiveOp> kOps = {
      {"allreduce", "sum", Collective::kAllReduce, true, whole_buffer_count, whole_buffer_bytes,
       allocate_in_place, allreduce_fill, allreduce_issue, allreduce_wrong},
      {"broadcast", "root 0", Collective::kBroadcast, true, whole_buffer_count, whole_buffer_bytes,
       allocate_in_place, broadcast_fill, broadcast_issue, broadcast_wrong},
      {"allgather", "", Collective::kAllGather, false, allgather_count, allgather_bytes,
       allgather_allocate, allgather_fill, allgather_issue, allgather_wrong},
      {"reduce_scatter", "sum", Collective::kReduceScatter, false, reduce_scatter_count,
       whole_buffer_bytes, reduce_scatter_allocate, reduce_scatter_fill, reduce_scatter_issue,
       reduce_scatter_wrong},
  };
  return kOps;
}

}  // namespace gradwire::bench
