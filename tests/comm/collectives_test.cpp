// Conformance suite for the Communicator contract, run for every CPU backend (gloo, shm on 1, 2
// and 3 ranks; hierarchical on 3 and 4 ranks over two simulated hosts) as threads of this
// process, for float, double, int32 and bfloat16 at sizes 0, 1, odd and large; reduce_scatter also
// for every op and dtype on gloo (2, 3, 4 ranks), shm and hierarchical.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
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
  testing::run_threads(world_size, [&](int rank) {
    auto options = testing::loopback_options(rank, world_size, port, std::chrono::seconds(30));
    options.backend = backend;
    auto world = init(options);
    fn(rank, *world);
  });
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
    // shm divides as it stores each sum; Gloo sums, then divides in a pass of its own.
    EXPECT_EQ(comm->averages_while_reducing(), backend() == "shm");
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

// reduce_scatter on each backend's own path (Gloo and hierarchical: a ring over send/recv, shm:
// native): every op, every dtype of the contract, chunks of one element, odd sizes and chunks of
// several ring segments (1 MiB each) with an uneven last one.
const std::vector<at::ScalarType> kReduceScatterDtypes = {
    at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kByte, at::kInt, at::kLong};
const std::vector<int64_t> kReduceScatterSizes = {1, 1001};
// Also run at a size of several segments, for these dtypes (one each of 4, 8 and 2 bytes).
constexpr int64_t kSegmentedSize = 300001;
const std::vector<at::ScalarType> kSegmentedDtypes = {at::kFloat, at::kDouble, at::kBFloat16};

// Elements [begin, begin + count) of rank `rank`'s reduce_scatter input: small integers, exact in
// every dtype and in the sums, non-negative for uint8.
at::Tensor scatter_values(int rank, int64_t begin, int64_t count, at::ScalarType dtype) {
  auto base = at::arange(begin, begin + count, at::kDouble).remainder(7);  // 0..6
  if (dtype != at::kByte) base = base.sub(3);
  return base.mul(rank + 1).add(rank).to(dtype);
}
at::Tensor scatter_input_for(int rank, int64_t n, at::ScalarType dtype) {
  return scatter_values(rank, 0, n, dtype);
}

// What rank `rank` of `world` must end with: op over the ranks' inputs of chunk `rank`, computed
// in double and rounded once into dtype.
at::Tensor reduce_scatter_want(int rank, int world, int64_t n, at::ScalarType dtype, ReduceOp op) {
  std::vector<at::Tensor> chunks;
  for (int r = 0; r < world; ++r) {
    chunks.push_back(scatter_values(r, rank * n, n, dtype).to(at::kDouble));
  }
  auto stacked = at::stack(chunks);
  at::Tensor want = op == ReduceOp::kSum   ? stacked.sum(0)
                    : op == ReduceOp::kMin ? std::get<0>(stacked.min(0))
                    : op == ReduceOp::kMax ? std::get<0>(stacked.max(0))
                                           : stacked.mean(0);
  return want.to(dtype);
}

// (backend, ranks), instantiated over its own parameter list.
class ReduceScatter : public Collectives {};

TEST_P(ReduceScatter, EveryOpDtypeAndSize) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    for (auto dtype : kReduceScatterDtypes) {
      std::vector<int64_t> sizes = kReduceScatterSizes;
      if (std::count(kSegmentedDtypes.begin(), kSegmentedDtypes.end(), dtype)) {
        sizes.push_back(kSegmentedSize);
      }
      for (auto n : sizes) {
        for (auto op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
          at::Tensor input = scatter_input_for(rank, world * n, dtype);
          at::Tensor output = at::full({n}, -99, at::TensorOptions(dtype));
          if (op == ReduceOp::kAvg && c10::isIntegralType(dtype, /*includeBool=*/false)) {
            EXPECT_THROW(comm->reduce_scatter(input, output, op), InvalidArgument);
            continue;
          }
          comm->reduce_scatter(input, output, op)->wait();
          const auto what = label(dtype, n, world) + " op=" + to_string(op);
          const at::Tensor want = reduce_scatter_want(rank, world, n, dtype, op);
          if (op == ReduceOp::kAvg) {
            ASSERT_TRUE(at::allclose(output.to(at::kDouble), want.to(at::kDouble), 1e-2, 1e-2))
                << what;
          } else {
            expect_equal(output, want, what);
          }
          ASSERT_TRUE(at::equal(input, scatter_input_for(rank, world * n, dtype)))
              << "the input changed: " << what;
        }
      }
    }
  });
}

