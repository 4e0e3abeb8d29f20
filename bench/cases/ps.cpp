// `gradwire-bench ps`: its table entry (ps_case.h) with the trainer bodies (ps_training.h).
#include "cases/ps_case.h"
#include "cases/ps_training.h"
#include "cases/ps_transports.h"
#include "harness/ranks.h"

namespace gradwire::bench {

Subcommand ps_subcommand() {
  return training_subcommand(ps_case(
      [](RankContext& context, const PsSettings& settings, const TrainingJob& job) {
        Communicator& communicator = context.communicator;
        TrainerOutcome outcome;
        if (job.kind == "ps") {
          PsTrainerOutcome ps = train_ps(settings, communicator.rank(), communicator.size());
          outcome.samples = std::move(ps.samples);
          outcome.backend = summarize_transports({ps.transports});  // how the calls went
          outcome.transports = std::move(ps.transports);
          outcome.details = std::move(ps.layout);
          if (settings.print_layout) outcome.text = std::move(ps.layout_text);
          return outcome;
        }
        const auto ddp = job.kind == "ddp" ? context.world.communicator() : nullptr;
        outcome.samples = train_ps_comparison(settings, ddp, communicator.rank());
        if (ddp) outcome.backend = ddp->backend();  // what "auto" became
        return outcome;
      },
      time_ps_plain_step));
}

}  // namespace gradwire::bench
