// Test support for the shm backend's tests: ShmProcessGroups of ranks that are threads of this
// process over one in-memory store, and the job's files left in /dev/shm.
#pragma once

#include <filesystem>
#include <functional>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "comm/shm/process_group.h"
#include "comm/shm/segment.h"
#include "support/rank_threads.h"

namespace gradwire::shm::testing {

// The /dev/shm entries of the job on `port` (segments and shared buffers).
inline int job_files(int port) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().rfind(segment_prefix(port), 0) == 0) ++count;
  }
  return count;
}

// Runs fn(rank, group) for `ranks` threads sharing one in-memory store.
inline void with_groups(int ranks, int port, shm::Options options,
                        const std::function<void(int, shm::ProcessGroup&)>& fn) {
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
  options.port = port;
  gradwire::testing::run_threads(ranks, [&](int r) {
    auto group =
        c10::make_intrusive<shm::ProcessGroup>(store, r, ranks, options, c10d_adapter::BackendPtr());
    fn(r, *group);
  });
}

}  // namespace gradwire::shm::testing
