// `gradwire-bench hybrid`'s table entry (training_case.h): PyTorch's DDP + RPC benchmark's DDP +
// parameter-server training (PyTorch's benchmark_ddp_rpc.py) measured with gradwire, optionally
// side by side with the same algorithm in PyTorch (bench/reference/hybrid_reference.py: RPC,
// distributed autograd and DistributedOptimizer). A step is an epoch of batches. It also runs as
// the ranks of a job gradwire-run --servers S started. Pure but for the body it is given.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/hybrid_settings.h"
#include "cases/training_case.h"

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

const TrainingFormat& hybrid_format();

// The header block: the settings and what the run used (the dense part's backend and trainer
// 0's parameter-server transports, from the first repeat).
void print_hybrid_header(std::ostream& out, const HybridSettings& settings, const RunUsed& used);

// The entry, with `body` training one trainer and `plain` timing the plain step on `threads`
// (hybrid_training.h).
using HybridBody =
    std::function<TrainerOutcome(RankContext& context, const HybridSettings& settings, int repeat)>;
using HybridPlainStep = std::function<PlainStep(const HybridSettings& settings, int threads)>;
TrainingCase<HybridSettings> hybrid_case(HybridBody body, HybridPlainStep plain);

}  // namespace gradwire::bench
