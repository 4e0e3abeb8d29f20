// The client's calls on the timeline (internal to src/ps/client; docs/timeline.md, category
// "ps"): each call to a server is an async span from its start to its answer, named after what it
// carries and the server ("lookup server 1"), so that the calls to several servers in flight at
// once overlap on tracks of their own; the Client's methods are spans on the calling thread
// (client_data.cpp, client_batches.cpp, client.cpp). A failed call adds the instant "ps call
// failed", a retried one "ps call retry".
//
// Cost: the callers test timeline::enabled() first; nothing here runs when no timeline does.
// Thread safety: a call's span belongs to the thread that owns its CallQueue.
#pragma once

#include <chrono>

#include "transport.h"

namespace gradwire::ps {

// How `call` (started) travels, as the servers' metrics name it: "channel" or "grpc".
const char* call_transport_label(const CallBase& call);

// Begins `call`'s span (started: address, transport and server set). Only with a timeline.
void begin_call_span(CallBase& call);

// The instant "ps call retry": `failed` (a call to server `server`) is sent again after `delay`,
// retry number `retry`. Only with a timeline.
void record_call_retry(const CallBase& failed, int retry, std::chrono::milliseconds delay);

}  // namespace gradwire::ps
