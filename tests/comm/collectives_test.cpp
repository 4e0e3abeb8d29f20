// Conformance suite for the Communicator contract, run for every CPU backend (gloo, shm on 1, 2
// and 3 ranks; hierarchical on 3 and 4 ranks over two simulated hosts) as threads of this
// process, for float, double, int32 and bfloat16 at sizes 0, 1, odd and large.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <tuple>

#include "gradwire/comm/communicator.h"
#include "gradwire/common/error.h"
#include "hierarchical_world.h"
#include "support/rank_threads.h"

namespace gradwire {
namespace {

// Like testing::run_ranks, on the named backend.
void run_ranks(const std::string& backend, int world_size,
               const std::function<void(int rank, World& world)>& fn) {
  if (backend == "hierarchical") {
    // Two simulated hosts: the first half of the ranks (rounded up) on "a", the others on "b".
    std::vector<std::string> hosts;
    for (int r = 0; r < world_size; ++r) hosts.push_back(r < (world_size + 1) / 2 ? "a" : "b");
    testing::run_ranks_on_hosts(backend, hosts, fn);
    return;
  }
  const int port = testing::free_port();
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto options = testing::loopback_options(rank, world_size, port, std::chrono::seconds(30));
        options.backend = backend;
        auto world = init(options);
        fn(rank, *world);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kInt, at::kBFloat16};
const std::vector<int64_t> kSizes = {0, 1, 1001, 1 << 18};

// Rank r's input: small integers (exact in bfloat16) that differ per rank and element.
at::Tensor input_for(int rank, int64_t n, at::ScalarType dtype) {
  auto base = at::arange(n, at::kDouble).remainder(7).sub(3);  // -3..3
  return base.mul(rank + 1).add(rank).to(dtype);
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_TRUE(at::equal(got.to(at::kDouble), want.to(at::kDouble))) << what;
}

std::string label(at::ScalarType dtype, int64_t n, int world) {
  return std::string(c10::toString(dtype)) + " n=" + std::to_string(n) +
         " world=" + std::to_string(world);
}

// (backend, ranks)
class Collectives : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  const std::string& backend() const { return std::get<0>(GetParam()); }
  int ranks() const { return std::get<1>(GetParam()); }
};

TEST_P(Collectives, AllreduceSumMinMaxAvg) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    EXPECT_EQ(comm->backend(), backend());
    EXPECT_EQ(comm->rank(), rank);
    EXPECT_EQ(comm->size(), world);
    for (auto dtype : kDtypes) {
      for (auto n : kSizes) {
        std::vector<at::Tensor> inputs;
        for (int r = 0; r < world; ++r) inputs.push_back(input_for(r, n, at::kDouble));
        auto stacked = at::stack(inputs);
        for (auto op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
          const bool integral = dtype == at::kInt;
          at::Tensor t = input_for(rank, n, dtype);
          if (op == ReduceOp::kAvg && integral) {
            EXPECT_THROW(comm->allreduce(t, op), InvalidArgument);
            continue;
          }
          comm->allreduce(t, op)->wait();
          at::Tensor want = op == ReduceOp::kSum   ? stacked.sum(0)
                            : op == ReduceOp::kMin ? std::get<0>(stacked.min(0))
                            : op == ReduceOp::kMax ? std::get<0>(stacked.max(0))
                                                   : stacked.mean(0);
          const auto what = label(dtype, n, world) + " op=" + to_string(op);
          if (op == ReduceOp::kAvg) {
            // The mean rounds once into the tensor's dtype.
            ASSERT_TRUE(at::allclose(t.to(at::kDouble), want.to(dtype).to(at::kDouble), 1e-2, 1e-2))
                << what;
          } else {
            expect_equal(t, want, what);
          }
        }
      }
    }
  });
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    for (auto dtype : kDtypes) {
      for (auto n : kSizes) {
        for (int root = 0; root < world; ++root) {
          at::Tensor t = input_for(rank, n, dtype);
          comm->broadcast(t, root)->wait();
          expect_equal(t, input_for(root, n, dtype),
                       label(dtype, n, world) + " root=" + std::to_string(root));
        }
      }
    }
  });
}

