#include "bucket_assignment.h"

#include <algorithm>
#include <map>

#include "gradwire/common/error.h"

namespace gradwire::ddp {
namespace {

struct OpenBucket {
  std::vector<size_t> members;
  size_t bytes = 0;
  size_t closed = 0;  // buckets of this group closed so far: picks the cap
};

}  // namespace

std::vector<std::vector<size_t>> assign_buckets(const std::vector<ParamShape>& params,
                                                const std::vector<size_t>& order,
                                                const std::vector<size_t>& caps) {
  GRADWIRE_CHECK(!caps.empty());
  GRADWIRE_CHECK_EQ(order.size(), params.size());
  std::vector<size_t> position(params.size(), params.size());
  for (size_t pos = 0; pos < order.size(); ++pos) {
    GRADWIRE_CHECK_LT(order[pos], params.size());
    GRADWIRE_CHECK_EQ(position[order[pos]], params.size());  // each index once
    position[order[pos]] = pos;
  }

  std::vector<std::vector<size_t>> buckets;
  std::map<std::string, OpenBucket> open;
  for (size_t index : order) {
    OpenBucket& bucket = open[params[index].group];
    bucket.members.push_back(index);
    bucket.bytes += params[index].bytes;
    size_t cap = caps[std::min(bucket.closed, caps.size() - 1)];
    if (bucket.bytes >= cap) {
      buckets.push_back(std::move(bucket.members));
      bucket.members.clear();
      bucket.bytes = 0;
      ++bucket.closed;
    }
  }
  for (auto& [group, bucket] : open) {
    if (!bucket.members.empty()) buckets.push_back(std::move(bucket.members));
  }
  std::stable_sort(buckets.begin(), buckets.end(), [&](const auto& a, const auto& b) {
    return position[a.front()] < position[b.front()];
  });
  return buckets;
}

}  // namespace gradwire::ddp
