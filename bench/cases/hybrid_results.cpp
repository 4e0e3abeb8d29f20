#include "cases/hybrid_results.h"

namespace gradwire::bench {

const std::vector<std::string>& hybrid_phases() {
  static const std::vector<std::string> kPhases = {"lookup",    "dense_forward", "backward",
                                                   "allreduce", "push",          "step"};
  return kPhases;
}

const StepNames& hybrid_step_names() {
  static const StepNames kNames{"hybrid", "epoch"};
  return kNames;
}

HybridResult parse_hybrid_result(const nlohmann::json& document, const std::string& source) {
  return parse_trainer_results(document, source, hybrid_step_names());
}

}  // namespace gradwire::bench
