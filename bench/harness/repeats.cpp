#include "harness/repeats.h"

namespace gradwire::bench {

bool run_alternating(const AlternatingRuns& runs) {
  for (int repeat = 1; repeat <= runs.repeats; ++repeat) {
    if (runs.repeats > 1 && runs.progress) {
      runs.progress("repeat " + std::to_string(repeat) + " of " + std::to_string(runs.repeats));
    }
    runs.ours(repeat);
    if (runs.reference && !runs.reference(repeat)) return false;
  }
  return true;
}

}  // namespace gradwire::bench
