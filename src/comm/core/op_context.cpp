#include "comm/core/op_context.h"

#include <thread>

#include "comm/diagnostics/backend_text.h"
#include "gradwire/common/error.h"

namespace gradwire {

std::string format_ranks(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

namespace {

// How the desync report names rank `rank` of the communicator.
std::string rank_name(const OpContext& op, int rank) {
  const int world_rank = op.world_ranks.at(rank);
  const std::string world =
      op.peers ? op.peers->describe(world_rank) : "rank " + std::to_string(world_rank);
  return rank == world_rank ? world : "rank " + std::to_string(rank) + " (world " + world + ")";
}

// Everyone's progress as the board has it. With `watch`, records are read twice, a silence window
// apart: a record whose heartbeat did not advance belongs to a stopped or hung rank.
DesyncInput desync_input(const OpContext& op, bool watch) {
  const ProgressBoard& board = *op.progress;
  DesyncInput input;
  input.rank = board.rank();
  input.sequence = op.sequence;
  input.description = op.description;
  auto first = board.read_all();
  input.records = std::move(first.records);
  input.read_problem = std::move(first.problem);
  for (int r = 0; r < board.size(); ++r) input.rank_names.push_back(rank_name(op, r));
  bool any_read = false;
  for (int r = 0; r < board.size(); ++r) any_read |= r != board.rank() && input.records[r];
  if (watch && any_read) {
    std::this_thread::sleep_for(board.silence_window());
    const auto second = board.read_all();
    input.watched = board.silence_window();
    input.silent.resize(board.size(), false);
    for (int r = 0; r < board.size(); ++r) {
      input.silent[r] = r != board.rank() && input.records[r] && second.records[r] &&
                        second.records[r]->beats == input.records[r]->beats;
    }
  }
  return input;
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
  const bool reportable = op.progress && op.sequence > 0 &&
                          static_cast<int>(op.world_ranks.size()) == op.progress->size();
  // ". Rank r ... called X as #n instead" when the board shows a rank at a different collective.
  auto mismatch = [&]() -> std::string {
    if (!reportable) return "";
    // Backends notice some mismatches (shm: "collectives differ") within microseconds, before
    // the peers' records are written: give their publishers time to catch up.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const DesyncInput input = desync_input(op, /*watch=*/false);
    return find_desync(input).different.empty() ? "" : ". " + desync_report(input);
  };
  if (!dead.empty() || looks_like_peer_loss(said)) {
    std::string who;
    for (int rank : dead) who += (who.empty() ? "" : ", ") + op.peers->describe(rank);
    std::string text = head + ": peer lost";
    text += dead.empty() ? " (a peer closed its connection; it may have exited or crashed)"
                         : ": " + who + (dead.size() == 1 ? " is" : " are") + " no longer running";
    // A live peer closes its connections when its own operation failed, e.g. timed out in a
    // collective this rank never called: name that mismatch when the board shows it.
    if (dead.empty()) text += mismatch();
    text += ". Backend said: " + said + ". Check the lost rank's output for why it stopped.";
    return std::make_exception_ptr(PeerLostError(text, dead));
  }
  if (looks_like_timeout(said)) {
    const std::string diagnosis = reportable ? desync_report(desync_input(op, /*watch=*/true))
                                             : "A rank may be stuck or calling a different "
                                               "collective.";
    return std::make_exception_ptr(TimeoutError(
        head + ": timed out (limit " + format_duration(op.default_timeout) + "). " + diagnosis +
        " Backend said: " + said + ". Raise GRADWIRE_TIMEOUT if the work is legitimately slow."));
  }
  return std::make_exception_ptr(BackendError(head + ": " + said + mismatch()));
}

}  // namespace gradwire
