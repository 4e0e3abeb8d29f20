// Pooling repeats: the results of several repeats of the same measurement as one, each sample
// list concatenated in repeat order (percentiles of the pool weigh every repeat alike). Pure.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gradwire::bench {

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
