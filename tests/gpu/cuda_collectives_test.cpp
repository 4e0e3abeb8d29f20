// The nccl backend on CUDA tensors: each collective's result against the value computed on the
// CPU. One rank per GPU (NCCL refuses two ranks of one communicator on the same device), as
// threads of this process; with one GPU the one-rank cases run and the two-rank ones skip.
#include <gtest/gtest.h>
#include <chrono>
#include <thread>

#include "gpu_ranks.h"
#include "gradwire/common/error.h"

namespace {

using gradwire::ReduceOp;
using gradwire::World;
using gradwire::testing::on_gpus;

class NcclCollectives : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { GRADWIRE_NEED_GPUS(GetParam()); }
};

TEST_P(NcclCollectives, AllreduceBroadcastAllgatherMatchTheCpu) {
  const int ranks = GetParam();
  on_gpus(ranks, [&](int rank, World& world) {
    auto comm = world.communicator();
    const auto cuda = torch::TensorOptions().device(comm->device());
    // allreduce sum and avg of 1M floats: rank r holds r + i.
    at::Tensor base = torch::arange(1 << 20, torch::kFloat);
    at::Tensor sum = (base + rank).to(comm->device());
    comm->allreduce(sum, ReduceOp::kSum)->wait();
    at::Tensor want = base * ranks + ranks * (ranks - 1) / 2.0;
    EXPECT_TRUE(torch::equal(sum.cpu(), want)) << "rank " << rank;
    at::Tensor avg = (base + rank).to(comm->device());
    comm->allreduce(avg, ReduceOp::kAvg)->wait();
    EXPECT_TRUE(torch::allclose(avg.cpu(), want / ranks)) << "rank " << rank;
    // broadcast from the last rank.
    at::Tensor value = torch::full({1000}, static_cast<float>(rank), cuda);
    comm->broadcast(value, ranks - 1)->wait();
    EXPECT_TRUE(torch::equal(value.cpu(), torch::full({1000}, ranks - 1.0f)));
    // allgather: rank r contributes r * 10 + [0, 1, 2].
    at::Tensor mine = (torch::arange(3, torch::kFloat) + rank * 10).to(comm->device());
    at::Tensor all = torch::empty({3 * ranks}, cuda.dtype(torch::kFloat));
    comm->allgather(mine, all)->wait();
    for (int r = 0; r < ranks; ++r) {
      EXPECT_TRUE(torch::equal(all.cpu().narrow(0, 3 * r, 3),
                               torch::arange(3, torch::kFloat) + r * 10));
    }
  });
}

TEST_P(NcclCollectives, CpuTensorIsRefusedNamingTheDevice) {
  on_gpus(GetParam(), [&](int, World& world) {
    at::Tensor cpu = torch::ones({4});
    try {
      world.communicator()->allreduce(cpu, ReduceOp::kSum)->wait();
      ADD_FAILURE() << "a CPU tensor was accepted by nccl";
    } catch (const gradwire::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("takes cuda tensors, got one on cpu"), std::string::npos)
          << e.what();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclCollectives, ::testing::Values(1, 2));

// A peer that never issues a collective: rank 0's wait() only orders its stream, NCCL's watchdog
// aborts the communicator after the timeout (gradwire's default async error handling keeps the
// process), and rank 0's next collective throws a TimeoutError naming the operation and rank 1.
TEST(NcclTimeout, AStuckPeerBecomesAnErrorNamingIt) {
  GRADWIRE_NEED_GPUS(2);
  const auto timeout = std::chrono::seconds(5);
  on_gpus(
      2,
      [&](int rank, World& world) {
        auto comm = world.communicator();
        at::Tensor t = torch::ones({1024}, torch::TensorOptions().device(comm->device()));
        comm->allreduce(t, ReduceOp::kSum)->wait();
        torch::cuda::synchronize();
        if (rank == 1) {  // stays away from the second allreduce until rank 0 gave up
          std::this_thread::sleep_for(timeout * 4);
          return;
        }
        comm->allreduce(t, ReduceOp::kSum)->wait();  // returns at once: the stream waits
        torch::cuda::synchronize();  // until the watchdog aborted the communicator
        try {
          comm->allreduce(t, ReduceOp::kSum)->wait();
          ADD_FAILURE() << "the stuck allreduce was never reported";
        } catch (const gradwire::TimeoutError& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find("allreduce(sum) of 1024 Float elements"), std::string::npos) << what;
          EXPECT_NE(what.find("Rank 1"), std::string::npos) << what;
        }
      },
      timeout);
}

}  // namespace
