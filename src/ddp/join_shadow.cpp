// Reducer::shadow_backward: a joined rank's part in the others' synchronised backward
// (include/gradwire/ddp/join.h). A member of the Reducer (reducer.h), kept beside the Join.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "reducer.h"

namespace gradwire::ddp {

// Note [shadowed backward]: a rank that has joined (join.h) issues what finalize() issues on the
// ranks still training, in the same order, over the same buckets: for kOverlapped and
// kAfterBackward every bucket is launched in order, then the used map is exchanged (if tracked),
// then the buckets are waited for; for kAfterBackwardSync the used map comes first, then each
// bucket is launched and waited for in turn. Its contribution is zero: empty buckets, no
// parameter used. The buckets are the real ones, not copies: on shm a shared bucket must be
// matched by the same place of every rank's buffers, and the fp16/bf16 hooks allocate their wire
// buffers (collectively) per bucket. Nothing is written to .grad; the rebuild order of a rank that
// never ran a synchronised iteration is its current layout's (used only if it is rank 0).
void Reducer::shadow_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  at::NoGradGuard no_grad;
  if (state_ == State::kReducing) drain(layout_);
  state_ = State::kIdle;
  const bool sync = options_.schedule == ReductionSchedule::kAfterBackwardSync;
  const bool tracking = tracks_unused();
  used_.assign(params_.size(), 0);
  for (auto& bucket : layout_.buckets) {
    bucket.grads.buffer.zero_();
    bucket.future.reset();
  }
  try {
    auto launch = [this](Bucket& bucket) {  // not timed or recorded: not this rank's iteration
      bucket.future = options_.comm_hook->run(*comm_, bucket.grads);
    };
    if (sync && tracking) globally_used_ = reduce_used_map();
    if (!sync) {
      for (auto& bucket : layout_.buckets) launch(bucket);
      if (tracking) globally_used_ = reduce_used_map();
    }
    for (auto& bucket : layout_.buckets) {
      if (sync) launch(bucket);
      bucket.future->wait();
      bucket.future.reset();
    }
  } catch (...) {
    drain(layout_);
    throw;
  }
  if (options_.static_graph && !static_unused_) {
    std::vector<size_t> unused;  // as the others found it; this rank's own use is none
    const int32_t* used = globally_used_.data_ptr<int32_t>();
    for (size_t i = 0; i < params_.size(); ++i) {
      if (used[i] == 0) unused.push_back(i);
    }
    static_unused_ = std::move(unused);
  }
  if (synced_iterations_ == 0) {
    rebuild_order_.clear();
    for (const auto& bucket : layout_.buckets) {
      rebuild_order_.insert(rebuild_order_.end(), bucket.members.begin(), bucket.members.end());
    }
  }
  ++synced_iterations_;
}

}  // namespace gradwire::ddp
