#include "comm/core/serial_work_queue.h"

#include <stdexcept>

#include "comm/core/spin_wait.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {
// How long the progress thread polls for the next job, and a caller polls for its work, before
// sleeping (Note [spin then sleep] in core/spin_wait.h).
constexpr auto kSpinBudget = std::chrono::microseconds(100);
}  // namespace

struct SerialWorkQueue::State {
  struct Pending {
    std::string what;
    std::function<void()> job;
    c10::intrusive_ptr<QueuedWork> work;
  };

  explicit State(std::string name_in) : name(std::move(name_in)) {}

  // Runs `next` unless an earlier job failed, and completes its work. Called with running set.
  void run(Pending& next);
  // Runs the jobs from the head up to `work`, while no job runs (Note [caller runs]).
  void run_up_to(const QueuedWork* work);

  const std::string name;
  std::mutex mutex;              // guards everything below but `queued`
  std::condition_variable wake;  // the progress thread waits for a job it may run
  std::condition_variable idle;  // shutdown() waits until no caller runs a job
  std::deque<Pending> queue;
  // queue.size(), also readable without the mutex: the idle progress thread polls it briefly
  // before sleeping on `wake` (Note [spin then sleep] in core/spin_wait.h).
  std::atomic<size_t> queued{0};
  bool stopping = false;
  bool running = false;         // a job runs, on the progress thread or a waiting caller's
  bool caller_running = false;  // ... on a waiting caller's
  std::exception_ptr failure;   // the first failure, which fails every later job
};

// A c10d work completed by whoever ran its job.
class SerialWorkQueue::QueuedWork : public c10d::Work {
 public:
  QueuedWork(std::shared_ptr<State> state, std::chrono::milliseconds caller_runs_within,
             std::function<std::string()> describe)
      : state_(std::move(state)),
        caller_runs_within_(caller_runs_within),
        describe_(std::move(describe)) {}
  void complete(std::exception_ptr error) {
    finish(std::move(error));
    done_.store(true, std::memory_order_release);
  }

  bool wait(std::chrono::milliseconds timeout) override {
    const bool unlimited = timeout == std::chrono::milliseconds(0);  // c10d's kNoTimeout
    if (caller_runs_within_.count() > 0 && (unlimited || timeout >= caller_runs_within_) &&
        !done_.load(std::memory_order_acquire)) {
      state_->run_up_to(this);
    }
    spin_until([&] { return done_.load(std::memory_order_acquire); }, kSpinBudget);
    std::unique_lock<std::mutex> lock(mutex_);
    if (unlimited) {
      cv_.wait(lock, [&] { return completed_; });
    } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
      const std::string detail = describe_ ? describe_() : std::string();
      throw std::runtime_error(state_->name + ": operation timed out after " +
                               format_duration(timeout) + (detail.empty() ? "" : "; " + detail));
    }
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

 private:
  std::shared_ptr<State> state_;
  std::chrono::milliseconds caller_runs_within_;
  std::function<std::string()> describe_;
  std::atomic<bool> done_{false};  // set after finish(): lets wait() poll without the mutex
};

void SerialWorkQueue::State::run(Pending& next) {
  std::exception_ptr earlier;
  {
    std::lock_guard<std::mutex> lock(mutex);
    earlier = failure;
  }
  if (earlier) {
    next.work->complete(earlier);
    return;
  }
  try {
    next.job();
    next.work->complete(nullptr);
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    {
      std::lock_guard<std::mutex> lock(mutex);
      failure = error;
    }
    next.work->complete(error);
  }
}

void SerialWorkQueue::State::run_up_to(const QueuedWork* work) {
  while (true) {
    Pending next;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (running || stopping) return;
      bool waiting = false;
      for (const auto& pending : queue) waiting = waiting || pending.work.get() == work;
      if (!waiting) return;  // started elsewhere, or done
      next = std::move(queue.front());
      queue.pop_front();
      queued.fetch_sub(1, std::memory_order_relaxed);
      running = true;
      caller_running = true;
    }
    const bool mine = next.work.get() == work;
    run(next);
    bool wanted = false;  // the progress thread has something to do: a job, or to stop
    {
      std::lock_guard<std::mutex> lock(mutex);
      running = false;
      caller_running = false;
      wanted = !queue.empty() || stopping;
    }
    // Wakes the progress thread only when there is a job for it: a wake-up that finds nothing
    // costs a futex call here and a scheduler pass there, on a core the ranks need.
    if (wanted) wake.notify_one();
    idle.notify_all();
    if (mine) return;
  }
}

SerialWorkQueue::SerialWorkQueue(SerialWorkQueueOptions options)
    : options_(std::move(options)),
      state_(std::make_shared<State>(options_.name)),
      progress_([this] { progress_loop(); }) {}

SerialWorkQueue::~SerialWorkQueue() { shutdown(); }

c10::intrusive_ptr<c10d::Work> SerialWorkQueue::enqueue(std::string what,
                                                        std::function<void()> job) {
  auto work =
      c10::make_intrusive<QueuedWork>(state_, options_.caller_runs_within, options_.describe_wait);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.push_back(State::Pending{std::move(what), std::move(job), work});
    state_->queued.fetch_add(1, std::memory_order_release);
  }
  state_->wake.notify_one();
  return work;
}

void SerialWorkQueue::shutdown(const std::function<void()>& interrupt) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  if (interrupt) interrupt();
  state_->wake.notify_all();
  if (progress_.joinable()) progress_.join();
  // A caller that was running a job when shutdown began: the job uses the owner's state.
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->idle.wait(lock, [&] { return !state_->caller_running; });
}

void SerialWorkQueue::progress_loop() {
  if (options_.on_thread_start) options_.on_thread_start();
  State& state = *state_;
  while (true) {
    State::Pending next;
    spin_until([&] { return state.queued.load(std::memory_order_acquire) != 0; }, kSpinBudget);
    {
      std::unique_lock<std::mutex> lock(state.mutex);
      state.wake.wait(lock, [&] {
        return (state.stopping && !state.caller_running) ||
               (!state.queue.empty() && !state.running);
      });
      if (state.queue.empty()) return;  // stopping, nothing left
      next = std::move(state.queue.front());
      state.queue.pop_front();
      state.queued.fetch_sub(1, std::memory_order_relaxed);
      if (state.stopping && !state.failure) {
        state.failure = std::make_exception_ptr(std::runtime_error(
            state.name + ": " + next.what + " aborted: the communicator is shutting down"));
      }
      state.running = true;
    }
    state.run(next);
    std::lock_guard<std::mutex> lock(state.mutex);
    state.running = false;
  }
}

}  // namespace gradwire
