// The command line of example-fashion-mnist (docs/data.md#the-fashion-mnist-job).
//
//   example-fashion-mnist --data DIR [--epochs 10] [--batch-size 64] [--lr 0.05] [--seed 1]
//                         [--lr-schedule cosine|step|constant [--lr-step-epochs 4]
//                         [--lr-gamma 0.1]] [--limit N] [--partition static|dynamic]
//                         [--checkpoint-dir DIR [--checkpoint-every STEPS] [--resume]]
//
// Pure parsing; thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradwire/data/sharded_reader.h"
#include "lr_schedule.h"

namespace fashion_mnist {

struct JobOptions {
  // Directory holding train*.gwrio and test*.gwrio (gradwire-recordio convert ... DIR/train).
  std::string data_dir;
  int epochs = 10;
  // Images per step over all ranks; must be a multiple of the number of ranks.
  int64_t batch_size = 64;
  // SGD learning rate (momentum 0.9) at the start; the schedule changes it (lr_schedule.h).
  double lr = 0.05;
  // cosine: from lr to 0 over all steps of the job (per step); step: lr * gamma every
  // lr_step_epochs epochs; constant: lr throughout.
  LrScheduleKind lr_schedule = LrScheduleKind::kCosine;
  int64_t lr_step_epochs = 4;
  double lr_gamma = 0.1;
  // Model initialization, chunk shuffling and dropout derive from it.
  uint64_t seed = 1;
  // At most this many training images per epoch (0: all); for quick runs.
  int64_t limit = 0;
  gradwire::data::Partition partition = gradwire::data::Partition::kStatic;
  // Where checkpoints go (empty: none). One is written after every epoch and, when
  // checkpoint_every > 0, every that many steps (static partition only).
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  // Continue from the newest complete checkpoint in checkpoint_dir (a fresh start when none).
  bool resume = false;
  bool help = false;
};

// Parses argv[1..]. Throws gradwire::InvalidArgument naming the bad flag or value.
JobOptions parse_job_options(const std::vector<std::string>& args);

// The usage text.
std::string job_usage();

}  // namespace fashion_mnist
