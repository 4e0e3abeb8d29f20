// `gradwire-bench hybrid`: its table entry (hybrid_case.h) with the trainer body
// (hybrid_training.h).
#include "cases/hybrid_case.h"
#include "cases/hybrid_training.h"
#include "harness/ranks.h"

namespace gradwire::bench {

Subcommand hybrid_subcommand() {
  return training_subcommand(hybrid_case(
      [](RankContext& context, const HybridSettings& settings, int repeat) {
        const std::shared_ptr<Communicator> communicator = context.world.communicator();
        TrainerOutcome outcome;
        outcome.samples = train_hybrid(settings, communicator, repeat, &outcome.transports);
        outcome.backend = communicator->backend();  // what "auto" became
        return outcome;
      },
      time_hybrid_plain_step));
}

}  // namespace gradwire::bench
