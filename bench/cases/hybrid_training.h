// The trainer side of `gradwire-bench hybrid`: PyTorch's DDP + RPC benchmark's hybrid model trained
// with gradwire. The embedding is ONE parameter-server table of rows x (servers * dim) columns,
// sharded by id over the servers (mathematically the concatenation of PyTorch's DDP + RPC
// benchmark's per-server tables), read through a RemoteEmbeddingBag (mode sum); the dense part is
// PyTorch's DDP + RPC benchmark's Sequential in gradwire::ddp::DistributedDataParallel, trained
// with torch::optim::SGD (lr 0.05); the client's step() ends every batch. Runs in a trainer process
// of a job with GRADWIRE_PS_ADDRS and a token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cases/hybrid_case.h"
#include "cases/hybrid_settings.h"
#include "cases/parity.h"
#include "gradwire/comm/communicator.h"

namespace gradwire::bench {

// Trains settings.warmup + settings.epochs epochs on this trainer (rank `communicator.rank()`)
// and returns the measured epochs: wall time per epoch (steady_clock around its batches, which
// are generated before the clock starts), examples, and the phase split. `transports`, when
// given, gets how this trainer's calls reached each server after the epochs (ps::Client::transport,
// cases/ps_transports.h). Blocks; collective over `communicator` (DDP). Throws the ps client's and
// DDP's errors.
TrainerSamples train_hybrid(const HybridSettings& settings,
                            const std::shared_ptr<Communicator>& communicator, int repeat,
                            std::vector<std::string>* transports = nullptr);

// The plain step of --reference pytorch (cases/parity.h), timed in the calling process: the same
// model held here, without DDP or servers (settings.servers torch::nn::EmbeddingBag(rows, dim,
// sum), concatenated as the reference's lookups, then the dense part), seeded with settings.seed
// and trained with one SGD (lr 0.05) over all of it on trainer 0's batches: zero_grad, lookups,
// dense part and cross-entropy, backward, step, per batch. kHybridPlainWarmup untimed epochs, then
// kHybridPlainEpochs timed, each epoch's batches made before its clock; on `threads` intra-op
// threads (at::set_num_threads, so call it where nothing else computes: the conductor).
PlainStep time_hybrid_plain_step(const HybridSettings& settings, int threads);

}  // namespace gradwire::bench
