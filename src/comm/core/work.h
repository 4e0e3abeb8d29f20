// Work handles: one wrapping a c10d work with a finishing step run on wait(), one that is done at
// once, and one chaining a finishing step after another handle.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "gradwire/common/timeline.h"
#include "comm/core/c10d_adapter.h"
#include "gradwire/comm/communicator.h"
#include "comm/core/op_context.h"

namespace gradwire {

// The stream-ordered works (BackendTraits::stream_ordered_wait) whose wait() returned before the
// device had finished them. A failure the backend's watchdog records on one later (NCCL's timeout
// or a peer's error) is thrown by the communicator's next operation or wait: check().
class UnfinishedWorks {
 public:
  void add(c10d_adapter::WorkPtr work, OpContext context);
  // Forgets the works that finished well; throws the gradwire error (translate_failure with its
  // own OpContext: the operation, its ranks, the desync report) of the first that failed.
  void check();
  size_t size();

 private:
  std::mutex mutex_;
  std::vector<std::pair<c10d_adapter::WorkPtr, OpContext>> works_;
};

// Wraps a c10d work. wait() waits with a timeout, runs `finish` once (copy-back, averaging) and
// turns backend exceptions into gradwire errors via OpContext. `stream_ordered`
// (BackendTraits::stream_ordered_wait): wait() without a timeout only makes the current device
// stream wait for the work, and `finish` is queued on that stream after it.
class C10dWork : public Work {
 public:
  // `unfinished`: where a stream-ordered wait leaves a work the device has not finished (null: the
  // backend's waits block the host).
  C10dWork(c10d_adapter::WorkPtr work, OpContext context, std::function<void()> finish,
           std::shared_ptr<UnfinishedWorks> unfinished = nullptr);
  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() override;

 private:
  std::mutex mutex_;  // guards all members below during wait()
  c10d_adapter::WorkPtr work_;
  OpContext context_;
  std::function<void()> finish_;
  std::shared_ptr<UnfinishedWorks> unfinished_;
  bool done_ = false;
  std::exception_ptr error_;
  timeline::AsyncSpan span_;  // issued to waited, when a timeline runs
};

// Runs `finish` after `inner` completes (at wait time).
class ThenWork : public Work {
 public:
  ThenWork(WorkHandle inner, std::function<void()> finish)
      : inner_(std::move(inner)), finish_(std::move(finish)) {}
  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() override { return inner_->is_completed(); }

 private:
  std::mutex mutex_;
  WorkHandle inner_;
  std::function<void()> finish_;
};

// Already finished (zero-size collectives, one-rank no-ops).
class CompletedWork : public Work {
 public:
  void wait(std::optional<std::chrono::milliseconds>) override {}
  bool is_completed() override { return true; }
};

}  // namespace gradwire
