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

// find_python_with_torch (harness/python.h) importing torch.distributed.rpc. The user asked for
// the reference, so none found is an error: throws ConfigError naming the ones tried and saying
// "install python3-torch (scripts/bench does)". Blocks a second or two per candidate.
PythonTorch find_hybrid_python(const std::string& preferred);

// hybrid_reference.py: `preferred` when given, else the source tree's, else the installed copy.
// Throws ConfigError naming the places looked at when it is not there.
std::string find_hybrid_reference_script(const std::string& preferred);

// Pure: seconds the reference may take before it stops itself: 10 minutes plus 50 ms per batch
// and process.
int hybrid_reference_timeout_s(const HybridSettings& settings);

// Pure: the script's command line (the interpreter first).
std::vector<std::string> hybrid_reference_command(const PythonTorch& python,
                                                  const std::string& script,
                                                  const HybridSettings& settings,
                                                  const std::string& json_path);

// Runs the reference once and returns the document it wrote. Blocks for the whole run; its
// output goes to our stderr. Throws gradwire::Error naming the exit status when it fails.
nlohmann::json run_hybrid_reference(const PythonTorch& python, const std::string& script,
                                    const HybridSettings& settings);

}  // namespace gradwire::bench
