// The shm backend's parts: layout and names (pure), reduction kernels, and shm::ProcessGroup driven
// directly by threads of this process over an in-memory store (small slots, so the chunked and
// double-buffered paths run many times), the segment's lifetime, and a stalled peer's timeout.
#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <random>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/backends.h"
#include "gradwire/common/error.h"
#include "comm/shm/collectives.h"
#include "comm/shm/process_group.h"
#include "comm/core/reduce_kernels.h"
#include "comm/shm/segment.h"
#include "shm_test_support.h"

namespace gradwire::shm {
namespace {

using testing::job_files;
using testing::with_groups;

TEST(ShmLayout, ControlsAndSlotsAreAlignedAndDisjoint) {
  for (int ranks : {1, 2, 3, 8}) {
    const auto layout = compute_layout(ranks, 1000);
    EXPECT_EQ(layout.slot_bytes % kCacheLine, 0u);
    EXPECT_GE(layout.slot_bytes, 1000u);
    EXPECT_EQ(layout.controls_offset % kPage, 0u);
    EXPECT_EQ(layout.data_offset % kPage, 0u);
    EXPECT_GE(layout.data_offset, layout.controls_offset + sizeof(shm::RankControl) * ranks);
    EXPECT_GE(layout.total_bytes, layout.data_offset + 2 * ranks * layout.slot_bytes);
  }
  // pid, posted, reduced, signatures, futex word and its sleeper count: a line each
  EXPECT_EQ(sizeof(shm::RankControl), 5 * kCacheLine);
}

TEST(ShmLayout, NamesCarryThePortAndDiffer) {
  const auto a = segment_name(29500, 42, 1), b = segment_name(29500, 42, 2);
  EXPECT_EQ(a.rfind("/gradwire-29500-42-", 0), 0u) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(1).rfind(segment_prefix(29500), 0), 0u);
  EXPECT_NE(segment_prefix(29500), segment_prefix(2950));
}

TEST(ShmLayout, SlicesCoverEverythingOnce) {
  for (size_t n : {0, 1, 7, 16, 1000, 1025}) {
    for (int ranks : {1, 2, 3, 5}) {
      size_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto s = slice_of(n, ranks, r, 16);
        EXPECT_EQ(s.begin, next) << n << " " << ranks << " " << r;
        EXPECT_LE(s.begin, s.end);
        if (s.end < n) EXPECT_EQ((s.end - s.begin) % 16, 0u);
        next = s.end;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(ShmLayout, PiecesAreClaimedOnceAndTheWordNeedsNoReset) {
  std::atomic<uint64_t> word{0};
  EXPECT_EQ(claim_piece(word, 7, 3), 0u);
  EXPECT_EQ(claim_piece(word, 7, 3), 1u);
  EXPECT_EQ(claim_piece(word, 7, 3), 2u);
  EXPECT_EQ(claim_piece(word, 7, 3), 3u);  // none left
  EXPECT_EQ(claim_piece(word, 7, 3), 3u);
  EXPECT_EQ(claim_piece(word, 9, 2), 0u);  // a later step starts from nothing taken
  EXPECT_EQ(claim_piece(word, 9, 0), 0u);  // no pieces: nothing to claim
  // Two threads claiming one step's pieces take each exactly once between them.
  constexpr uint64_t kPieces = 20000;
  std::vector<int> taken(kPieces, 0);
  std::vector<uint64_t> mine[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t p = claim_piece(word, 10, kPieces); p < kPieces;
           p = claim_piece(word, 10, kPieces)) {
        mine[t].push_back(p);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& list : mine) {
    for (uint64_t p : list) ++taken[p];
  }
  EXPECT_EQ(std::count(taken.begin(), taken.end(), 1), static_cast<long>(kPieces));
}

TEST(ShmReduce, EveryOpAndDtypeMatchesATen) {
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kByte,
                     at::kInt, at::kLong}) {
    std::vector<at::Tensor> inputs;
    for (int k = 0; k < 3; ++k) {
      inputs.push_back(at::arange(1037, at::kDouble).remainder(11).add(k).to(dtype));
    }
    auto stacked = at::stack(inputs).to(at::kDouble);
    std::vector<const void*> pointers;
    for (auto& t : inputs) pointers.push_back(t.data_ptr());
    for (auto op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
      if (op == ReduceOp::kAvg && c10::isIntegralType(dtype, false)) continue;
      at::Tensor out = at::empty({1037}, at::TensorOptions(dtype));
      reduce(dtype, op, out.data_ptr(), pointers.data(), 3, 1037);
      at::Tensor want = op == ReduceOp::kSum   ? stacked.sum(0)
                        : op == ReduceOp::kMin ? std::get<0>(stacked.min(0))
                        : op == ReduceOp::kMax ? std::get<0>(stacked.max(0))
                                               : stacked.mean(0);
      EXPECT_TRUE(at::allclose(out.to(at::kDouble), want.to(dtype).to(at::kDouble), 1e-2, 1e-2))
          << c10::toString(dtype) << " " << to_string(op);
    }
  }
}

TEST(ShmReduce, HalfPrecisionAccumulatesInFloat32AndRoundsOnce) {
  // 256 + 1 + 1 in bfloat16 step by step is 256 (each +1 rounds away); in float32 then rounded
  // once it is 258.
  std::vector<c10::BFloat16> a{256.0f}, b{1.0f}, c{1.0f}, out{0.0f};
  const void* inputs[] = {a.data(), b.data(), c.data()};
  reduce(at::kBFloat16, ReduceOp::kSum, out.data(), inputs, 3, 1);
  EXPECT_EQ(static_cast<float>(out[0]), 258.0f);
  // In place: the output may be an input.
  reduce(at::kBFloat16, ReduceOp::kMax, a.data(), inputs, 3, 1);
  EXPECT_EQ(static_cast<float>(a[0]), 256.0f);
}

at::Tensor input_for(int rank, int64_t n, at::ScalarType dtype) {
  return at::arange(n, at::kDouble).remainder(13).mul(rank + 1).sub(rank).to(dtype);
}

// Every collective over many chunks; `streaming_bytes` 0 writes every large allreduce's tensor
// with non-temporal stores (off by default).
void check_chunked_collectives(size_t streaming_bytes) {
  shm::Options options;
  options.slot_bytes = 4096;  // 1024 floats: a 10000-element allreduce is 10 chunks
  options.small_bytes = 512;
  options.streaming_bytes = streaming_bytes;
  options.timeout = std::chrono::seconds(30);
  const int ranks = 3;
  with_groups(ranks, 1, options, [&](int rank, shm::ProcessGroup& group) {
    for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kLong}) {
      for (int64_t n : {1, 100, 1000, 10001}) {
        at::Tensor sum = at::zeros({n}, at::kDouble);
        for (int r = 0; r < ranks; ++r) sum += input_for(r, n, at::kDouble);
        std::vector<at::Tensor> t{input_for(rank, n, dtype)};
        c10d::AllreduceOptions all;
        group.allreduce(t, all)->wait();
        ASSERT_TRUE(at::equal(t[0].to(at::kDouble), sum)) << c10::toString(dtype) << " n=" << n;

        at::Tensor big = input_for(rank, ranks * n, dtype), mine = at::empty({n}, dtype);
        at::Tensor total = at::zeros({ranks * n}, at::kDouble);
        for (int r = 0; r < ranks; ++r) total += input_for(r, ranks * n, at::kDouble);
        group._reduce_scatter_base(mine, big, c10d::ReduceScatterOptions())->wait();
        ASSERT_TRUE(at::equal(mine.to(at::kDouble), total.narrow(0, rank * n, n)))
            << "reduce_scatter " << c10::toString(dtype) << " n=" << n;

        std::vector<at::Tensor> in{input_for(rank, n, dtype)};
        std::vector<std::vector<at::Tensor>> outs(1);
        for (int r = 0; r < ranks; ++r) outs[0].push_back(at::empty({n}, dtype));
        group.allgather(outs, in, c10d::AllgatherOptions())->wait();
        for (int r = 0; r < ranks; ++r) ASSERT_TRUE(at::equal(outs[0][r], input_for(r, n, dtype)));
      }
    }
    group.barrier(c10d::BarrierOptions())->wait();
  });
}

