// Join (include/gradwire/ddp/join.h): the public handle. The protocol is in join_round.cpp and
// join_participant.cpp; the shadowed backward in join_shadow.cpp (Note [shadowed backward]).
#include "gradwire/ddp/join.h"

#include "gradwire/common/error.h"

namespace gradwire::ddp {

Join::Join(detail::DdpCore& core, const JoinOptions& options) : core_(&core) {
  core_->attach_join(options);
  attached_ = true;
}

Join::~Join() noexcept(false) {
  if (!attached_) return;
  if (std::uncaught_exceptions() > uncaught_at_start_) {
    core_->detach_join();  // unwinding: this rank stops here, the others fail on their timeout
    return;
  }
  finish();
}

JoinResult Join::finish() {
  if (result_) return *result_;
  if (!attached_) {
    throw InvalidArgument(
        "Join::finish: this Join failed in an earlier finish() and is detached; the job's ranks "
        "are out of step: restart them (or restore a checkpoint)");
  }
  attached_ = false;  // finish_join detaches, even when it throws
  result_ = core_->finish_join();
  return *result_;
}

}  // namespace gradwire::ddp
