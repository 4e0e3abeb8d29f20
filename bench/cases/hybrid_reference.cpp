#include "cases/hybrid_reference.h"

#include "harness/trainer_jobs.h"

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
                                                  const HybridSettings& s) {
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
          // Its plain step (cases/parity.h), as ours.
          "--plain-warmup", std::to_string(kHybridPlainWarmup),
          "--plain-steps", std::to_string(kHybridPlainEpochs)};
}

}  // namespace

nlohmann::json run_hybrid_reference(const PythonTorch& python, const std::string& script,
                                    const HybridSettings& settings) {
  return run_reference_command(hybrid_reference_command(python, script, settings), "hybrid");
}

}  // namespace gradwire::bench