TEST(ShmProcessGroup, ChunkedCollectivesWithSmallSlots) {
  check_chunked_collectives(shm::Options().streaming_bytes);
}

TEST(ShmProcessGroup, ChunkedCollectivesWithStreamingStores) { check_chunked_collectives(0); }

TEST(ShmProcessGroup, ManyMixedOperationsInFlight) {
  // Small and chunked allreduces, broadcasts and barriers issued back to back without waiting,
  // so fast ranks run ahead and both slot parities are in use; all results checked at the end.
  shm::Options options;
  options.slot_bytes = 4096;
  options.small_bytes = 512;
  options.timeout = std::chrono::seconds(30);
  const int ranks = 3;
  with_groups(ranks, 4, options, [&](int rank, shm::ProcessGroup& group) {
    std::mt19937 same_on_every_rank(7);
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<std::pair<at::Tensor, at::Tensor>> checks;  // (result, expected)
    for (int i = 0; i < 150; ++i) {
      const int64_t n = std::vector<int64_t>{1, 100, 3000}[same_on_every_rank() % 3];
      const int kind = static_cast<int>(same_on_every_rank() % 3);
      std::vector<at::Tensor> t{input_for(rank, n, at::kFloat)};
      if (kind == 0) {
        at::Tensor want = at::zeros({n});
        for (int r = 0; r < ranks; ++r) want += input_for(r, n, at::kFloat);
        works.push_back(group.allreduce(t, c10d::AllreduceOptions()));
        checks.emplace_back(t[0], want);
      } else if (kind == 1) {
        c10d::BroadcastOptions from;
        from.rootRank = i % ranks;
        works.push_back(group.broadcast(t, from));
        checks.emplace_back(t[0], input_for(i % ranks, n, at::kFloat));
      } else {
        works.push_back(group.barrier(c10d::BarrierOptions()));
      }
    }
    for (auto& work : works) work->wait();
    for (auto& [got, want] : checks) ASSERT_TRUE(at::equal(got, want));
  });
}

