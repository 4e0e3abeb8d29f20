// The client's calls on the timeline (internal to src/ps/client; docs/timeline.md, category
// "ps"): each call to a server is an async span from its start to its answer, named after what it
// carries and the server ("lookup server 1"), so that the calls to several servers in flight at
// once overlap on tracks of their own; the Client's methods are spans on the calling thread
// (client_data.cpp, client_batches.cpp, client.cpp). A failed call adds the instant "ps call
// failed", a retried one "ps call retry". A call's span is recorded whole when the call is done
// (CallBase::mark_done: timeline::async_span), so that starting a call costs nothing more.
//
// Cost: the callers test timeline::enabled() first; nothing here runs when no timeline does.
// Thread safety: a call's span belongs to the thread that owns its CallQueue.
#pragma once

#include <chrono>

#include "transport.h"

namespace gradwire::ps {

// The instant "ps call retry": `failed` (a call to server `server`) is sent again after `delay`,
// retry number `retry`. Only with a timeline.
void record_call_retry(const CallBase& failed, int retry, std::chrono::milliseconds delay);

}  // namespace gradwire::ps
