// SerialWorkQueue: jobs run in issue order on one thread, a failure fails every later job, a
// shutdown fails what has not started, and a timed-out wait says what the thread is doing.
#include "comm/core/serial_work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace gradwire {
namespace {

std::string failure_of(const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    work->wait(std::chrono::seconds(30));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(SerialWorkQueue, RunsJobsInIssueOrderOnOneThread) {
  std::thread::id started_on;
  SerialWorkQueue queue(
      SerialWorkQueueOptions{"test", [&] { started_on = std::this_thread::get_id(); }, {}});
  std::vector<int> order;  // written by the progress thread only
  std::vector<std::thread::id> threads;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (int i = 0; i < 20; ++i) {
    works.push_back(queue.enqueue("job " + std::to_string(i), [&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    }));
  }
  for (auto& work : works) EXPECT_TRUE(work->wait(std::chrono::seconds(30)));
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(threads[i], started_on);
  }
  EXPECT_NE(started_on, std::this_thread::get_id());
}

// Note [caller runs]: waiting callers may run jobs themselves, but jobs still run one at a time
// and in issue order, whoever runs them; waits with a short limit never run them.
TEST(SerialWorkQueue, CallersThatRunJobsKeepTheOrderAndOneAtATime) {
  SerialWorkQueueOptions options{"test", {}, {}};
  options.caller_runs_within = std::chrono::seconds(30);
  SerialWorkQueue queue(options);
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  const int jobs = 3000;
  for (int i = 0; i < jobs; ++i) {
    works.push_back(queue.enqueue("job " + std::to_string(i), [&, i] {
      if (inside.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard<std::mutex> lock(mutex);
        order.push_back(i);
      }
      inside.fetch_sub(1);
    }));
  }
  // Three threads wait on the works in different orders, so that callers race each other and
  // the progress thread for the head of the queue.
  std::vector<std::thread> waiters;
  for (int t = 0; t < 3; ++t) {
    waiters.emplace_back([&, t] {
      for (int k = 0; k < jobs; ++k) {
        const int i = t == 0 ? k : t == 1 ? jobs - 1 - k : (k * 7) % jobs;
        works[i]->wait(std::chrono::seconds(30));
      }
    });
  }
  for (auto& waiter : waiters) waiter.join();
  EXPECT_FALSE(overlapped);
  ASSERT_EQ(order.size(), static_cast<size_t>(jobs));
  for (int i = 0; i < jobs; ++i) ASSERT_EQ(order[i], i);
}

TEST(SerialWorkQueue, WaitsWithAShortLimitNeverRunJobs) {
  SerialWorkQueueOptions options{"test", {}, {}};
  options.caller_runs_within = std::chrono::seconds(30);
  SerialWorkQueue queue(options);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> on_caller{false};
  for (int i = 0; i < 500; ++i) {
    auto work = queue.enqueue(
        "job", [&] { on_caller = on_caller || std::this_thread::get_id() == caller; });
    work->wait(std::chrono::seconds(29));
  }
  EXPECT_FALSE(on_caller);
}

TEST(SerialWorkQueue, AFailureFailsEveryLaterJobWithoutRunningIt) {
  SerialWorkQueue queue(SerialWorkQueueOptions{"test", {}, {}});
  std::atomic<int> ran{0};
  auto first = queue.enqueue("first", [&] { ++ran; });
  auto failing = queue.enqueue("failing", [&] {
    ++ran;
    throw std::runtime_error("step 2 broke");
  });
  auto later = queue.enqueue("later", [&] { ++ran; });
  EXPECT_TRUE(first->wait(std::chrono::seconds(30)));
  EXPECT_EQ(failure_of(failing), "step 2 broke");
  EXPECT_EQ(failure_of(later), "step 2 broke");
  EXPECT_EQ(ran.load(), 2);
}

TEST(SerialWorkQueue, ShutdownInterruptsTheRunningJobAndFailsTheRest) {
  SerialWorkQueue queue(SerialWorkQueueOptions{"test", {}, {}});
  std::atomic<bool> interrupted{false};
  std::promise<void> started;
  auto running = queue.enqueue("running", [&] {
    started.set_value();
    while (!interrupted) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  auto queued = queue.enqueue("allreduce(sum)", [] {});
  auto after = queue.enqueue("barrier", [] {});
  ASSERT_EQ(started.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  queue.shutdown([&] { interrupted = true; });
  EXPECT_TRUE(running->wait(std::chrono::seconds(30)));
  const std::string message = "test: allreduce(sum) aborted: the communicator is shutting down";
  EXPECT_EQ(failure_of(queued), message);
  EXPECT_EQ(failure_of(after), message);
  queue.shutdown();  // idempotent
}

TEST(SerialWorkQueue, TimedOutWaitSaysWhatTheThreadIsDoing) {
  std::string doing = "waiting for rank(s) [1]";
  SerialWorkQueue queue(SerialWorkQueueOptions{"test", {}, [&] { return doing; }});
  std::atomic<bool> release{false};
  auto work = queue.enqueue("slow", [&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  try {
    work->wait(std::chrono::milliseconds(20));
    ADD_FAILURE() << "the wait did not time out";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "test: operation timed out after 20 ms; waiting for rank(s) [1]");
  }
  release = true;
  EXPECT_TRUE(work->wait(std::chrono::seconds(30)));
}

}  // namespace
}  // namespace gradwire