TEST_P(ReduceScatter, SeveralInFlightBesideOtherTraffic) {
  const int world = ranks();
  run_ranks(backend(), world, [&](int rank, World& w) {
    auto comm = w.communicator();
    const int64_t small = 1001, large = 300001;
    at::Tensor in_a = scatter_input_for(rank, world * small, at::kFloat);
    at::Tensor out_a = at::empty({small}, at::kFloat);
    at::Tensor in_b = scatter_input_for(rank, world * large, at::kBFloat16);
    at::Tensor out_b = at::empty({large}, at::kBFloat16);
    at::Tensor in_c = scatter_input_for(rank, world * small, at::kLong);
    at::Tensor out_c = at::empty({small}, at::kLong);
    at::Tensor summed = scatter_input_for(rank, small, at::kFloat);
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    at::Tensor sent = scatter_input_for(rank, small, at::kFloat);
    at::Tensor received = at::empty({small}, at::kFloat);
    // Issued back to back (user send/recv on tag 0 in between), waited in reverse order.
    auto a = comm->reduce_scatter(in_a, out_a, ReduceOp::kSum);
    auto s = comm->send(sent, next, /*tag=*/0);
    auto r = comm->recv(received, prev, /*tag=*/0);
    auto b = comm->reduce_scatter(in_b, out_b, ReduceOp::kMax);
    auto all = comm->allreduce(summed, ReduceOp::kSum);
    auto c = comm->reduce_scatter(in_c, out_c, ReduceOp::kMin);
    for (const auto& work : {c, all, b, r, s, a}) work->wait();
    expect_equal(out_a, reduce_scatter_want(rank, world, small, at::kFloat, ReduceOp::kSum), "a");
    expect_equal(out_b, reduce_scatter_want(rank, world, large, at::kBFloat16, ReduceOp::kMax),
                 "b");
    expect_equal(out_c, reduce_scatter_want(rank, world, small, at::kLong, ReduceOp::kMin), "c");
    expect_equal(received, scatter_input_for(prev, small, at::kFloat), "recv");
    at::Tensor total = at::zeros({small}, at::kDouble);
    for (int q = 0; q < world; ++q) total += scatter_input_for(q, small, at::kDouble);
    expect_equal(summed, total.to(at::kFloat), "allreduce");
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceScatter,
                         ::testing::Values(std::make_tuple(std::string("gloo"), 2),
                                           std::make_tuple(std::string("gloo"), 3),
                                           std::make_tuple(std::string("gloo"), 4),
                                           std::make_tuple(std::string("shm"), 3),
                                           std::make_tuple(std::string("hierarchical"), 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// A ring reduce_scatter that a peer never joins times out as one collective of the desync report,
// and destroying its communicator ends the ring at once instead of at the communicator's timeout.
TEST(ReduceScatterRing, TimeoutIsReportedAndShutdownAbortsTheRing) {
  std::atomic<bool> rank0_done{false};
  run_ranks("gloo", 2, [&](int rank, World& w) {
    auto sub = w.communicator()->split({0, 1});  // 30 s timeout, like the world
    sub->barrier()->wait();                      // #1
    if (rank == 1) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!rank0_done && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return;
    }
    at::Tensor input = at::ones({8}, at::kFloat);
    at::Tensor output = at::empty({4}, at::kFloat);
    auto work = sub->reduce_scatter(input, output, ReduceOp::kSum);  // #2, rank 1 never calls it
    try {
      work->wait(std::chrono::milliseconds(300));
      ADD_FAILURE() << "reduce_scatter without its peer completed";
    } catch (const TimeoutError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("reduce_scatter(sum) of 8 Float elements"), std::string::npos) << text;
      EXPECT_NE(text.find("never reached #2"), std::string::npos) << text;
    }
    const auto start = std::chrono::steady_clock::now();
    sub.reset();  // the ring is still waiting for rank 1
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_THROW(work->wait(), Error);
    rank0_done = true;
  });
}

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
