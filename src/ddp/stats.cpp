#include <iomanip>
#include <sstream>

#include "common/enum_names.h"
#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

namespace {
constexpr EnumNames<DdpEventKind, 4> kEventNames{
    {{{DdpEventKind::kGradReady, "grad_ready"},
      {DdpEventKind::kBucketLaunched, "bucket_launched"},
      {DdpEventKind::kBucketReduced, "bucket_reduced"},
      {DdpEventKind::kBackwardEnd, "backward_end"}}}};
constexpr EnumNames<ReductionSchedule, 3> kScheduleNames{
    {{{ReductionSchedule::kOverlapped, "overlapped"},
      {ReductionSchedule::kAfterBackward, "async"},
      {ReductionSchedule::kAfterBackwardSync, "sync"}}}};
}  // namespace

const char* to_string(DdpEventKind kind) { return kEventNames.name(kind); }

const char* to_string(ReductionSchedule schedule) { return kScheduleNames.name(schedule); }

std::string to_string(const DdpStats& stats) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(6);
  out << "DDP stats over " << stats.iterations << " synchronised iteration(s), per iteration:\n"
      << "  forward        " << stats.forward_s << " s\n"
      << "  backward       " << stats.backward_s << " s (first to last gradient ready)\n"
      << "  communication  " << stats.communication_s << " s (first launch to all reduced)\n"
      << "  overlapped     " << stats.overlapped_s << " s (communication during backward)\n"
      << "  exposed        " << stats.exposed_s << " s (waiting after backward)\n"
      << "  comm hook " << stats.comm_hook << "; " << stats.buckets.size() << " bucket(s)"
      << (stats.buckets_rebuilt ? ", rebuilt from the observed gradient order" : "") << '\n';
  for (const auto& bucket : stats.buckets) {
    out << "  bucket " << bucket.index << ": " << bucket.bytes << " bytes " << bucket.dtype << '/'
        << bucket.device << ", " << bucket.parameters.size() << " parameter(s): ";
    for (size_t k = 0; k < bucket.parameters.size(); ++k) {
      if (k == 3 && bucket.parameters.size() > 4) {
        out << ", ... " << bucket.parameters.back();
        break;
      }
      out << (k ? ", " : "") << bucket.parameters[k];
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace gradwire::ddp