TEST(ShmProcessGroup, SegmentIsUnlinkedOnceEveryRankAttached) {
  const int port = 60000 + getpid() % 5000;
  shm::Options options;
  with_groups(2, port, options, [&](int, shm::ProcessGroup& group) {
    EXPECT_EQ(job_files(port), 0);
    group.barrier(c10d::BarrierOptions())->wait();
  });
  EXPECT_EQ(job_files(port), 0);
}

TEST(ShmProcessGroup, StalledPeerTimesOutNamingIt) {
  shm::Options options;
  options.timeout = std::chrono::seconds(2);
  with_groups(2, 2, options, [&](int rank, shm::ProcessGroup& group) {
    at::Tensor t = at::ones({16});
    std::vector<at::Tensor> tensors{t};
    group.allreduce(tensors, c10d::AllreduceOptions())->wait();
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return;  // never calls the second allreduce
    }
    auto work = group.allreduce(tensors, c10d::AllreduceOptions());
    // A caller's shorter wait times out first and says whom the progress thread waits for (by
    // now, well before the operation's own deadline, it is waiting).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    try {
      work->wait(std::chrono::milliseconds(100));
      ADD_FAILURE() << "no timeout";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("timed out after 100 ms"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0 was waiting for rank(s) [1] of the communicator to post"),
                std::string::npos)
          << what;
    }
    // Then the operation's own deadline.
    try {
      work->wait();
      ADD_FAILURE() << "no timeout";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("timed out"), std::string::npos) << what;
      EXPECT_NE(what.find("rank(s) [1]"), std::string::npos) << what;
    }
    // The group is broken from now on: later operations fail the same way, at once.
    EXPECT_ANY_THROW(group.barrier(c10d::BarrierOptions())->wait());
  });
}

