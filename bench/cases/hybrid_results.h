// The measurements of `gradwire-bench hybrid` (gradwire's and the PyTorch reference's, in one
// shape), their JSON form, percentiles in PyTorch's DDP + RPC benchmark's terms, and the pooling of
// repeats. Pure.
//
// JSON of one side (docs/benchmarks.md): {"implementation": "gradwire", "trainers": [{"trainer": 0,
//   "epoch_seconds": [...], "examples_per_epoch": [...], "phase_seconds": {"lookup": [...],
//   "dense_forward": [...], "backward": [...], "allreduce": [...], "push": [...], "step": [...]}},
//   ...]}; every list has one entry per measured epoch (the reference has no allreduce and push).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

struct HybridTrainerResult {
  int trainer = 0;
  std::vector<double> epoch_seconds;
  std::vector<std::int64_t> examples_per_epoch;
  std::map<std::string, std::vector<double>> phase_seconds;  // by hybrid_phases() name

  // Mean examples per measured epoch (0 when there are none).
  double mean_examples() const;
};

struct HybridResult {
  std::string implementation;                 // "gradwire" or "pytorch"
  std::vector<HybridTrainerResult> trainers;  // ordered by trainer
};

// The "All" row's inputs: every trainer's epochs pooled, and the trainers' mean examples summed
// (the job's examples per epoch).
std::vector<double> pooled_epoch_seconds(const HybridResult& result);
double total_examples_per_epoch(const HybridResult& result);

// Pure: the p50 ex/s of the All row (0 when nothing was measured).
double all_p50_examples_per_second(const HybridResult& result);

// Repeats pooled: per trainer, every repeat's epochs in order. Throws InvalidArgument when the
// repeats disagree on the trainers.
HybridResult pool_repeats(const std::vector<HybridResult>& repeats);

nlohmann::json to_json(const HybridTrainerResult& trainer);
nlohmann::json trainers_to_json(const HybridResult& result);
// Reads "implementation" and "trainers" of a document. Throws InvalidArgument naming `source`
// and the field when one is missing, of the wrong type, or the lists' lengths disagree.
HybridResult parse_hybrid_result(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
