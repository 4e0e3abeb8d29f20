#include "op_context.h"

#include <thread>

#include "gradwire/common/error.h"

namespace gradwire {

std::string format_ranks(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

namespace {
bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

// The backend's first line, without c10's "Exception raised from" trace.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

bool looks_like_timeout(const std::string& text) {
  return contains(text, "timed out") || contains(text, "Timed out") || contains(text, "Timeout") ||
         contains(text, "timeout");
}

bool looks_like_peer_loss(const std::string& text) {
  return contains(text, "Connection closed") || contains(text, "Connection reset") ||
         contains(text, "Broken pipe") || contains(text, "Connection refused") ||
         contains(text, "Read error") || contains(text, "Write error") ||
         contains(text, "NCCL communicator was aborted");
}
}  // namespace

std::exception_ptr translate_failure(const std::exception& backend_error, const OpContext& op) {
  const std::string said = first_line(backend_error.what());
  std::vector<int> dead;
  if (op.peers) {
    // A peer's sockets close a moment before its process is reaped: look twice.
    for (int attempt = 0; attempt < 5 && dead.empty(); ++attempt) {
      dead = op.peers->dead_local_ranks(op.world_ranks);
      if (dead.empty() && looks_like_peer_loss(said)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
      } else {
        break;
      }
    }
  }
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - op.issued);
  const std::string head = "gradwire: " + op.description + " over ranks " +
                           format_ranks(op.world_ranks) + " failed after " +
                           format_duration(waited);
  if (!dead.empty() || looks_like_peer_loss(said)) {
    std::string who;
    for (int rank : dead) who += (who.empty() ? "" : ", ") + op.peers->describe(rank);
    std::string text = head + ": peer lost";
    text += dead.empty() ? " (a peer closed its connection; it may have exited or crashed)"
                         : ": " + who + (dead.size() == 1 ? " is" : " are") + " no longer running";
    text += ". Backend said: " + said + ". Check the lost rank's output for why it stopped.";
    return std::make_exception_ptr(PeerLostError(text, dead));
  }
  if (looks_like_timeout(said)) {
    return std::make_exception_ptr(TimeoutError(
        head + ": timed out (limit " + format_duration(op.default_timeout) +
        "). A rank may be stuck or calling a different collective. Backend said: " + said +
        ". Raise GRADWIRE_TIMEOUT if the work is legitimately slow."));
  }
  return std::make_exception_ptr(BackendError(head + ": " + said));
}

}  // namespace gradwire