TEST(ShmProcessGroup, DifferentCollectivesOnTwoRanksAreNamed) {
  shm::Options options;
  options.timeout = std::chrono::seconds(10);
  with_groups(2, 3, options, [&](int rank, shm::ProcessGroup& group) {
    std::vector<at::Tensor> tensors{at::ones({1024})};
    auto work = rank == 0 ? group.allreduce(tensors, c10d::AllreduceOptions())
                          : group.broadcast(tensors, c10d::BroadcastOptions());
    try {
      work->wait();
      ADD_FAILURE() << "no error";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("collectives differ"), std::string::npos) << what;
      EXPECT_NE(what.find("allreduce(sum) of 4096 bytes"), std::string::npos) << what;
      EXPECT_NE(what.find("broadcast from rank 0 of 4096 bytes"), std::string::npos) << what;
    }
  });
}

TEST(ShmProcessGroup, DestroyingAGroupEndsItsWaitInProgress) {
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
  shm::Options options;
  options.timeout = std::chrono::minutes(5);  // far longer than the test may take
  c10::intrusive_ptr<shm::ProcessGroup> groups[2];
  std::thread peer([&] {
    groups[1] =
        c10::make_intrusive<shm::ProcessGroup>(store, 1, 2, options, c10d_adapter::BackendPtr());
  });
  groups[0] =
      c10::make_intrusive<shm::ProcessGroup>(store, 0, 2, options, c10d_adapter::BackendPtr());
  peer.join();
  std::vector<at::Tensor> tensors{at::ones({8})};
  auto work = groups[0]->allreduce(tensors, c10d::AllreduceOptions());  // rank 1 never joins in
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  groups[0].reset();  // returns once the progress thread gave up
  try {
    work->wait();
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("shutting down"), std::string::npos) << e.what();
  }
}

TEST(ShmLayout, SignaturesDescribeTheCollective) {
  EXPECT_EQ(describe_signature(op_signature(shm::OpKind::kAllreduce, 1, 6, 0, 4096)),
            "allreduce(avg) of 4096 bytes (dtype code 6)");
  EXPECT_EQ(describe_signature(op_signature(shm::OpKind::kReduceScatter, 3, 6, 0, 8)),
            "reduce_scatter(max) of 8 bytes (dtype code 6)");
  EXPECT_EQ(describe_signature(op_signature(shm::OpKind::kBarrier, 0, 0, 0, 0)), "barrier");
  EXPECT_NE(op_signature(shm::OpKind::kBroadcast, 0, 6, 0, 64),
            op_signature(shm::OpKind::kBroadcast, 0, 6, 1, 64));
}

TEST(ShmSelection, ForcedByNameOrEnvironmentOnOneHostOnly) {
  WorldInfo one_host;
  one_host.world_size = one_host.local_world_size = 2;
  const InitOptions options;
  const auto timeout = std::chrono::seconds(5);
  const auto chosen = [&](const InitOptions& given, const EnvMap& env) {
    return backend_traits(*resolve(given, env).backend, one_host, given, env, timeout).name;
  };
  EXPECT_EQ(backend_traits("shm", one_host, options, EnvMap{}, timeout).name, "shm");
  EXPECT_EQ(chosen(options, EnvMap{{"GRADWIRE_BACKEND", "shm"}}), "shm");
  EXPECT_EQ(chosen(options, EnvMap{}), "gloo");
  // An explicit name wins over the environment, "auto" among them.
  InitOptions gloo;
  gloo.backend = "gloo";
  EXPECT_EQ(chosen(gloo, EnvMap{{"GRADWIRE_BACKEND", "shm"}}), "gloo");
  InitOptions automatic;
  automatic.backend = "auto";
  EXPECT_EQ(chosen(automatic, EnvMap{{"GRADWIRE_BACKEND", "shm"}}), "gloo");
  WorldInfo two_hosts;
  two_hosts.world_size = 4;
  two_hosts.local_world_size = 2;
  EXPECT_THROW(backend_traits("shm", two_hosts, options, EnvMap{}, timeout), ConfigError);
  try {
    check_backend_name(options, EnvMap{{"GRADWIRE_BACKEND", "shmem"}});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'shmem' (from GRADWIRE_BACKEND)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      backend_traits("shm", one_host, options, EnvMap{{"GRADWIRE_SHM_SLOT_BYTES", "64"}}, timeout),
      ConfigError);
}

}  // namespace
}  // namespace gradwire::shm
