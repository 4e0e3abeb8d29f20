// Repeats, interleaving and pooling: a case that compares itself with a reference (ddp, hybrid)
// runs both alternately, ours then the reference, `repeats` times, so that noise on a shared
// machine hits both sides alike. The harness owns the order, the progress lines and each side's
// results per repeat; the case's callbacks measure, and the case pools each side afterwards
// (pool_in_order: every repeat's samples concatenated in repeat order, so percentiles of the pool
// weigh every repeat alike). Header only; run_alternating blocks until the repeats are done.
#pragma once

#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::bench {

// Each side's results, one per repeat in the order they ran, and the reference's first document
// (for its fields; null when no reference ran, or on ranks that do not report).
template <class Result>
struct Repeats {
  std::vector<Result> ours;
  std::vector<Result> reference;
  nlohmann::json reference_document;
};

template <class Result>
struct AlternatingRuns {
  int repeats = 1;
  // One run of ours; `repeat` counts from 1.
  std::function<Result(int repeat)> ours;
  // One run of the reference after ours: false when it failed; else `document` receives what it
  // wrote (left null on ranks that do not report). Null: no reference.
  std::function<bool(int repeat, nlohmann::json& document)> reference;
  // What the case keeps of each document the reference wrote (and prints, when it shows every
  // repeat).
  std::function<Result(const nlohmann::json& document)> reference_result;
  // Receives "repeat 2 of 3" before each repeat when repeats > 1. Null: silent (e.g. ranks that
  // do not report).
  std::function<void(const std::string& line)> progress;
};

// Runs the repeats in order, appending what each side measured to `out`. Returns false, after
// the repeat in which it happened, when the reference failed. Exceptions from the callbacks
// propagate.
template <class Result>
bool run_alternating(const AlternatingRuns<Result>& runs, Repeats<Result>& out) {
  for (int repeat = 1; repeat <= runs.repeats; ++repeat) {
    if (runs.repeats > 1 && runs.progress) {
      runs.progress("repeat " + std::to_string(repeat) + " of " + std::to_string(runs.repeats));
    }
    out.ours.push_back(runs.ours(repeat));
    if (!runs.reference) continue;
    nlohmann::json document;
    if (!runs.reference(repeat, document)) return false;
    if (document.is_null()) continue;
    out.reference.push_back(runs.reference_result(document));
    if (out.reference_document.is_null()) out.reference_document = std::move(document);
  }
  return true;
}

// Where a repeat's own tables go: stdout when there is one repeat; else stderr, as progress,
// and stdout gets the pooled tables at the end.
inline std::ostream& repeat_output(int repeats) { return repeats > 1 ? std::cerr : std::cout; }

// How the headers say the reference runs: "alternating with gradwire, 3 times".
inline std::string reference_order(int repeats) {
  return repeats > 1 ? "alternating with gradwire, " + std::to_string(repeats) + " times"
                     : "run after gradwire";
}

// `into` followed by `more`.
template <class T>
void append(std::vector<T>& into, const std::vector<T>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

// The first repeat with every later one merged into it in order: `merge(into, next, where)`
// appends next's samples to into's (`where` names the repeat, "repeat 2") and throws
// InvalidArgument naming `where` when the two measured different things. Empty: a default Result.
template <class Result>
Result pool_in_order(
    const std::vector<Result>& repeats,
    const std::function<void(Result& into, const Result& next, const std::string& where)>& merge) {
  if (repeats.empty()) return {};
  Result pooled = repeats.front();
  for (std::size_t r = 1; r < repeats.size(); ++r) {
    merge(pooled, repeats[r], "repeat " + std::to_string(r + 1));
  }
  return pooled;
}

}  // namespace gradwire::bench
