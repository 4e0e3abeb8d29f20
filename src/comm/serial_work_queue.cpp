#include "serial_work_queue.h"

#include <stdexcept>

#include "gradwire/common/error.h"
#include "spin_wait.h"

namespace gradwire {

namespace {
// How long the progress thread polls for the next job, and a caller polls for its work, before
// sleeping (Note [spin then sleep] in spin_wait.h).
constexpr auto kSpinBudget = std::chrono::microseconds(100);
}  // namespace

// A c10d work completed by the progress thread.
class SerialWorkQueue::QueuedWork : public c10d::Work {
 public:
  QueuedWork(std::string name, std::function<std::string()> describe)
      : name_(std::move(name)), describe_(std::move(describe)) {}
  void complete(std::exception_ptr error) {
    finish(std::move(error));
    done_.store(true, std::memory_order_release);
  }

  bool wait(std::chrono::milliseconds timeout) override {
    spin_until([&] { return done_.load(std::memory_order_acquire); }, kSpinBudget);
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeout == std::chrono::milliseconds(0)) {  // c10d's kNoTimeout
      cv_.wait(lock, [&] { return completed_; });
    } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
      const std::string detail = describe_ ? describe_() : std::string();
      throw std::runtime_error(name_ + ": operation timed out after " + format_duration(timeout) +
                               (detail.empty() ? "" : "; " + detail));
    }
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

 private:
  std::string name_;
  std::function<std::string()> describe_;
  std::atomic<bool> done_{false};  // set after finish(): lets wait() poll without the mutex
};

SerialWorkQueue::SerialWorkQueue(SerialWorkQueueOptions options)
    : options_(std::move(options)), progress_([this] { progress_loop(); }) {}

SerialWorkQueue::~SerialWorkQueue() { shutdown(); }

c10::intrusive_ptr<c10d::Work> SerialWorkQueue::enqueue(std::string what,
                                                        std::function<void()> job) {
  auto work = c10::make_intrusive<QueuedWork>(options_.name, options_.describe_wait);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Pending{std::move(what), std::move(job), work});
    queued_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_one();
  return work;
}

void SerialWorkQueue::shutdown(const std::function<void()>& interrupt) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  if (interrupt) interrupt();
  wake_.notify_all();
  if (progress_.joinable()) progress_.join();
}

void SerialWorkQueue::progress_loop() {
  if (options_.on_thread_start) options_.on_thread_start();
  while (true) {
    Pending next;
    spin_until([&] { return queued_.load(std::memory_order_acquire) != 0; }, kSpinBudget);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      next = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
      if (stopping_ && !failure_) {
        failure_ = std::make_exception_ptr(std::runtime_error(
            options_.name + ": " + next.what + " aborted: the communicator is shutting down"));
      }
    }
    if (failure_) {
      next.work->complete(failure_);
      continue;
    }
    try {
      next.job();
      next.work->complete(nullptr);
    } catch (...) {
      failure_ = std::current_exception();
      next.work->complete(failure_);
    }
  }
}

}  // namespace gradwire
