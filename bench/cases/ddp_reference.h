// `gradwire-bench ddp --reference pytorch`: the same sweep run with PyTorch's own
// DistributedDataParallel by bench/reference/ddp_reference.py, one Python process per rank,
// started by each gradwire rank with the torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT) on a port rank 0 chose. Optional: when no Python interpreter can import torch the
// reference is skipped with a message.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cases/ddp_settings.h"
#include "gradwire/comm/communicator.h"
#include "harness/python.h"

namespace gradwire::bench {

// What the reference needs (harness/python.h): Python with torch and ddp_reference.py, from
// --python and --reference-script, else the source tree's script, else the installed copy.
ReferenceNeeds ddp_reference_needs(const DdpSettings& settings);

// Pure: the script's command line for these settings (the interpreter first).
std::vector<std::string> reference_command(const PythonTorch& python, const std::string& script,
                                           const DdpSettings& settings, int threads_per_rank,
                                           const std::string& json_path);

// Whether the reference runs: every rank must find Python with torch and the script. Collective
// over `world` (an allreduce), so every rank decides alike.
struct ReferencePlan {
  bool run = false;
  PythonTorch python;
  std::string script;
  std::string why_not;  // when !run: this rank's reason, or that another rank could not
};
ReferencePlan plan_reference(Communicator& world, const DdpSettings& settings);

// Runs the reference sweep once (collective over `world`): rank 0 picks a free port on this
// host, every rank starts its Python process with `master_addr` and that
// port, and waits. Returns false when it failed on any rank; then rank 0 on true gets, in
// `document`, what the script wrote. Blocks for the whole sweep.
bool run_reference_once(Communicator& world, const std::string& master_addr,
                        const ReferencePlan& plan, const DdpSettings& settings,
                        int threads_per_rank, nlohmann::json& document);

}  // namespace gradwire::bench
