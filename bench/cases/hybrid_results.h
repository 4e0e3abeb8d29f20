// The measurements of `gradwire-bench hybrid` (gradwire's and the PyTorch reference's, in one
// shape): trainer_results.h's, a step being an epoch of batches, with hybrid's phases. Pure.
//
// JSON of one side (docs/benchmarks.md): {"implementation": "gradwire", "trainers": [{"trainer": 0,
//   "epoch_seconds": [...], "examples_per_epoch": [...], "phase_seconds": {"lookup": [...],
//   "dense_forward": [...], "backward": [...], "allreduce": [...], "push": [...], "step": [...]}},
//   ...]}; every list has one entry per measured epoch (the reference has no allreduce and push).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cases/trainer_results.h"

namespace gradwire::bench {

// The phases of a batch, in loop order (seconds per epoch summed over its batches). A side
// records only the phases it can tell apart; a missing phase is part of another one:
//  lookup:        the embedding's remote lookups (gradwire: RemoteEmbeddingBag forward; PyTorch:
//                 the rpc_sync forward on every server and the concatenation)
//  dense_forward: the DDP-wrapped dense part and the loss
//  backward:      gradwire: loss.backward() less the allreduce wait below (the dense backward and
//                 handing the embedding gradients to the client, which sends them); PyTorch:
//                 dist_autograd.backward, DDP's allreduce and the sends to the servers included
//  allreduce:     gradwire only: how long backward waited for DDP's allreduce after its last
//                 gradient (DdpStats::exposed_s; the rest overlaps backward)
//  push:          gradwire only: Client::flush, until every server acknowledged the pushes
//                 (async: applied, i.e. the server step; sync: accepted)
//  step:          gradwire: the rest of Client::step (sync: the servers' step) and the dense
//                 SGD step; PyTorch: DistributedOptimizer.step (the servers' and the dense step)
const std::vector<std::string>& hybrid_phases();

// A trainer's epochs, and every trainer's (trainer_results.h).
using HybridTrainerResult = TrainerSamples;
using HybridResult = TrainerResults;

// The JSON keys of an epoch: "epoch_seconds", "examples_per_epoch".
const StepNames& hybrid_step_names();

// parse_trainer_results with hybrid_step_names().
HybridResult parse_hybrid_result(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
