// Repeats and interleaving: a case that compares itself with a reference runs both alternately,
// ours then the reference, `repeats` times, so that noise on a shared machine hits both sides
// alike; the case pools each side's repeats afterwards. The harness owns the order and the
// progress lines; the case's callbacks measure and keep what they measured.
#pragma once

#include <functional>
#include <string>

namespace gradwire::bench {

struct AlternatingRuns {
  int repeats = 1;
  // One run of ours; `repeat` counts from 1.
  std::function<void(int repeat)> ours;
  // One run of the reference after ours; false when it failed. Null: no reference.
  std::function<bool(int repeat)> reference;
  // Receives "repeat 2 of 3" before each repeat when repeats > 1. Null: silent (e.g. ranks that
  // do not report).
  std::function<void(const std::string& line)> progress;
};

// Runs the repeats in order and blocks until they are done. Returns false, after the repeat in
// which it happened, when the reference failed. Exceptions from the callbacks propagate.
bool run_alternating(const AlternatingRuns& runs);

}  // namespace gradwire::bench
