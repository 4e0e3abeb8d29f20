#include "reducer.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"

namespace gradwire::ddp {
namespace {

using Clock = std::chrono::steady_clock;

const char* state_name(int state) {
  static const char* const kNames[] = {"idle", "armed", "reducing"};
  return kNames[state];
}

// "a.weight, b.bias and 3 more"
std::string list_names(const std::vector<std::string>& names, const std::vector<size_t>& indices) {
  constexpr size_t kShown = 20;
  std::ostringstream out;
  for (size_t k = 0; k < indices.size() && k < kShown; ++k) {
    out << (k ? ", " : "") << names[indices[k]];
  }
  if (indices.size() > kShown) out << " and " << indices.size() - kShown << " more";
  return out.str();
}

// Whether `grad` lies exactly where `view` does: the same memory, shape, strides and dtype.
bool lies_at(const at::Tensor& grad, const at::Tensor& view) {
  return grad.defined() && grad.data_ptr() == view.data_ptr() && grad.sizes() == view.sizes() &&
         grad.strides() == view.strides() && grad.scalar_type() == view.scalar_type();
}

// Whether `grad` may move (Note [homed gradients], below) into `view`'s memory: a contiguous
// gradient of the view's shape, dtype and device that is not a view and is the sole owner of its
// storage, so that no other tensor sees its memory change.
bool movable(const at::Tensor& grad, const at::Tensor& view) {
  return grad.defined() && !grad.is_view() && grad.is_contiguous() &&
         grad.unsafeGetTensorImpl()->unsafe_storage().use_count() == 1 &&
         grad.scalar_type() == view.scalar_type() && grad.device() == view.device() &&
         grad.sizes() == view.sizes();
}

// Moves `grad`, whose values `view` already holds, into `view`'s memory if it is movable: the same
// tensor object gets a storage of its own over that memory, which keeps `buffer` (the bucket)
// alive. False when it is not movable.
bool move_home(at::Tensor& grad, const at::Tensor& view, const at::Tensor& buffer) {
  if (!movable(grad, view)) return false;
  c10::TensorImpl* impl = grad.unsafeGetTensorImpl();
  const at::Tensor home = at::from_blob(
      view.data_ptr(), view.sizes(), [keep = buffer.storage()](void*) {}, view.options());
  // autograd's gradients are detached tensors, which refuse metadata changes to protect the
  // tensor they were detached from; a sole owner has no such tensor left.
  impl->set_allow_tensor_metadata_change(true);
  grad.set_(home.storage(), 0, view.sizes(), view.strides());
  return true;
}

}  // namespace

// Note [homed gradients]: in the default mode (gradient_as_bucket_view = false) PyTorch copies
// every gradient into its bucket and the result back, two copies per iteration, and .grad stays
// a tensor of its own. gradwire keeps that promise without the copies:
// - A gradient found outside its bucket is copied in, as before. But when backward ends, the
//   .grad tensor's storage is moved onto its reduced values in the bucket (move_home) instead of
//   copying them out. Existing gradients move at construction and at the rebuild.
// - Later backward passes accumulate straight into the bucket's memory, and the reduction writes
//   the result where .grad reads it. On shm the buckets are shared buffers: an iteration copies
//   nothing, and the ranks reduce every copy in place, claiming pieces.
// - .grad stays the same tensor object, not an autograd view (detach_() and set_to_none work),
//   with a storage of its own that holds just its elements; only its memory is the bucket's.
// - Not in the gradient hook: autograd's engine still holds the incoming gradient there, which
//   shares the storage of a gradient autograd has just created.
// - A gradient that cannot move (it shares its storage, is a view, or has another layout or
//   dtype) is copied in and out every iteration.
// - A homed gradient whose parameter is unused in an iteration (find_unused_parameters,
//   static_graph) leaves the bucket for a copy of its own before the reduction: if no rank used
//   it, it keeps its value, as in PyTorch; if another rank did, it moves back onto the result.

std::shared_ptr<Reducer> Reducer::create(std::vector<at::Tensor> params,
                                         std::vector<std::string> names,
                                         std::shared_ptr<Communicator> comm,
                                         ReducerOptions options) {
  std::shared_ptr<Reducer> reducer(
      new Reducer(std::move(params), std::move(names), std::move(comm), std::move(options)));
  std::weak_ptr<Reducer> weak = reducer;
  reducer->hooks_ = std::make_unique<GradReadyHooks>(reducer->params_, [weak](size_t index) {
    if (auto self = weak.lock()) self->on_grad_ready(index);
  });
  return reducer;
}

Reducer::Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
                 std::shared_ptr<Communicator> comm, ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      comm_(std::move(comm)),
      options_(std::move(options)) {
  GRADWIRE_CHECK_EQ(params_.size(), names_.size());
  GRADWIRE_CHECK(options_.comm_hook != nullptr);
  if (params_.empty()) {
    throw InvalidArgument(
        "DistributedDataParallel: the module has no parameter that requires grad; there is "
        "nothing to synchronise");
  }
  divides_on_fill_ = options_.comm_hook->divides_on_fill(*comm_);
  set_divisor(comm_->size());
  layout_ = layout_for(reverse_order(params_.size()));
  bind_grads_to_views();
  ready_.assign(params_.size(), false);
  used_.assign(params_.size(), 0);
}

void Reducer::transition(State from, State to) {
  if (state_ != from) {
    throw InternalError(std::string("DistributedDataParallel reducer: transition to ") +
                        state_name(static_cast<int>(to)) + " expected state " +
                        state_name(static_cast<int>(from)) + " but is " +
                        state_name(static_cast<int>(state_)));
  }
  state_ = to;
}

BucketLayout Reducer::layout_for(const std::vector<size_t>& order) {
  BucketLayout layout = make_layout(
      params_, order, options_.caps_bytes, [this](int64_t numel, const at::Tensor& like) {
        if (options_.shared_buckets && like.device().is_cpu()) {
          return comm_->shared_buffer(numel, like.scalar_type());
        }
        return at::zeros({numel}, like.options().requires_grad(false));
      });
  return layout;
}

bool Reducer::tracks_unused() const {
  return (options_.find_unused_parameters && !options_.static_graph) ||
         (options_.static_graph && !static_unused_);
}

void Reducer::bind_grads_to_views() {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& grad = params_[i].mutable_grad();
    if (!grad.defined()) continue;
    const Slot& slot = layout_.slots[i];
    const Bucket& bucket = layout_.buckets[slot.bucket];
    const at::Tensor& view = bucket.grads.gradients[slot.position];
    if (options_.gradient_as_bucket_view) {
      view.copy_(grad);
      grad = view;
    } else if (movable(grad, view)) {  // Note [homed gradients]
      view.copy_(grad);
      move_home(grad, view, bucket.grads.buffer);
    }
  }
}

