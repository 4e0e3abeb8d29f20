// A rank that never joins gives every present rank a TimeoutError naming it, within the timeout;
// a job store that stops answering is a TimeoutError naming it and the operation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gradwire/comm/job_store.h"
#include "gradwire/common/error.h"
#include "support/rank_threads.h"

namespace gradwire {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Rendezvous, RankThatNeverJoinsIsNamed) {
  const auto timeout = std::chrono::milliseconds(1500);
  const auto start = Clock::now();
  try {
    testing::run_ranks(3, [](int, World&) { FAIL() << "init must not succeed"; }, timeout, {0, 1});
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("rank(s) 2 of 3 never joined"), std::string::npos) << what;
    EXPECT_NE(what.find("1.50 s"), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - start, timeout * 4);
}

TEST(Rendezvous, MissingRankZeroMeansStoreUnreachable) {
  const auto timeout = std::chrono::milliseconds(1000);
  const auto start = Clock::now();
  try {
    testing::run_ranks(2, [](int, World&) { FAIL(); }, timeout, {1});
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("rank 1 could not reach the rendezvous store at 127.0.0.1:"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("hosted by rank 0"), std::string::npos) << what;
  }
  // It kept trying for the whole timeout (rank 0 may simply start later), and no longer.
  EXPECT_GE(Clock::now() - start, timeout);
  EXPECT_LT(Clock::now() - start, timeout * 4);
}

// A short collective timeout does not bound the rendezvous (InitOptions::rendezvous_timeout): a
// rank that starts well after the others still joins them (Backends/Desync with 2 s used to fail
// in the rendezvous on a loaded machine, its ranks' processes starting seconds apart).
TEST(Rendezvous, AShortCollectiveTimeoutDoesNotBoundTheRendezvous) {
  const int port = testing::free_port();
  auto options_for = [port](int rank) {
    InitOptions options = testing::loopback_options(rank, 2, port, std::chrono::seconds(1));
    options.rendezvous_timeout.reset();  // the default: at least 300 s
    return options;
  };
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    auto world = init(options_for(1));
    world->communicator()->barrier()->wait();
  });
  EXPECT_NO_THROW({
    auto world = init(options_for(0));
    world->communicator()->barrier()->wait();
  });
  late.join();
}

TEST(Rendezvous, RankZeroStartingLateIsWaitedFor) {
  const int port = testing::free_port();
  std::thread late([port] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    auto world = init(testing::loopback_options(0, 2, port, std::chrono::seconds(10)));
    world->communicator()->barrier()->wait();
  });
  EXPECT_NO_THROW({
    auto world = init(testing::loopback_options(1, 2, port, std::chrono::seconds(10)));
    world->communicator()->barrier()->wait();
  });
  late.join();
}

TEST(Rendezvous, SplitWithAbsentMemberTimesOutNamingIt) {
  // Rank 0 hosts the store: it keeps it until rank 1 has seen its own timeout too (a loaded
  // machine may deliver rank 1's much later than rank 0's; leaving early made it "peer lost").
  std::mutex mutex;
  std::condition_variable changed;
  int finished = 0;
  testing::run_ranks(
      3,
      [&](int rank, World& w) {
        auto comm = w.communicator();
        if (rank == 2) return;  // never takes part in the split
        try {
          comm->split({0, 1, 2});
          ADD_FAILURE() << "split with rank 2 absent must fail";
        } catch (const InvalidArgument&) {
          ADD_FAILURE() << "wrong error";
        } catch (const TimeoutError& e) {
          EXPECT_NE(std::string(e.what()).find("rank(s) 2 of 3 never joined"), std::string::npos)
              << e.what();
        }
        std::unique_lock<std::mutex> lock(mutex);
        ++finished;
        changed.notify_all();
        if (rank == 0) changed.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 2; });
      },
      std::chrono::milliseconds(1000));
}

// A job store hosted by another process (as gradwire-run hosts the elastic job's): the child
// hosts it and writes its port through a pipe, then waits to be stopped or killed. A test declares
// its ChildGuard before its JobStore, so the client is gone before the host is killed (libtorch
// 1.13's client thread ends the process when its store's host dies under it).
pid_t host_store_in_child(int& port) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    auto store = JobStore::host("127.0.0.1", 0, std::chrono::seconds(60));
    const int hosted = store->port();
    if (::write(ready[1], &hosted, sizeof hosted) != sizeof hosted) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  const bool read_port = ::read(ready[0], &port, sizeof port) == sizeof port;
  ::close(ready[0]);
  return read_port ? child : -1;
}

// Kills and reaps the child however the test ends.
struct ChildGuard {
  pid_t pid;
  ~ChildGuard() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

// The link to the store's host cut, or its host frozen: the store stops answering. c10d says
// "Socket Timeout"; gradwire names the store, the operation and the time waited.
TEST(JobStoreFailure, AStoreThatStopsAnsweringIsATimeoutNamingItAndTheOperation) {
  int port = 0;
  const pid_t child = host_store_in_child(port);
  const ChildGuard guard{child};
  ASSERT_GT(child, 0);
  auto store = JobStore::connect("127.0.0.1", port, std::chrono::milliseconds(2000));
  store->set("generation", "1");
  ASSERT_EQ(store->add("arrived", 1), 1);
  ::kill(child, SIGSTOP);
  const auto start = Clock::now();
  try {
    store->add("arrived", 1);
    ADD_FAILURE() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the job store at 127.0.0.1:" + std::to_string(port) + ": add 'arrived'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("failed after"), std::string::npos) << what;
    EXPECT_NE(what.find("limit 2.00 s"), std::string::npos) << what;
    EXPECT_EQ(what.find("Exception raised from"), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace gradwire
