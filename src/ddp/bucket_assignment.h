// Pure: which parameters go into which bucket, and where each lies in the bucket's flat buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradwire::ddp {

// What assignment needs to know of one parameter.
struct ParamShape {
  size_t bytes = 0;     // numel * element size
  std::string group;    // dtype and device, e.g. "Float/cpu": buckets never mix groups
};

// Groups parameters into buckets.
//  order: parameter indices in the order their gradients are expected to become ready (initially
//         reverse registration order; after a rebuild the observed order). Each index once.
//  caps:  byte caps; the first bucket closed in each group uses caps[0], the next caps[1], and
//         so on; the last cap repeats. A bucket closes as soon as it reaches its cap (so a bucket
//         holds at least one parameter and may exceed the cap by its last parameter).
// Buckets are ordered by the position in `order` of their first parameter: the order in which
// they are expected to start filling. Each group's unfinished last bucket is kept.
// Returns the buckets, each a list of parameter indices in buffer order.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<ParamShape>& params,
                                                const std::vector<size_t>& order,
                                                const std::vector<size_t>& caps);

}  // namespace gradwire::ddp
