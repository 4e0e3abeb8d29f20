// UnfinishedWorks (comm/core/work.h): the works a stream-ordered wait (nccl) left to the device.
// A failure recorded on one after its wait() returned, as NCCL's watchdog records a timeout, is
// thrown by the next check() as a gradwire error naming the operation; finished works are
// forgotten. c10d works stand in for NCCL's, finished by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "comm/core/work.h"
#include "gradwire/common/error.h"

namespace gradwire {
namespace {

class HandWork : public c10d::Work {
 public:
  void end(std::exception_ptr error = nullptr) { finish(std::move(error)); }
};

OpContext context_of(const std::string& description) {
  OpContext context;
  context.description = description;
  context.world_ranks = {0, 1};
  context.default_timeout = std::chrono::seconds(3);
  return context;
}

TEST(UnfinishedWorks, ForgetsWorksThatFinishedWell) {
  UnfinishedWorks works;
  auto first = c10::make_intrusive<HandWork>();
  auto second = c10::make_intrusive<HandWork>();
  works.add(first, context_of("allreduce(avg) of 8 float elements"));
  works.add(second, context_of("broadcast(root 0) of 8 float elements"));
  EXPECT_NO_THROW(works.check());
  EXPECT_EQ(works.size(), 2u);
  first->end();
  EXPECT_NO_THROW(works.check());
  EXPECT_EQ(works.size(), 1u);
  second->end();
  EXPECT_NO_THROW(works.check());
  EXPECT_EQ(works.size(), 0u);
}

TEST(UnfinishedWorks, ThrowsALaterTimeoutAsAGradwireErrorNamingTheOperation) {
  UnfinishedWorks works;
  auto stuck = c10::make_intrusive<HandWork>();
  works.add(stuck, context_of("allreduce(avg) of 8 float elements"));
  EXPECT_NO_THROW(works.check());
  stuck->end(std::make_exception_ptr(std::runtime_error(
      "[PG 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, "
      "OpType=ALLREDUCE) ran for 3000 milliseconds before timing out.")));
  try {
    works.check();
    FAIL() << "the failure was not thrown";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce(avg) of 8 float elements"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(works.size(), 0u);
  EXPECT_NO_THROW(works.check());  // thrown once
}

TEST(UnfinishedWorks, ThrowsAnotherFailureAsABackendError) {
  UnfinishedWorks works;
  auto failed = c10::make_intrusive<HandWork>();
  works.add(failed, context_of("allgather of 4 float elements"));
  failed->end(std::make_exception_ptr(std::runtime_error("NCCL error: remote process exited")));
  EXPECT_THROW(works.check(), BackendError);
}

}  // namespace
}  // namespace gradwire
