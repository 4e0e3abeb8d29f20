// SerialWorkQueue: jobs run in issue order on one thread, a failure fails every later job, a
// shutdown fails what has not started, and a timed-out wait says what the thread is doing.
#include "serial_work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
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
