// The client's calls on the timeline (client_timeline.h).
#include "client_timeline.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <string>

#include "rpc/status.h"

namespace gradwire::ps {

const char* call_transport_label(const CallBase& call) {
  return dynamic_cast<const ChannelTransport*>(call.transport.get()) != nullptr ? "channel"
                                                                                : "grpc";
}

void begin_call_span(CallBase& call) {
  const CallSummary what = call.summary();
  // "lookup server 3", without snprintf's cost (issue 40 measured it on every call).
  char name[48];
  const std::string_view kind(what.name);
  constexpr std::string_view kServer = " server ";
  char* end = std::copy(kind.begin(), kind.end(), name);
  end = std::copy(kServer.begin(), kServer.end(), end);
  end = std::to_chars(end, name + sizeof name, call.server).ptr;
  call.span = timeline::AsyncSpan(
      std::string_view(name, static_cast<size_t>(end - name)), "ps",
      {{"server", call.server},
       {"table", what.table},
       {"bytes_sent", static_cast<int64_t>(call.request_message().ByteSizeLong())},
       {"ids", what.ids},
       {"parts", what.parts},
       {"transport", call_transport_label(call)}});
}

void CallBase::timeline_done() {
  if (status.ok()) {
    span.end({{"bytes_received", static_cast<int64_t>(response_message()->ByteSizeLong())}});
    return;
  }
  const std::string code = rpc::status_code_name(status.error_code());
  span.end({{"status", code}});
  // Across the process: a failure is what one looks for first.
  timeline::instant("ps call failed", "ps",
                    {{"address", address},
                     {"method", summary().method},
                     {"waited_ms", static_cast<int64_t>(waited().count())},
                     {"status", code},
                     {"server", server},
                     {"message", status.error_message()}},
                    timeline::Scope::kProcess);
}

void record_call_retry(const CallBase& failed, int retry, std::chrono::milliseconds delay) {
  timeline::instant("ps call retry", "ps",
                    {{"address", failed.address},
                     {"method", failed.summary().method},
                     {"retry", retry},
                     {"delay_ms", static_cast<int64_t>(delay.count())},
                     {"status", rpc::status_code_name(failed.status.error_code())},
                     {"server", failed.server}},
                    timeline::Scope::kProcess);
}

}  // namespace gradwire::ps
