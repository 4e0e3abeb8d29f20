// The client's calls on the timeline (client_timeline.h).
#include "client_timeline.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <string>

#include "rpc/status.h"

namespace gradwire::ps {

void CallBase::timeline_done() {
  const CallSummary what = summary();
  // "lookup server 3", without snprintf's cost (issue 40 measured it on every call).
  char name[48];
  const std::string_view kind(what.name);
  constexpr std::string_view kServer = " server ";
  char* end = std::copy(kind.begin(), kind.end(), name);
  end = std::copy(kServer.begin(), kServer.end(), end);
  end = std::to_chars(end, name + sizeof name, server).ptr;
  const std::string_view span_name(name, static_cast<size_t>(end - name));
  const int64_t start_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count();
  const timeline::Args begin_args = {
      {"server", server},
      {"table", what.table},
      {"bytes_sent", static_cast<int64_t>(request_message().ByteSizeLong())},
      {"ids", what.ids},
      {"parts", what.parts},
      {"transport", transport != nullptr ? transport->label() : "grpc"}};
  if (status.ok()) {
    timeline::async_span(
        span_name, "ps", start_ns, timeline::now_ns(), begin_args,
        {{"bytes_received", static_cast<int64_t>(response_message()->ByteSizeLong())}});
    return;
  }
  const std::string code = rpc::status_code_name(status.error_code());
  timeline::async_span(span_name, "ps", start_ns, timeline::now_ns(), begin_args,
                       {{"status", code}});
  // Across the process: a failure is what one looks for first.
  timeline::instant("ps call failed", "ps",
                    {{"address", address},
                     {"method", what.method},
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
