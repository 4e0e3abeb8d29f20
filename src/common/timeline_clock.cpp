// Clock offsets between processes (pure; gradwire/common/timeline.h, Clocks).
#include <algorithm>
#include <limits>
#include <string>

#include "gradwire/common/timeline.h"

namespace gradwire::timeline {

std::optional<ClockOffset> estimate_clock_offset(const std::vector<ClockSample>& samples) {
  const ClockSample* best = nullptr;
  int64_t best_round_trip = std::numeric_limits<int64_t>::max();
  for (const ClockSample& sample : samples) {
    const int64_t round_trip = sample.local_receive_ns - sample.local_send_ns;
    if (round_trip < 0 || round_trip >= best_round_trip) continue;
    best = &sample;
    best_round_trip = round_trip;
  }
  if (best == nullptr) return std::nullopt;
  // The reference read its clock somewhere in the round trip: assume the middle.
  const int64_t middle = best->local_send_ns + best_round_trip / 2;
  ClockOffset offset;
  offset.offset_ns = best->reference_ns - middle;
  offset.error_ns = (best_round_trip + 1) / 2;
  return offset;
}

std::vector<int64_t> offsets_from_barrier(const std::vector<int64_t>& local_exit_ns) {
  std::vector<int64_t> offsets;
  offsets.reserve(local_exit_ns.size());
  for (int64_t local : local_exit_ns) offsets.push_back(local_exit_ns.front() - local);
  return offsets;
}

std::vector<int> ranks_to_measure(const std::vector<std::string>& kernel_ids) {
  std::vector<int> measured;
  for (size_t rank = 1; rank < kernel_ids.size(); ++rank) {
    if (kernel_ids[rank].empty() || kernel_ids[rank] != kernel_ids[0]) {
      measured.push_back(static_cast<int>(rank));
    }
  }
  return measured;
}

ClockOffset sync_clock_through_store(ClockStore& store, const std::string& prefix, int rank,
                                     const std::vector<int>& measured, int rounds) {
  const auto key = [&](int who, const char* what, int round) {
    return prefix + "/" + std::to_string(who) + "/" + what + "/" + std::to_string(round);
  };
  if (rank == 0) {
    for (int other : measured) {
      for (int round = 0; round < rounds; ++round) {
        store.get(key(other, "ask", round));
        store.set(key(other, "answer", round), std::to_string(job_clock_ns()));
      }
    }
    return ClockOffset{clock_offset_ns(), 0};
  }
  if (std::find(measured.begin(), measured.end(), rank) == measured.end()) {
    return ClockOffset{clock_offset_ns(), 0};
  }
  const std::optional<ClockOffset> offset = measure_clock_offset(
      [&, round = 0]() mutable {
        store.set(key(rank, "ask", round), "");
        const std::string answer = store.get(key(rank, "answer", round++));
        return static_cast<int64_t>(std::stoll(answer));
      },
      rounds);
  if (!offset) return ClockOffset{clock_offset_ns(), 0};
  set_clock_offset(*offset, "rank 0 through the store");
  return *offset;
}

}  // namespace gradwire::timeline
