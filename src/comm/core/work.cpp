#include "comm/core/work.h"

#include "gradwire/common/error.h"

namespace gradwire {

void UnfinishedWorks::add(c10d_adapter::WorkPtr work, OpContext context) {
  std::lock_guard<std::mutex> lock(mutex_);
  works_.emplace_back(std::move(work), std::move(context));
}

void UnfinishedWorks::check() {
  std::exception_ptr failure;
  OpContext context;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = works_.begin(); it != works_.end();) {
      if (!it->first->isCompleted()) {
        ++it;
        continue;
      }
      if (!failure && it->first->exception()) {
        failure = it->first->exception();
        context = it->second;
      }
      it = works_.erase(it);
    }
  }
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const gradwire::Error&) {
    throw;
  } catch (const std::exception& e) {
    std::rethrow_exception(translate_failure(e, context));
  }
}

size_t UnfinishedWorks::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return works_.size();
}

C10dWork::C10dWork(c10d_adapter::WorkPtr work, OpContext context, std::function<void()> finish,
                   std::shared_ptr<UnfinishedWorks> unfinished)
    : work_(std::move(work)),
      context_(std::move(context)),
      finish_(std::move(finish)),
      unfinished_(std::move(unfinished)) {
  if (timeline::enabled()) {
    // "allreduce(sum) of 1024 float elements" -> "allreduce"
    const std::string& what = context_.description;
    span_ = timeline::AsyncSpan(what.substr(0, what.find_first_of("( ")), "comm",
                                {{"what", what},
                                 {"algorithm", context_.algorithm},
                                 {"ranks", context_.world_ranks.size()},
                                 {"sequence", context_.sequence}});
  }
}

void C10dWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) return;
  if (error_) std::rethrow_exception(error_);
  auto limit = timeout.value_or(context_.default_timeout);
  try {
    if (unfinished_ && !timeout) {
      unfinished_->check();
      work_->wait();  // c10d's kNoTimeout: the current stream waits, the host does not
      if (!work_->isCompleted()) unfinished_->add(work_, context_);
    } else {
      work_->wait(limit);
    }
  } catch (const gradwire::Error&) {
    throw;
  } catch (const std::exception& e) {
    OpContext context = context_;
    context.default_timeout = limit;
    error_ = translate_failure(e, context);
    if (timeline::enabled()) {
      timeline::instant("collective failed", "comm", {{"what", context_.description}},
                        timeline::Scope::kProcess);
    }
    span_.end({{"failed", true}});
    std::rethrow_exception(error_);
  }
  if (finish_) finish_();
  finish_ = nullptr;
  span_.end();
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
