// GPU test support: N ranks as threads of this process, rank r on GPU r, over the nccl backend.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

#include "gradwire/comm/communicator.h"
#include "gradwire/comm/world.h"
#include "support/rank_threads.h"

namespace gradwire::testing {

// Runs fn(rank, world) on `ranks` threads (communicator timeout `timeout`); each sets GPU `rank` current (as a worker does with
// LOCAL_RANK) before init(), so its communicator's device is that GPU.
inline void on_gpus(int ranks, const std::function<void(int, World&)>& fn,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const int port = free_port();
  run_threads(ranks, [&](int rank) {
    set_cuda_device(rank);
    InitOptions options = loopback_options(rank, ranks, port, timeout);
    options.backend = "nccl";
    auto world = init(options);
    ASSERT_EQ(world->communicator()->backend(), "nccl");
    ASSERT_EQ(world->communicator()->device(), torch::Device(torch::kCUDA, rank));
    fn(rank, *world);
  });
}

// Skips the calling test when the machine has fewer than `ranks` GPUs.
#define GRADWIRE_NEED_GPUS(ranks)                                                          \
  if (static_cast<int>(torch::cuda::device_count()) < (ranks)) {                           \
    GTEST_SKIP() << (ranks) << " ranks need " << (ranks) << " GPUs (NCCL takes one device " \
                 << "per rank); this machine has " << torch::cuda::device_count();          \
  }

}  // namespace gradwire::testing
