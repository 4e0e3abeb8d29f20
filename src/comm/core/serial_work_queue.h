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
// run one at a time, in order, on the progress thread, or (with caller_runs_within) on a thread
// waiting for them. Nothing throws on the progress thread. Work handles are waited on the
// caller's thread; a timed wait that runs out throws std::runtime_error
// "<name>: operation timed out after <time>; <describe_wait()>" (without "; ..." when that is
// empty) and leaves the job running.
//
// Note [caller runs]: with caller_runs_within set, a thread that waits for a job that has not
// started while no job runs takes the jobs from the head of the queue up to its own and runs
// them itself, instead of waking the progress thread and being woken back: two thread hand-offs
// fewer, which on a loaded machine are most of a small operation's latency. Issuing stays
// asynchronous (enqueue never runs a job), and jobs still run one at a time in issue order, so
// nothing can happen that the progress thread running them could not do. A wait with a limit
// shorter than caller_runs_within does not take jobs, since a job's own deadline would then
// outlast the wait's.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/core/c10d_adapter.h"

namespace gradwire {

struct SerialWorkQueueOptions {
  // Starts every message: the backend's name ("shm", "hierarchical"). Default: empty.
  std::string name;
  // Run once on the progress thread before any job (thread settings). Default: none.
  std::function<void()> on_thread_start;
  // What the progress thread is doing, for the message of a wait that timed out; called on the
  // waiting thread, also after the queue is gone (so capture state weakly). Default: none.
  std::function<std::string()> describe_wait;
  // Waits without a limit, or with a limit of at least this, may run the jobs up to theirs
  // themselves (Note [caller runs]); set it to the jobs' own time limit. Default 0: never.
  std::chrono::milliseconds caller_runs_within{0};
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
  struct State;  // the queue and its flags, shared with the works (a caller may run jobs)
  void progress_loop();

  SerialWorkQueueOptions options_;
  std::shared_ptr<State> state_;
  std::thread progress_;  // last: started once everything above exists
};

}  // namespace gradwire
