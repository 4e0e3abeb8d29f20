// ShardedRecordReader as an elastic::State object (docs/elastic.md, "Reading RecordIO files"):
// the hooks that need libtorch's archives and comm's Communicator, kept out of the records
// library. The rest of the reader is in sharded_reader.cpp.
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <algorithm>
#include <string>

#include "chunk_assignment.h"
#include "chunk_claimer.h"
#include "gradwire/comm/communicator.h"
#include "gradwire/common/error.h"
#include "gradwire/data/sharded_reader.h"

namespace gradwire::data {

namespace {

// The epoch as one integer: 0 for none, else epoch + 1.
int64_t epoch_tag(std::optional<uint64_t> epoch) {
  return epoch ? static_cast<int64_t>(*epoch) + 1 : 0;
}

at::Tensor to_tensor(const std::vector<uint64_t>& values) {
  at::Tensor tensor = torch::empty({static_cast<int64_t>(values.size())}, torch::kInt64);
  auto* data = tensor.data_ptr<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<int64_t>(values[i]);
  return tensor;
}

std::vector<uint64_t> to_counts(const at::Tensor& tensor) {
  const at::Tensor flat = tensor.to(torch::kInt64).contiguous().flatten();
  const auto* data = flat.data_ptr<int64_t>();
  std::vector<uint64_t> values(static_cast<size_t>(flat.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<uint64_t>(std::max<int64_t>(0, data[i]));
  }
  return values;
}

}  // namespace

void ShardedRecordReader::prepare_commit(Communicator& communicator) {
  // Note [gathered progress]: a chunk (or the rest of one) is read by one rank at a time and every
  // rank's count of a chunk it does not read is at most the reader's (what the last gathering or
  // load told it), so the maximum over the ranks is the job's count. The epoch travels in the same
  // allreduce as +tag and -tag: the maximum of both tells whether every rank is in the same one.
  const size_t chunks = consumed_.size();
  at::Tensor gathered = torch::empty({static_cast<int64_t>(chunks + 2)}, torch::kInt64);
  auto* data = gathered.data_ptr<int64_t>();
  for (size_t i = 0; i < chunks; ++i) data[i] = static_cast<int64_t>(consumed_[i]);
  const int64_t tag = epoch_tag(epoch());
  data[chunks] = tag;
  data[chunks + 1] = -tag;
  communicator.allreduce(gathered, ReduceOp::kMax)->wait();
  data = gathered.data_ptr<int64_t>();
  const int64_t highest = data[chunks];
  const int64_t lowest = -data[chunks + 1];
  if (highest != lowest) {
    auto name = [](int64_t t) { return t == 0 ? std::string("none") : std::to_string(t - 1); };
    throw InvalidArgument(
        "gradwire: ShardedRecordReader::prepare_commit found the ranks in different epochs (from " +
        name(lowest) + " to " + name(highest) +
        "); commit at the same point of the same epoch on every rank");
  }
  for (size_t i = 0; i < chunks; ++i) consumed_[i] = static_cast<uint64_t>(data[i]);
}

void ShardedRecordReader::save(torch::serialize::OutputArchive& archive) const {
  std::vector<uint64_t> chunk_records;
  for (const auto& counts : record_counts_) {
    chunk_records.insert(chunk_records.end(), counts.begin(), counts.end());
  }
  archive.write("epoch", torch::tensor(epoch_tag(epoch()), torch::kInt64), /*is_buffer=*/true);
  archive.write("consumed", to_tensor(consumed_), /*is_buffer=*/true);
  archive.write("chunk_records", to_tensor(chunk_records), /*is_buffer=*/true);
}

void ShardedRecordReader::load(torch::serialize::InputArchive& archive) {
  torch::Tensor epoch_value;
  torch::Tensor consumed;
  torch::Tensor chunk_records;
  archive.read("epoch", epoch_value, /*is_buffer=*/true);
  archive.read("consumed", consumed, /*is_buffer=*/true);
  archive.read("chunk_records", chunk_records, /*is_buffer=*/true);
  std::vector<uint64_t> ours;
  for (const auto& counts : record_counts_) ours.insert(ours.end(), counts.begin(), counts.end());
  const std::vector<uint64_t> saved = to_counts(chunk_records);
  if (saved != ours || static_cast<size_t>(consumed.numel()) != ours.size()) {
    uint64_t saved_records = 0;
    for (uint64_t count : saved) saved_records += count;
    uint64_t our_records = 0;
    for (uint64_t count : ours) our_records += count;
    throw InvalidArgument(
        "gradwire: the saved ShardedRecordReader read " + std::to_string(saved.size()) +
        " chunks of " + std::to_string(saved_records) + " records; this one reads " +
        std::to_string(ours.size()) + " chunks of " + std::to_string(our_records) +
        ". Give every reader the same files in the same order.");
  }
  stop_epoch();
  consumed_ = to_counts(consumed);
  const int64_t tag = epoch_value.item<int64_t>();
  loaded_epoch_.reset();
  if (tag > 0) loaded_epoch_ = static_cast<uint64_t>(tag - 1);
}

void ShardedRecordReader::reshard(int rank, int world_size, int64_t generation) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw InvalidArgument("gradwire: ShardedRecordReader::reshard to rank " + std::to_string(rank) +
                          " of " + std::to_string(world_size) + " ranks");
  }
  const std::optional<uint64_t> current = epoch();
  stop_epoch();
  options_.rank = rank;
  options_.world_size = world_size;
  generation_ = generation;
  shares_ = assign_chunks(record_counts_, world_size);
  if (options_.partition == Partition::kDynamic) {
    claimer_.reset();  // its thread claims for the old rank
    claimer_ = std::make_unique<detail::ChunkClaimer>(options_.counter, rank);
  }
  if (current) continue_epoch(*current);
}

}  // namespace gradwire::data
