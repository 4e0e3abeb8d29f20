// `gradwire-bench ps --reference pytorch`: synchronous parameter-server training of the same model
// written with PyTorch's RPC (TensorPipe) in bench/reference/ps_reference.py: whole parameters on
// S servers (balanced by bytes) that average the T trainers' gradients and step SGD with momentum,
// each trainer pushing to every server after backward and copying the new values in. One Python
// process started by gradwire-bench starts the T + S workers itself on a loopback port free at run
// time, stops them all when one fails or its --timeout passes, and writes every trainer's
// measurements as JSON in the shape of ps_results.h (phases forward, backward, comm).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cases/ps_settings.h"
#include "harness/python.h"

namespace gradwire::bench {

// What the reference needs (harness/python.h): Python with torch.distributed.rpc and
// ps_reference.py, from --python and --reference-script, else the source tree's script, else the
// installed copy.
ReferenceNeeds ps_reference_needs(const PsSettings& settings);

// Pure: the command line of one run, without --json: interpreter, script and the settings' flags.
std::vector<std::string> ps_reference_command(const PythonTorch& python, const std::string& script,
                                              const PsSettings& settings);

// Runs the reference once (run_reference_command) and returns the document it wrote.
nlohmann::json run_ps_reference(const PythonTorch& python, const std::string& script,
                                const PsSettings& settings);

}  // namespace gradwire::bench
