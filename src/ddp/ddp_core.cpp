// DdpCore: construction checks, parameter/buffer broadcast, and the forward-side half of an
// iteration; the backward side is the Reducer.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <chrono>
#include <unordered_set>

#include "coalesced.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"
#include "gradwire/common/timeline.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/ddp/join.h"
#include "join_participant.h"
#include "model_check.h"
#include "reducer.h"

namespace gradwire::ddp::detail {
namespace {

using Clock = std::chrono::steady_clock;

size_t mib_to_bytes(double mib, const char* option) {
  if (!(mib > 0)) {
    throw InvalidArgument(std::string("DdpOptions::") + option + " must be positive, got " +
                          std::to_string(mib));
  }
  return static_cast<size_t>(mib * 1024 * 1024);
}

// Distinct tensors (tied weights appear once, under their first name).
template <typename Items>
void collect_distinct(const Items& items, std::vector<at::Tensor>& tensors,
                      std::vector<std::string>& names) {
  std::unordered_set<const void*> seen;
  for (const auto& item : items) {
    if (!seen.insert(item.value().unsafeGetTensorImpl()).second) continue;
    tensors.push_back(item.value());
    names.push_back(item.key());
  }
}

}  // namespace
}  // namespace gradwire::ddp::detail

namespace gradwire::ddp {

DdpOptions resolve(const DdpOptions& options, const EnvMap& env) {
  DdpOptions resolved = options;
  if (!resolved.bucket_cap_mb) {
    resolved.bucket_cap_mb = env.get_double(settings::kBucketCapMb.name).value_or(25);
  }
  if (!resolved.first_bucket_mb) {
    resolved.first_bucket_mb = env.get_double(settings::kFirstBucketMb.name).value_or(1);
  }
  return resolved;
}

}  // namespace gradwire::ddp

