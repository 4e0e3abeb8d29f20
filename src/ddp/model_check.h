// Cross-rank model check: every rank must hold the same parameters and buffers before DDP
// broadcasts rank 0's values over them, and use the same options that shape its communication
// (the buckets, the broadcasts): otherwise ranks would reduce different buckets and hang or mix
// gradients.
#pragma once

#include <torch/nn/module.h>

#include <optional>
#include <string>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

// One line per parameter (requires_grad or not) and buffer, in registration order:
// "parameter fc.weight Float [10, 20]" / "buffer bn.running_mean Float [16]".
std::vector<std::string> describe_model(torch::nn::Module& module);

// The options every rank must share, one line each, before the model's lines:
// "option bucket_cap_mb 25", ... (the resolved options).
std::vector<std::string> describe_options(const DdpOptions& options);

// Pure. descriptions[r] is rank r's describe_options() + describe_model(). nullopt when all ranks agree; otherwise the
// message of the first difference: the entry index, rank 0's entry and which ranks differ with
// what they have (or that they have fewer/more entries).
std::optional<std::string> find_model_mismatch(
    const std::vector<std::vector<std::string>>& descriptions);

// Collective: exchanges every rank's description (options, then model) over `comm` and throws
// InvalidArgument with find_model_mismatch's message on every rank when they differ.
void check_model_across_ranks(torch::nn::Module& module, const DdpOptions& options,
                              Communicator& comm);

}  // namespace gradwire::ddp
