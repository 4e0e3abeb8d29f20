// Shared buffers of the shm backend (shm/shared_buffers.h): allocation leaves nothing in /dev/shm,
// an allreduce of a tensor in a shared buffer is reduced in place and equals the ordinary one for
// every op and dtype, ranks that disagree about the place fail naming each other, and a buffer
// outlives its group. Ranks are threads of this process over an in-memory store.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "shm_test_support.h"

namespace gradwire::shm {
namespace {

using testing::job_files;

// Small slots, so that ordinary allreduces of the same sizes are chunked.
void with_groups(int ranks, int port, const std::function<void(int, shm::ProcessGroup&)>& fn) {
  shm::Options options;
  options.slot_bytes = 4096;
  options.small_bytes = 512;
  options.timeout = std::chrono::seconds(20);
  testing::with_groups(ranks, port, options, fn);
}

at::Tensor shared(shm::ProcessGroup& group, int64_t numel, at::ScalarType dtype) {
  auto out = std::make_shared<at::Tensor>();
  group.allocate_shared(numel, dtype, out)->wait();
  return *out;
}

at::Tensor input_for(int rank, int64_t n, at::ScalarType dtype) {
  return at::arange(n, at::kDouble).remainder(13).mul(rank + 1).sub(rank).to(dtype);
}

void allreduce(shm::ProcessGroup& group, at::Tensor tensor, c10d::ReduceOp op) {
  std::vector<at::Tensor> tensors{std::move(tensor)};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  group.allreduce(tensors, options)->wait();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShmSharedBuffer, AllreduceInPlaceEqualsTheOrdinaryOneForEveryOpAndDtype) {
  const int ranks = 3;
  const int port = 61000 + getpid() % 4000;
  with_groups(ranks, port, [&](int rank, shm::ProcessGroup& group) {
    // 300001 elements: several pieces that the ranks claim (claim_piece), the last one partial.
    const int64_t n = 300001;
    for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kLong}) {
      at::Tensor buffer = shared(group, n + 64, dtype);
      EXPECT_EQ(job_files(port), 0) << "names are unlinked once every rank mapped them";
      ASSERT_TRUE(at::equal(buffer, at::zeros({n + 64}, dtype)));
      const bool floating = at::isFloatingType(dtype);
      for (auto op :
           {c10d::ReduceOp::SUM, c10d::ReduceOp::AVG, c10d::ReduceOp::MIN, c10d::ReduceOp::MAX}) {
        if (op == c10d::ReduceOp::AVG && !floating) continue;
        for (int64_t length : {int64_t{1}, int64_t{100}, n}) {
          // A view at an offset, as DDP's buckets lie in one buffer.
          at::Tensor view = buffer.narrow(0, 64, length);
          view.copy_(input_for(rank, length, dtype));
          at::Tensor ordinary = input_for(rank, length, dtype);
          allreduce(group, view, op);
          allreduce(group, ordinary, op);
          ASSERT_TRUE(at::equal(view, ordinary))
              << c10::toString(dtype) << " op " << int(op) << " n=" << length;
        }
      }
    }
  });
}

TEST(ShmSharedBuffer, RanksAtDifferentPlacesFailNamingEachOther) {
  with_groups(2, 5, [&](int rank, shm::ProcessGroup& group) {
    at::Tensor buffer = shared(group, 4096, at::kFloat);
    const std::string what =
        error_of([&] { allreduce(group, buffer.narrow(0, rank * 16, 1024), c10d::ReduceOp::SUM); });
    EXPECT_NE(what.find("collectives differ"), std::string::npos) << what;
    EXPECT_NE(what.find("shared buffer 1 from byte 0"), std::string::npos) << what;
    EXPECT_NE(what.find("shared buffer 1 from byte 64"), std::string::npos) << what;
  });
}

TEST(ShmSharedBuffer, SharedOnOneRankOnlyFailsNamingBoth) {
  with_groups(2, 6, [&](int rank, shm::ProcessGroup& group) {
    at::Tensor buffer = shared(group, 1024, at::kFloat);
    at::Tensor tensor = rank == 0 ? buffer : at::zeros({1024});
    const std::string what = error_of([&] { allreduce(group, tensor, c10d::ReduceOp::SUM); });
    EXPECT_NE(what.find("collectives differ"), std::string::npos) << what;
    EXPECT_NE(what.find("in place on a shared buffer of 4096 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("allreduce(sum) of 4096 bytes"), std::string::npos) << what;
  });
}

TEST(ShmSharedBuffer, OutlivesItsGroupAndAFreedOneIsForgotten) {
  std::vector<at::Tensor> kept(2);
  with_groups(2, 7, [&](int rank, shm::ProcessGroup& group) {
    { at::Tensor freed = shared(group, 256, at::kFloat); }
    kept[rank] = shared(group, 256, at::kFloat);
    kept[rank].fill_(rank + 1);
    allreduce(group, kept[rank], c10d::ReduceOp::SUM);
    // A copy is ordinary memory: reduced through the slots, and still right.
    at::Tensor copy = kept[rank].clone();
    allreduce(group, copy, c10d::ReduceOp::MAX);
    EXPECT_TRUE(at::equal(copy, at::full({256}, 3.0f)));
  });
  for (auto& tensor : kept) {
    EXPECT_TRUE(at::equal(tensor, at::full({256}, 3.0f)));
    tensor.add_(1);  // still mapped
  }
}

}  // namespace
}  // namespace gradwire::shm
