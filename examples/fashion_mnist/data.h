// Batches of Fashion-MNIST images read from RecordIO image records (gradwire-recordio convert)
// through gradwire::data::ShardedRecordReader.
//
// Not thread-safe: one training loop drives a BatchReader. next_batch() blocks while the reader's
// background thread decodes the next chunk.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/data/sharded_reader.h"

namespace fashion_mnist {

// The RecordIO files of a split ("train" or "test") in `data_dir`: SPLIT*.gwrio, sorted by name.
// Throws gradwire::InvalidArgument naming the directory when there are none.
std::vector<std::string> split_files(const std::string& data_dir, const std::string& split);

struct Batch {
  torch::Tensor images;  // [N, 1, 28, 28] float, normalized with the Fashion-MNIST mean and std
  torch::Tensor labels;  // [N] int64
};

class BatchReader {
 public:
  // Opens `files` as this rank's view (see ShardedRecordReader for the options).
  BatchReader(std::vector<std::string> files, gradwire::data::ShardedReaderOptions options);

  gradwire::data::ShardedRecordReader& reader() { return reader_; }

  // The next `size` records of this rank as a batch; nullopt when fewer than `size` are left in
  // the epoch (the rest is dropped), or size records when `allow_partial` and at least one is
  // left. Throws gradwire::InvalidArgument when a record is not a 28x28 image record.
  std::optional<Batch> next_batch(int64_t size, bool allow_partial = false);

 private:
  gradwire::data::ShardedRecordReader reader_;
};

}  // namespace fashion_mnist
