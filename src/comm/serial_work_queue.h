// A progress thread that runs queued jobs one at a time, in issue order, and completes one c10d
// work handle per job: what the shm and hierarchical process groups run their collectives on.
//
// Failure policy: a job that throws completes its work with that exception; every later job is
// then not run, its work completes with the same exception (the peers' progress is unknown).
// Once shutdown() begins, jobs that have not started are not run either: the first fails with a
// std::runtime_error "<name>: <what> aborted: the communicator is shutting down", and it and every
// later one complete with that error.
//
// Thread safety: enqueue() may be called from any thread (a mutex guards only the queue); jobs
// run on the progress thread only. Nothing throws on the progress thread. Work handles are waited
// on the caller's thread; a timed wait that runs out throws std::runtime_error
// "<name>: operation timed out after <time>; <describe_wait()>" (without "; ..." when that is
// empty) and leaves the job running.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "c10d_adapter.h"

namespace gradwire {

struct SerialWorkQueueOptions {
  // Starts every message: the backend's name ("shm", "hierarchical"). Default: empty.
  std::string name;
  // Run once on the progress thread before any job (thread settings). Default: none.
  std::function<void()> on_thread_start;
  // What the progress thread is doing, for the message of a wait that timed out; called on the
  // waiting thread, also after the queue is gone (so capture state weakly). Default: none.
  std::function<std::string()> describe_wait;
};

class SerialWorkQueue {
 public:
  // Starts the progress thread.
  explicit SerialWorkQueue(SerialWorkQueueOptions options);
  // shutdown() without an interrupt, if not done yet.
  ~SerialWorkQueue();
  SerialWorkQueue(const SerialWorkQueue&) = delete;
  SerialWorkQueue& operator=(const SerialWorkQueue&) = delete;

  // Queues `job` and returns its work at once. `what` names the operation in messages
  // ("allreduce(sum)"). Must not be called once shutdown() began.
  c10::intrusive_ptr<c10d::Work> enqueue(std::string what, std::function<void()> job);

  // Marks the queue as stopping, calls `interrupt` (when given) so that the running job can end
  // early, and blocks until the progress thread has failed every job left and exited. Call it
  // from the owner's destructor, before what the jobs use is destroyed. Idempotent.
  void shutdown(const std::function<void()>& interrupt = {});

 private:
  class QueuedWork;
  struct Pending {
    std::string what;
    std::function<void()> job;
    c10::intrusive_ptr<QueuedWork> work;
  };
  void progress_loop();

  SerialWorkQueueOptions options_;

  std::mutex mutex_;  // guards wake_, queue_, stopping_
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  // queue_.size(), also readable without the mutex: the idle progress thread polls it briefly
  // before sleeping on wake_ (Note [spin then sleep] in spin_wait.h).
  std::atomic<size_t> queued_{0};
  bool stopping_ = false;

  // Progress thread only: the first failure, which fails every later job.
  std::exception_ptr failure_;

  std::thread progress_;  // last: started once everything above exists
};

}  // namespace gradwire
