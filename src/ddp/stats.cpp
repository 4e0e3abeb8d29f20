#include <iomanip>
#include <sstream>

#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

const char* to_string(DdpEventKind kind) {
  switch (kind) {
    case DdpEventKind::kGradReady:
      return "grad_ready";
    case DdpEventKind::kBucketLaunched:
      return "bucket_launched";
    case DdpEventKind::kBucketReduced:
      return "bucket_reduced";
    case DdpEventKind::kBackwardEnd:
      return "backward_end";
  }
  return "unknown";
}

const char* to_string(ReductionSchedule schedule) {
  switch (schedule) {
    case ReductionSchedule::kOverlapped:
      return "overlapped";
    case ReductionSchedule::kAfterBackward:
      return "async";
    case ReductionSchedule::kAfterBackwardSync:
      return "sync";
  }
  return "unknown";
}

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
