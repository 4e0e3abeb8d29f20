// Process liveness, the one check used by every layer that watches a local peer.
#pragma once

#include <cstdint>

namespace gradwire {

// Whether process `pid` on this host has exited (gone, or a zombie not yet reaped). False for
// pid <= 0 and for a live process, including one this process may not signal. Thread safe;
// reads /proc.
bool process_gone(int64_t pid);

}  // namespace gradwire
