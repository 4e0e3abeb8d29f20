#include "comm/core/work.h"

#include "gradwire/common/error.h"

namespace gradwire {

C10dWork::C10dWork(c10d_adapter::WorkPtr work, OpContext context, std::function<void()> finish,
                   bool stream_ordered)
    : work_(std::move(work)),
      context_(std::move(context)),
      finish_(std::move(finish)),
      stream_ordered_(stream_ordered) {}

void C10dWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) return;
  if (error_) std::rethrow_exception(error_);
  auto limit = timeout.value_or(context_.default_timeout);
  try {
    if (stream_ordered_ && !timeout) {
      work_->wait();  // c10d's kNoTimeout: the current stream waits, the host does not
    } else {
      work_->wait(limit);
    }
  } catch (const gradwire::Error&) {
    throw;
  } catch (const std::exception& e) {
    OpContext context = context_;
    context.default_timeout = limit;
    error_ = translate_failure(e, context);
    std::rethrow_exception(error_);
  }
  if (finish_) finish_();
  finish_ = nullptr;
  work_.reset();
  done_ = true;
}

bool C10dWork::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ || error_ || work_->isCompleted();
}

void ThenWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  inner_->wait(timeout);
  if (finish_) finish_();
  finish_ = nullptr;
}

}  // namespace gradwire
