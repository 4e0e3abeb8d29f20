#include "cases/hybrid_reference.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"
#include "harness/command.h"
#include "harness/report.h"

namespace gradwire::bench {

ReferenceNeeds hybrid_reference_needs(const HybridSettings& settings) {
  return {settings.python,
          "torch.distributed.rpc",
          {settings.reference_script, GRADWIRE_BENCH_SOURCE_HYBRID_REFERENCE,
           GRADWIRE_BENCH_INSTALLED_HYBRID_REFERENCE}};
}

namespace {

// Seconds the reference may take before it stops itself: 10 minutes plus 50 ms per batch and
// process.
int hybrid_reference_timeout_s(const HybridSettings& s) {
  const double batches = static_cast<double>(s.warmup + s.epochs) * s.batches;
  return 600 + static_cast<int>(batches * (s.trainers + s.servers) * 0.05);
}

std::vector<std::string> hybrid_reference_command(const PythonTorch& python,
                                                  const std::string& script,
                                                  const HybridSettings& s,
                                                  const std::string& json_path) {
  return {python.python, script,
          "--trainers",  std::to_string(s.trainers),
          "--servers",   std::to_string(s.servers),
          "--rows",      std::to_string(s.rows),
          "--dim",       std::to_string(s.dim),
          "--epochs",    std::to_string(s.epochs),
          "--warmup",    std::to_string(s.warmup),
          "--batches",   std::to_string(s.batches),
          "--seed",      std::to_string(s.seed),
          "--timeout",   std::to_string(hybrid_reference_timeout_s(s)),
          "--json",      json_path};
}

}  // namespace

nlohmann::json run_hybrid_reference(const PythonTorch& python, const std::string& script,
                                    const HybridSettings& settings) {
  const std::string json_path =
      "/tmp/gradwire-bench-hybrid-reference-" + std::to_string(getpid()) + ".json";
  std::remove(json_path.c_str());
  launch::LaunchOptions options;
  options.command = hybrid_reference_command(python, script, settings, json_path);
  options.prefix_output = false;
  options.stdout_fd = 2;  // its messages are progress; the tables are ours
  options.threads_per_worker = 1;
  options.extra_env["OMP_NUM_THREADS"] = "1";
  const launch::LaunchResult result = launch::run_workers(options);
  if (result.exit_code() != 0) {
    std::remove(json_path.c_str());
    throw Error("the PyTorch reference (" + python.python + " " + script + ") failed with exit " +
                "status " + std::to_string(result.exit_code()) + ": see its messages above");
  }
  nlohmann::json document = read_json_file(json_path);
  std::remove(json_path.c_str());
  return document;
}

}  // namespace gradwire::bench
