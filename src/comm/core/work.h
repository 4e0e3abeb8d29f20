// Work handles: one wrapping a c10d work with a finishing step run on wait(), one that is done at
// once, and one chaining a finishing step after another handle.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

#include "comm/core/c10d_adapter.h"
#include "gradwire/comm/communicator.h"
#include "comm/core/op_context.h"

namespace gradwire {

// Wraps a c10d work. wait() waits with a timeout, runs `finish` once (copy-back, averaging) and
// turns backend exceptions into gradwire errors via OpContext. `stream_ordered`
// (BackendTraits::stream_ordered_wait): wait() without a timeout only makes the current device
// stream wait for the work, and `finish` is queued on that stream after it.
class C10dWork : public Work {
 public:
  C10dWork(c10d_adapter::WorkPtr work, OpContext context, std::function<void()> finish,
           bool stream_ordered = false);
  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() override;

 private:
  std::mutex mutex_;  // guards all members below during wait()
  c10d_adapter::WorkPtr work_;
  OpContext context_;
  std::function<void()> finish_;
  bool stream_ordered_;
  bool done_ = false;
  std::exception_ptr error_;
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
