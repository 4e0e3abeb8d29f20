// What an operation was (name, ranks, sizes) and how to diagnose its failure: the pieces every
// error message about a collective needs.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "comm/diagnostics/peer_table.h"
#include "comm/diagnostics/progress_board.h"

namespace gradwire {

struct OpContext {
  std::string description;       // "allreduce(sum) of 1024 float elements"
  std::vector<int> world_ranks;  // members involved, as world ranks
  std::shared_ptr<const PeerTable> peers;
  std::chrono::milliseconds default_timeout{0};
  std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now();
  // Collectives only: the communicator's progress board and this collective's number on it,
  // for the desync report. Null / 0 otherwise (point to point, creating the backend).
  std::shared_ptr<const ProgressBoard> progress;
  uint64_t sequence = 0;
  std::string algorithm;  // the backend that runs it ("gloo", "shm", ...); empty: not said
};

// Builds the gradwire error (TimeoutError, PeerLostError or BackendError) for a backend failure
// of `op`, naming the operation, the ranks, the time since it was issued and any dead peers. For
// a collective that timed out it adds the desync report (diagnostics/desync_report.h): which ranks never
// reached it and what each did last, or which called a different collective; a BackendError
// gets the report only when it names such a rank. Reading the peers' progress is bounded
// (ProgressBoardOptions::read_budget and the board's store timeout).
std::exception_ptr translate_failure(const std::exception& backend_error, const OpContext& op);

// "[0, 1, 2]"
std::string format_ranks(const std::vector<int>& ranks);

}  // namespace gradwire
