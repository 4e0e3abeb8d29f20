// What a backend's error text says (Gloo, NCCL, shm, c10d's TCPStore): the pieces every layer of
// comm reads the same way when it turns a backend's exception into gradwire's (docs/errors.md).
// Pure.
#pragma once

#include <string>
#include <string_view>

namespace gradwire {

// The text's first line, without c10's "Exception raised from" trace.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Whether a backend's message says it timed out ("Socket Timeout", "Timed out waiting ...").
inline bool looks_like_timeout(std::string_view text) {
  for (const char* needle : {"timed out", "Timed out", "Timeout", "timeout"}) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

// Whether a backend's message says its peer went away (a closed or reset connection, an aborted
// NCCL communicator, a rank that left the shm backend: Note [withdrawn rank]).
inline bool looks_like_peer_loss(std::string_view text) {
  for (const char* needle :
       {"Connection closed", "Connection reset", "Broken pipe", "Connection refused", "Read error",
        "Write error", "NCCL communicator was aborted", ") left it while rank"}) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace gradwire
