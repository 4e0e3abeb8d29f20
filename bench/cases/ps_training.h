// The trainer side of `gradwire-bench ps`: a zoo model trained through gradwire::ps::DenseModel
// (the parameters as blocks on the job's parameter servers, GRADWIRE_PS_ADDRS), and the
// comparisons' trainers (gradwire DDP, or one process without distribution) on the same model,
// batch and optimizer. Each trains on one synthetic batch made before any clock (ddp_training.h's
// make_synthetic_training, seeded seed * 1000003 + trainer as ps_reference.py seeds its data).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cases/ddp_training.h"
#include "cases/parity.h"
#include "cases/ps_settings.h"
#include "cases/trainer_results.h"
#include "gradwire/comm/communicator.h"

namespace gradwire::bench {

// The model, batch, optimizer and iteration counts of every side (warmup, then passes x
// iterations measured).
TrainingSetup ps_training_setup(const PsSettings& settings);

// What one parameter-server trainer measured, and the layout of the blocks.
struct PsTrainerOutcome {
  TrainerSamples samples;  // ps_phases() and ps_byte_names() per measured iteration
  // {"parameters", "elements", "blocks", "push_messages", "pull_messages", "row_width",
  //  "num_rows", "padding_fraction", "servers": [{"elements", "bytes", "blocks"}, ...]}
  //  and "transport", the line's words for how the calls went (after training)
  nlohmann::json layout;
  std::string layout_text;  // DenseModel::describe_layout()
  // Per server, how this trainer's calls reached it after training (ps::Client::transport:
  // "shared memory" or "grpc"; cases/ps_transports.h).
  std::vector<std::string> transports;
};

// Trains as trainer `trainer` of `trainers` through DenseModel (role, mode and staleness of the
// settings, forward overlapped with the pulls through the zoo's forward pre-hooks), on table
// "ps_bench". Blocks; throws the client's and DenseModel's errors.
PsTrainerOutcome train_ps(const PsSettings& settings, int trainer, int trainers);

// A comparison's trainer: DDP over `communicator` (backend as the caller chose), or without
// distribution when it is null; phases forward and backward. Blocks; collective over the
// communicator.
TrainerSamples train_ps_comparison(const PsSettings& settings,
                                   const std::shared_ptr<Communicator>& communicator, int trainer);

// The plain step of --reference pytorch (cases/parity.h), timed in the calling process: the local
// comparison's loop (zero_grad, forward, cross-entropy, backward, SGD lr 0.01 momentum 0.9) on
// trainer 0's model and batch, kPsPlainWarmup untimed iterations then kPsPlainIterations timed, on
// `threads` intra-op threads (at::set_num_threads, so call it where nothing else computes: the
// conductor).
PlainStep time_ps_plain_step(const PsSettings& settings, int threads);

// The seed of trainer `trainer`'s data and initial weights.
std::uint64_t ps_trainer_seed(const PsSettings& settings, int trainer);

}  // namespace gradwire::bench