namespace gradwire::ddp::detail {

class DdpCore::Impl {
 public:
  Impl(torch::nn::Module& module, std::shared_ptr<Communicator> comm, DdpOptions options)
      : comm_(std::move(comm)), options_(resolve(options, EnvMap::from_process())) {
    if (!comm_) throw InvalidArgument("DistributedDataParallel: the communicator is null");
    ReducerOptions reducer_options;
    reducer_options.caps_bytes = {mib_to_bytes(*options_.first_bucket_mb, "first_bucket_mb"),
                                  mib_to_bytes(*options_.bucket_cap_mb, "bucket_cap_mb")};
    reducer_options.find_unused_parameters = options_.find_unused_parameters;
    reducer_options.gradient_as_bucket_view = options_.gradient_as_bucket_view;
    reducer_options.shared_buckets = options_.shared_buckets;
    reducer_options.static_graph = options_.static_graph;
    reducer_options.comm_hook = options_.comm_hook ? options_.comm_hook : allreduce_hook();
    reducer_options.record_events = options_.record_events;
    reducer_options.schedule = options_.schedule;

    check_model_across_ranks(module, options_, *comm_);

    std::vector<at::Tensor> params;
    std::vector<std::string> param_names;
    collect_distinct(module.named_parameters(/*recurse=*/true), params, param_names);
    std::vector<std::string> buffer_names;
    collect_distinct(module.named_buffers(/*recurse=*/true), buffers_, buffer_names);

    state_ = params;
    state_.insert(state_.end(), buffers_.begin(), buffers_.end());
    broadcast_coalesced(*comm_, state_, /*root=*/0);
    if (options_.broadcast_buffers) forward_buffers_ = buffers_;

    std::vector<at::Tensor> trained;
    std::vector<std::string> trained_names;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!params[i].requires_grad()) continue;
      trained.push_back(params[i]);
      trained_names.push_back(param_names[i]);
    }
    reducer_ = Reducer::create(std::move(trained), std::move(trained_names), comm_,
                               std::move(reducer_options));
  }

  // Under a Join, a forward that communicates starts with a join round (join_participant.h),
  // which a joined rank mirrors in this order: round, rebuild, buffers.
  void before_forward() {
    forward_start_ = Clock::now();
    forward_start_ns_ = timeline::enabled() ? timeline::now_ns() : 0;
    const bool sync = synchronising();
    const bool broadcasts = !forward_buffers_.empty() && comm_->size() > 1;
    JoinParticipant::ForwardPlan plan{/*buffer_root=*/0, /*divisor=*/comm_->size()};
    if (join_ && (sync || broadcasts)) plan = join_->on_forward(sync);
    divisor_ = plan.divisor;
    if (sync) reducer_->rebuild_buckets_if_due();
    if (broadcasts) broadcast_coalesced(*comm_, forward_buffers_, plan.buffer_root);
  }

  void after_forward(const std::vector<at::Tensor>& outputs, bool outputs_known) {
    double forward_s = std::chrono::duration<double>(Clock::now() - forward_start_).count();
    if (timeline::enabled() && forward_start_ns_ > 0) {
      timeline::complete("forward", "ddp", forward_start_ns_, timeline::now_ns(),
                         {{"sync", synchronising()}});
    }
    if (synchronising()) {
      reducer_->arm(outputs, outputs_known, forward_s, divisor_);
    } else {
      reducer_->disarm();
    }
  }

  bool set_sync(bool enabled) {
    bool previous = sync_;
    sync_ = enabled;
    return previous;
  }

  Communicator& communicator() const { return *comm_; }
  Reducer& reducer() const { return *reducer_; }

  void attach_join(const JoinOptions& options) {
    if (join_) {
      throw InvalidArgument(
          "DistributedDataParallel: a Join is attached already; finish it (or leave its scope) "
          "before starting another");
    }
    join_ = std::make_unique<JoinParticipant>(
        options, JoinedModel{*comm_, *reducer_, forward_buffers_, state_});
  }

  JoinResult finish_join() {
    GRADWIRE_CHECK(join_ != nullptr);
    std::unique_ptr<JoinParticipant> join = std::move(join_);  // detached, even if it throws
    return join->shadow_until_all_joined();
  }

  void detach_join() { join_.reset(); }

 private:
  bool synchronising() const { return sync_ && at::GradMode::is_enabled(); }

  std::shared_ptr<Communicator> comm_;
  DdpOptions options_;
  std::vector<at::Tensor> buffers_;
  std::vector<at::Tensor> forward_buffers_;  // broadcast at every forward: buffers_ or none
  std::vector<at::Tensor> state_;            // parameters, then buffers
  std::shared_ptr<Reducer> reducer_;
  std::unique_ptr<JoinParticipant> join_;  // while a Join is attached
  int divisor_ = 1;                        // of the iteration the last forward started
  bool sync_ = true;
  Clock::time_point forward_start_;
  int64_t forward_start_ns_ = 0;  // timeline::now_ns(), when a timeline runs
};

DdpCore::DdpCore(torch::nn::Module& module, std::shared_ptr<Communicator> comm, DdpOptions options)
    : impl_(std::make_shared<Impl>(module, std::move(comm), std::move(options))) {}
DdpCore::~DdpCore() = default;

void DdpCore::before_forward() { impl_->before_forward(); }
void DdpCore::after_forward(const std::vector<at::Tensor>& outputs, bool outputs_known) {
  impl_->after_forward(outputs, outputs_known);
}
bool DdpCore::set_sync(bool enabled) { return impl_->set_sync(enabled); }
DdpStats DdpCore::stats() const { return impl_->reducer().stats(); }
void DdpCore::reset_stats() { impl_->reducer().reset_stats(); }
std::vector<DdpEvent> DdpCore::last_iteration_events() const {
  return impl_->reducer().last_iteration_events();
}
Communicator& DdpCore::communicator() const { return impl_->communicator(); }
void DdpCore::attach_join(const JoinOptions& options) { impl_->attach_join(options); }
JoinResult DdpCore::finish_join() { return impl_->finish_join(); }
void DdpCore::detach_join() { impl_->detach_join(); }

}  // namespace gradwire::ddp::detail