void Reducer::rebuild_buckets_if_due() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (rebuilt_ || synced_iterations_ == 0) return;
  if (options_.find_unused_parameters && !options_.static_graph) return;  // order varies
  GRADWIRE_CHECK_EQ(rebuild_order_.size(), params_.size());
  at::Tensor order = at::empty({static_cast<int64_t>(params_.size())}, at::kLong);
  for (size_t k = 0; k < rebuild_order_.size(); ++k) {
    order[static_cast<int64_t>(k)] = static_cast<int64_t>(rebuild_order_[k]);
  }
  if (comm_->size() > 1) {  // rank 0 decides, over the communicator's device
    at::Tensor on_device = order.to(comm_->device());
    comm_->broadcast(on_device, 0)->wait();
    order = on_device.cpu();
  }
  std::vector<size_t> chosen(params_.size());
  const int64_t* data = order.data_ptr<int64_t>();
  for (size_t k = 0; k < chosen.size(); ++k) chosen[k] = static_cast<size_t>(data[k]);
  layout_ = layout_for(chosen);
  bind_grads_to_views();
  rebuilt_ = true;
}

void Reducer::start_iteration(double forward_seconds) {
  if (state_ == State::kReducing) drain(layout_);  // a backward that never ended (it threw)
  state_ = State::kIdle;
  ready_.assign(params_.size(), false);
  used_.assign(params_.size(), 0);
  for (auto& bucket : layout_.buckets) {
    bucket.pending = bucket.members.size();
    bucket.future.reset();
  }
  next_to_launch_ = 0;
  ready_order_.clear();
  unused_.clear();
  events_.clear();
  timer_.start(forward_seconds);
}

// Under a Join that divides by the ranks still training (join.h), fewer ranks than comm->size()
// contribute. A hook that divides on fill gets gradients divided by them; a hook that averages by
// comm->size() has its result multiplied by comm->size() / divisor. Otherwise both scales are as
// without a Join (an unchanged result, bit for bit).
void Reducer::set_divisor(int divisor) {
  GRADWIRE_CHECK(divisor >= 1 && divisor <= comm_->size());
  fill_scale_ = divides_on_fill_ ? 1.0 / divisor : 1.0;
  result_scale_ = divides_on_fill_ ? 1.0 : static_cast<double>(comm_->size()) / divisor;
}

