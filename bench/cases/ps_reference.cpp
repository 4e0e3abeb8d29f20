#include "cases/ps_reference.h"

#include <sstream>

#include "harness/trainer_jobs.h"

namespace gradwire::bench {

namespace {

// Seconds the reference may take before it stops itself: 10 minutes plus 2 s per iteration and
// process (resnet18 on one thread takes a tenth of that; vgg16 more).
int ps_reference_timeout_s(const PsSettings& s) {
  const int iterations = s.warmup + s.measured_iterations();
  return 600 + iterations * (s.trainers + s.servers) * 2;
}

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

ReferenceNeeds ps_reference_needs(const PsSettings& settings) {
  return {settings.python,
          "torch.distributed.rpc",
          {settings.reference_script, GRADWIRE_BENCH_SOURCE_PS_REFERENCE,
           GRADWIRE_BENCH_INSTALLED_PS_REFERENCE}};
}

std::vector<std::string> ps_reference_command(const PythonTorch& python, const std::string& script,
                                              const PsSettings& s) {
  return {python.python,   script,
          "--trainers",    std::to_string(s.trainers),
          "--servers",     std::to_string(s.servers),
          "--model",       s.model,
          "--batch-size",  std::to_string(s.batch_size),
          "--image-size",  std::to_string(s.image_size),
          "--num-classes", std::to_string(s.num_classes),
          "--lr",          number(kPsLearningRate),
          "--momentum",    number(kPsMomentum),
          "--warmup",      std::to_string(s.warmup),
          "--iterations",  std::to_string(s.iterations),
          "--passes",      std::to_string(s.passes),
          "--seed",        std::to_string(s.seed),
          "--timeout",     std::to_string(ps_reference_timeout_s(s)),
          // Its plain step (cases/parity.h), as ours.
          "--plain-warmup", std::to_string(kPsPlainWarmup),
          "--plain-steps", std::to_string(kPsPlainIterations)};
}

nlohmann::json run_ps_reference(const PythonTorch& python, const std::string& script,
                                const PsSettings& settings) {
  return run_reference_command(ps_reference_command(python, script, settings), "ps");
}

}  // namespace gradwire::bench