TEST_P(Collectives, AllgatherAndReduceScatter) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    for (auto dtype : kDtypes) {
      for (auto n : kSizes) {
        std::vector<at::Tensor> inputs;
        for (int r = 0; r < world; ++r) inputs.push_back(input_for(r, n, dtype));
        at::Tensor gathered = at::empty({world * n}, at::TensorOptions(dtype));
        comm->allgather(input_for(rank, n, dtype), gathered)->wait();
        expect_equal(gathered, at::cat(inputs), "allgather " + label(dtype, n, world));

        // Each rank contributes world*n elements; rank r keeps the sum of chunk r.
        at::Tensor big = input_for(rank, world * n, dtype);
        at::Tensor mine = at::empty({n}, at::TensorOptions(dtype));
        comm->reduce_scatter(big, mine, ReduceOp::kSum)->wait();
        at::Tensor total = at::zeros({world * n}, at::kDouble);
        for (int r = 0; r < world; ++r) total += input_for(r, world * n, at::kDouble);
        expect_equal(mine, total.narrow(0, rank * n, n).to(dtype),
                     "reduce_scatter " + label(dtype, n, world));
      }
    }
  });
}

TEST_P(Collectives, SendRecvRingAndBarrier) {
  const int world = ranks();
  if (world == 1) GTEST_SKIP() << "send/recv needs a peer";
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    for (auto dtype : kDtypes) {
      at::Tensor out = input_for(rank, 1001, dtype);
      at::Tensor in = at::empty({1001}, at::TensorOptions(dtype));
      const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
      auto s = comm->send(out, next, /*tag=*/7);
      auto r = comm->recv(in, prev, /*tag=*/7);
      s->wait();
      r->wait();
      expect_equal(in, input_for(prev, 1001, dtype), "ring " + label(dtype, 1001, world));
    }
    comm->barrier()->wait();
  });
}

TEST_P(Collectives, SplitIntoSubCommunicators) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    // Even ranks and odd ranks, each in its own communicator.
    std::vector<int> members;
    for (int r = rank % 2; r < world; r += 2) members.push_back(r);
    auto sub = comm->split(members);
    EXPECT_EQ(sub->size(), static_cast<int>(members.size()));
    EXPECT_EQ(sub->world_ranks(), members);
    at::Tensor t = at::full({3}, static_cast<double>(rank), at::kDouble);
    sub->allreduce(t)->wait();
    double want = 0;
    for (int r : members) want += r;
    EXPECT_EQ(t[0].item<double>(), want);
    comm->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, Collectives,
                         ::testing::Combine(::testing::Values(std::string("gloo"),
                                                              std::string("shm")),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });
INSTANTIATE_TEST_SUITE_P(Hierarchical, Collectives,
                         ::testing::Combine(::testing::Values(std::string("hierarchical")),
                                            ::testing::Values(3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

class CollectiveArguments : public ::testing::TestWithParam<std::string> {};

TEST_P(CollectiveArguments, BadInputsAreInvalidArgument) {
  run_ranks(GetParam(), 1, [&](int, World& w) {
    auto comm = w.communicator();
    at::Tensor strided = at::zeros({4, 4}).t();
    EXPECT_THROW(comm->allreduce(strided), InvalidArgument);
    at::Tensor t = at::zeros({4});
    EXPECT_THROW(comm->broadcast(t, 1), InvalidArgument);
    EXPECT_THROW(comm->send(t, 3), InvalidArgument);
    at::Tensor wrong = at::zeros({3});
    EXPECT_THROW(comm->allgather(t, wrong), InvalidArgument);
    EXPECT_THROW(comm->reduce_scatter(t, wrong), InvalidArgument);
    EXPECT_THROW(comm->split({1}), InvalidArgument);
    at::Tensor undefined;
    EXPECT_THROW(comm->allreduce(undefined), InvalidArgument);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, CollectiveArguments,
                         ::testing::Values(std::string("gloo"), std::string("shm"),
                                           std::string("hierarchical")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gradwire
