// `gradwire-bench hybrid --reference pytorch`: PyTorch's DDP + RPC benchmark's algorithm written
// with PyTorch's RPC (TensorPipe), distributed autograd and DistributedOptimizer, in
// bench/reference/hybrid_reference.py. One Python process started by gradwire-bench starts the
// T trainers, S servers and the master itself on loopback ports free at run time, stops them all
// when one fails or its --timeout passes, and writes every trainer's measurements as JSON in the
// shape of hybrid_results.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cases/hybrid_settings.h"
#include "harness/python.h"

namespace gradwire::bench {

// What the reference needs (harness/python.h): Python with torch.distributed.rpc and
// hybrid_reference.py, from --python and --reference-script, else the source tree's script, else
// the installed copy. The user asked for the reference, so the case calls require_reference.
ReferenceNeeds hybrid_reference_needs(const HybridSettings& settings);

// Runs the reference once and returns the document it wrote. Blocks for the whole run; its
// output goes to our stderr. Throws gradwire::Error naming the exit status when it fails.
nlohmann::json run_hybrid_reference(const PythonTorch& python, const std::string& script,
                                    const HybridSettings& settings);

}  // namespace gradwire::bench