void Reducer::arm(const std::vector<at::Tensor>& outputs, bool outputs_known,
                  double forward_seconds, int divisor) {
  std::lock_guard<std::mutex> lock(mutex_);
  start_iteration(forward_seconds);
  set_divisor(divisor);
  if (options_.static_graph && static_unused_) {
    unused_ = *static_unused_;
  } else if (options_.find_unused_parameters && !options_.static_graph && outputs_known) {
    std::vector<bool> reachable = hooks_->reachable_from(outputs);
    for (size_t i = 0; i < reachable.size(); ++i) {
      if (!reachable[i]) unused_.push_back(i);
    }
  }
  transition(State::kIdle, State::kArmed);
}

void Reducer::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::kReducing) drain(layout_);
  state_ = State::kIdle;
}

void Reducer::on_grad_ready(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::kIdle) return;  // no_sync, or a backward DDP was not armed for
  if (state_ == State::kArmed) {
    transition(State::kArmed, State::kReducing);
    backward_start_ns_ = timeline::enabled() ? timeline::now_ns() : 0;
    std::weak_ptr<Reducer> weak = weak_from_this();
    at_backward_end([weak] {
      if (auto self = weak.lock()) self->finalize();
    });
    for (size_t unused : unused_) mark_ready(unused, /*used=*/false);
  }
  timer_.grad_ready(Clock::now());
  mark_ready(index, /*used=*/true);
}

void Reducer::mark_ready(size_t index, bool used) {
  if (ready_[index]) {
    throw InvalidArgument(
        "DistributedDataParallel: parameter '" + names_[index] + "' " +
        (used_[index] ? "received its gradient twice in one backward pass"
                      : "was found unused after forward but then received a gradient") +
        ". Reentrant backward, or using a parameter outside the wrapped forward, is not "
        "supported; if the set of unused parameters never changes, try static_graph = true.");
  }
  ready_[index] = true;
  used_[index] = used ? 1 : 0;
  ready_order_.push_back(index);
  record(DdpEventKind::kGradReady, index);
  copy_grad_to_bucket(index, used);
  const Slot& slot = layout_.slots[index];
  if (--layout_.buckets[slot.bucket].pending == 0 &&
      options_.schedule == ReductionSchedule::kOverlapped) {
    launch_ready_buckets();
  }
}

void Reducer::copy_grad_to_bucket(size_t index, bool used) {
  const Slot& slot = layout_.slots[index];
  at::Tensor& view = layout_.buckets[slot.bucket].grads.gradients[slot.position];
  at::Tensor& grad = params_[index].mutable_grad();
  if (!grad.defined()) {
    view.zero_();
    return;
  }
  if (grad.is_sparse()) {
    throw InvalidArgument("DistributedDataParallel: parameter '" + names_[index] +
                          "' has a sparse gradient, which buckets cannot hold; use dense "
                          "gradients, or gradwire's parameter-server embeddings");
  }
  const bool homed = !options_.gradient_as_bucket_view && lies_at(grad, view);
  if (homed && !used) {
    // Unused here, perhaps everywhere: then it keeps its own value, which the reduction must not
    // overwrite. The bucket keeps a copy; write_grads moves it back if others used it.
    grad.set_(view.clone());
  }
  if (homed || (options_.gradient_as_bucket_view && grad.is_alias_of(view))) {
    if (fill_scale_ != 1.0) view.mul_(fill_scale_);  // accumulated in place already
    return;
  }
  if (fill_scale_ != 1.0) {
    at::mul_out(view, grad, fill_scale_);
  } else {
    view.copy_(grad);
  }
  if (options_.gradient_as_bucket_view && used) grad = view;
}

void Reducer::launch_next_bucket() {
  Bucket& bucket = layout_.buckets[next_to_launch_];
  record(DdpEventKind::kBucketLaunched, next_to_launch_);
  timer_.launched(Clock::now());
  std::optional<timeline::Span> launch;  // the comm hook's own time on this thread
  if (timeline::enabled()) {
    // From the bucket's launch (in the default schedule: the moment it is full) to its reduction.
    const std::string hook = options_.comm_hook->name();
    bucket.span = timeline::AsyncSpan(
        "bucket " + std::to_string(next_to_launch_), "ddp",
        {{"bucket", next_to_launch_},
         {"bytes", static_cast<int64_t>(bucket.grads.buffer.nbytes())},
         {"hook", hook}});
    launch.emplace("comm hook", "ddp", timeline::Args{{"hook", hook}});
  }
  bucket.future = options_.comm_hook->run(*comm_, bucket.grads);
  ++next_to_launch_;
}

void Reducer::launch_ready_buckets() {
  auto& buckets = layout_.buckets;
  while (next_to_launch_ < buckets.size() && buckets[next_to_launch_].pending == 0) {
    launch_next_bucket();
  }
}

void Reducer::finalize() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    finalize_locked();
  } catch (...) {
    drain(layout_);
    state_ = State::kIdle;
    throw;
  }
}

