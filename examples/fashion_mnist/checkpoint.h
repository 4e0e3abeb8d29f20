// Checkpoints of the Fashion-MNIST job: model, optimizer state, epoch and step, the reader's
// position, the learning-rate schedule and the RNG state, one file per rank, written so that a
// crash at any moment leaves either the old or the new checkpoint, never a torn one.
//
// Layout: CHECKPOINT_DIR/step-SSSSSSSSSS/rank-R.pt (torch::serialize archives), plus a COMPLETE
// marker that rank 0 writes once every rank's file is on disk. Every file is written to a
// temporary name, fsync'ed, renamed into place, and the directory fsync'ed. A step directory
// without COMPLETE (a job killed while saving) is ignored and removed by the next save. The two
// newest complete checkpoints are kept.
//
// Thread safety: free functions, no shared state; each rank calls them from its training loop.
// save_checkpoint and the completion protocol block on disk I/O and (via the caller) a barrier.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "gradwire/data/sharded_reader.h"
#include "lr_schedule.h"

namespace fashion_mnist {

// Where training stands: what the loop needs to continue exactly where it was.
struct TrainingPosition {
  int64_t epoch = 0;          // the epoch in progress (or the next one when step_in_epoch == 0)
  int64_t step_in_epoch = 0;  // steps of `epoch` already taken
  int64_t global_step = 0;    // steps taken since the start of training
  gradwire::data::ReaderPosition reader;  // this rank's training reader after those steps
};

// What one rank saves and restores.
struct CheckpointState {
  TrainingPosition position;
  // The schedule the job trains with (like a PyTorch scheduler's state_dict: a resumed job keeps
  // it even when its flags say otherwise). nullopt when loading a checkpoint written before
  // schedules were saved.
  std::optional<LrSchedule> schedule;
  int world_size = 1;
  int rank = 0;
};

// Writes this rank's file of the checkpoint at position.global_step (atomically). Throws
// gradwire::Error naming the path when the disk refuses.
void save_rank_checkpoint(const std::string& dir, const CheckpointState& state,
                          torch::nn::Module& model, torch::optim::Optimizer& optimizer);

// Rank 0, after every rank's save_rank_checkpoint returned (a barrier): writes the COMPLETE
// marker of `global_step` and removes older checkpoints except the newest complete one before it,
// and incomplete ones. Throws gradwire::Error naming the path.
void mark_checkpoint_complete(const std::string& dir, int64_t global_step, int world_size);

// The newest complete checkpoint's step directory in `dir`; nullopt when there is none.
std::optional<std::string> newest_complete_checkpoint(const std::string& dir);

// Loads this rank's file from `step_dir` into model, optimizer and the default CPU generator and
// returns its state. Throws gradwire::InvalidArgument when the file is missing or was written by
// a job with another world size or rank.
CheckpointState load_rank_checkpoint(const std::string& step_dir, int world_size, int rank,
                                     torch::nn::Module& model, torch::optim::Optimizer& optimizer);

}  // namespace fashion_mnist
