// The desync report: after a collective failed (timed out), which ranks of the communicator never
// reached it and which called a different collective in its place, from the progress records the
// ranks publish (diagnostics/progress_board.h). Pure: no store, no clock, no processes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradwire {

// How far one rank got on one communicator.
struct ProgressRecord {
  // Number of the last collective this rank issued on the communicator: 1, 2, ...; 0 for none.
  uint64_t issued = 0;
  // Descriptions of the last few collectives issued, oldest first; recent.back() is #issued, so
  // recent[i] is #(issued - recent.size() + 1 + i). Empty when issued == 0.
  std::vector<std::string> recent;
  // Writes of this record so far: it grows with every heartbeat (diagnostics/progress_board.h) even when the
  // rank issues nothing, so a record that stops changing belongs to a stopped or hung process.
  uint64_t beats = 0;

  // The description of collective #sequence, when the record still carries it.
  std::optional<std::string> description_of(uint64_t sequence) const;
};

// Text form stored in the rendezvous store: "gwprog1\n<issued> <beats>\n<description>\n...".
// Newlines inside descriptions become spaces.
std::string encode_progress(const ProgressRecord& record);
// nullopt when `text` is not a record (another job's value, truncated).
std::optional<ProgressRecord> decode_progress(const std::string& text);

// What every rank's record says about collective #sequence of the rank that failed.
struct DesyncInput {
  int rank = 0;             // the failed rank, in the communicator
  uint64_t sequence = 0;    // its collective that failed
  std::string description;  // "allreduce(sum) of 1024 Float elements"
  // One per rank of the communicator; nullopt where the record could not be read.
  std::vector<std::optional<ProgressRecord>> records;
  // One per rank of the communicator: how to name it ("rank 1 (pid 123 on node1)").
  std::vector<std::string> rank_names;
  // Why records are missing, when some are ("the store did not answer within 1.00 s").
  std::string read_problem;
  // By rank (or empty): the record did not change while it was watched for `watched`, although
  // its rank would have written a heartbeat meanwhile.
  std::vector<bool> silent;
  std::chrono::milliseconds watched{0};
};

struct DesyncFindings {
  std::vector<int> behind;     // never reached #sequence (issued fewer collectives)
  std::vector<int> different;  // issued another collective as #sequence
  std::vector<int> unread;     // no record
  std::vector<int> silent;     // reached #sequence with the same collective but looks stopped
  bool found_culprit() const { return !behind.empty() || !different.empty() || !silent.empty(); }
};

DesyncFindings find_desync(const DesyncInput& input);

// The report as sentences for an error message, e.g. "This rank's collective #7 of the
// communicator is allreduce(sum) of 1024 Float elements. Rank 1 (pid 123 on node1) never reached
// it: its last collective was #6, broadcast(root 0) of 1024 Float elements."
std::string desync_report(const DesyncInput& input);

}  // namespace gradwire