void Reducer::finalize_locked() {
  at::NoGradGuard no_grad;
  timer_.backward_end(Clock::now());
  record(DdpEventKind::kBackwardEnd, 0);
  if (timeline::enabled() && backward_start_ns_ > 0) {
    timeline::complete("backward", "ddp", backward_start_ns_, timeline::now_ns());
  }
  const bool first_static = options_.static_graph && !static_unused_;
  const bool tracking = tracks_unused();

  std::vector<size_t> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!ready_[i]) missing.push_back(i);
  }
  if (!missing.empty() && !tracking) fail_unused(missing);
  for (size_t i : missing) mark_ready(i, /*used=*/false);
  if (first_static) {
    std::vector<size_t> unused;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!used_[i]) unused.push_back(i);
    }
    static_unused_ = std::move(unused);
  }
  // kOverlapped launched every bucket during backward; kAfterBackward launches them all now;
  // kAfterBackwardSync launches each just before waiting for it.
  const bool sync = options_.schedule == ReductionSchedule::kAfterBackwardSync;
  if (options_.schedule == ReductionSchedule::kAfterBackward) launch_ready_buckets();
  GRADWIRE_CHECK_EQ(next_to_launch_, sync ? 0 : layout_.buckets.size());

  if (tracking) globally_used_ = reduce_used_map();
  // Each bucket's gradients are written as soon as it is reduced, while later buckets may still
  // be in flight.
  timeline::Span waiting("ddp wait", "ddp", {{"buckets", layout_.buckets.size()}});
  for (auto& bucket : layout_.buckets) {
    if (sync) launch_next_bucket();
    at::Tensor result = bucket.future->wait();
    bucket.future.reset();
    bucket.span.end();
    if (!result.is_same(bucket.grads.buffer)) bucket.grads.buffer.copy_(result);
    if (result_scale_ != 1.0) bucket.grads.buffer.mul_(result_scale_);
    record(DdpEventKind::kBucketReduced, bucket.grads.index);
    write_grads(bucket);
  }
  waiting.end();
  timer_.reduced(Clock::now());
  if (synced_iterations_ == 0) rebuild_order_ = ready_order_;
  ++synced_iterations_;
  last_events_ = events_;
  transition(State::kReducing, State::kIdle);
}

void Reducer::fail_unused(const std::vector<size_t>& missing) {
  std::ostringstream message;
  message << "DistributedDataParallel: backward ended on rank " << comm_->rank()
          << " without a gradient for " << missing.size() << " of " << params_.size()
          << " parameters: " << list_names(names_, missing)
          << ". They took no part in computing the loss. If that is intended, construct "
             "DistributedDataParallel with DdpOptions::find_unused_parameters = true (or "
             "static_graph = true when the same parameters are unused every iteration); "
             "otherwise make the loss depend on them.";
  throw InvalidArgument(message.str());
}

at::Tensor Reducer::reduce_used_map() {
  at::Tensor used = at::empty({static_cast<int64_t>(used_.size())}, at::kInt);
  std::copy(used_.begin(), used_.end(), used.data_ptr<int32_t>());
  if (comm_->size() > 1) {
    at::Tensor on_device = used.to(comm_->device());
    comm_->allreduce(on_device, ReduceOp::kMax)->wait();
    used = on_device.cpu();
  }
  return used;
}

void Reducer::write_grads(const Bucket& bucket) {
  const int32_t* used = globally_used_.defined() ? globally_used_.data_ptr<int32_t>() : nullptr;
  for (size_t position = 0; position < bucket.members.size(); ++position) {
    const size_t i = bucket.members[position];
    if (used && used[i] == 0) continue;  // unused on every rank: .grad stays as it was
    const at::Tensor& view = bucket.grads.gradients[position];
    at::Tensor& grad = params_[i].mutable_grad();
    if (options_.gradient_as_bucket_view) {
      if (!grad.defined() || !grad.is_alias_of(view)) grad = view;
    } else if (lies_at(grad, view) || move_home(grad, view, bucket.grads.buffer)) {
      continue;  // the reduction wrote it there, or it moved onto it (Note [homed gradients])
    } else if (grad.defined()) {
      grad.copy_(view);
    } else {
      grad = view.clone();
    }
  }
}

void Reducer::record(DdpEventKind kind, size_t index) {
  if (options_.record_events) events_.push_back({kind, index, Clock::now()});
}

DdpStats Reducer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DdpStats stats;
  timer_.fill(stats);
  stats.buckets_rebuilt = rebuilt_;
  stats.comm_hook = options_.comm_hook->name();
  stats.buckets = describe_layout(layout_, names_);
  return stats;
}

void Reducer::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  timer_.reset();
}

std::vector<DdpEvent> Reducer::last_iteration_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_events_;
}

}  // namespace gradwire::ddp
