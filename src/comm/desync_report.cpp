#include "desync_report.h"

#include <sstream>

namespace gradwire {

namespace {

constexpr const char* kMagic = "gwprog1";

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string collective(uint64_t sequence) { return "#" + std::to_string(sequence); }

std::string last_collective(const ProgressRecord& record) {
  if (record.issued == 0) return "it has issued no collective on this communicator yet";
  const auto description = record.description_of(record.issued);
  return "its last collective was " + collective(record.issued) +
         (description ? ", " + *description : "");
}

std::string name_of(const DesyncInput& input, int rank) {
  if (rank >= 0 && rank < static_cast<int>(input.rank_names.size())) return input.rank_names[rank];
  return "rank " + std::to_string(rank);
}

// A name at the start of a sentence.
std::string capitalized(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

std::string list_names(const DesyncInput& input, const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i == 0 ? "" : (i + 1 == ranks.size() ? " and " : ", ")) + name_of(input, ranks[i]);
  }
  return text;
}

}  // namespace

std::optional<std::string> ProgressRecord::description_of(uint64_t sequence) const {
  if (sequence == 0 || sequence > issued || issued - sequence >= recent.size()) return std::nullopt;
  return recent[recent.size() - 1 - (issued - sequence)];
}

std::string encode_progress(const ProgressRecord& record) {
  std::string text = std::string(kMagic) + "\n" + std::to_string(record.issued);
  for (const auto& description : record.recent) text += "\n" + one_line(description);
  return text;
}

std::optional<ProgressRecord> decode_progress(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return std::nullopt;
  if (!std::getline(in, line) || line.empty() ||
      line.find_first_not_of("0123456789") != std::string::npos || line.size() > 19) {
    return std::nullopt;
  }
  ProgressRecord record;
  record.issued = std::stoull(line);
  while (std::getline(in, line)) record.recent.push_back(line);
  if (record.recent.size() > record.issued) return std::nullopt;
  return record;
}

DesyncFindings find_desync(const DesyncInput& input) {
  DesyncFindings findings;
  for (int r = 0; r < static_cast<int>(input.records.size()); ++r) {
    if (r == input.rank) continue;
    const auto& record = input.records[r];
    if (!record) {
      findings.unread.push_back(r);
    } else if (record->issued < input.sequence) {
      findings.behind.push_back(r);
    } else if (auto theirs = record->description_of(input.sequence);
               theirs && *theirs != input.description) {
      findings.different.push_back(r);
    }
    // Otherwise it issued the same collective (or is too far ahead to tell): not a culprit.
  }
  return findings;
}

std::string desync_report(const DesyncInput& input) {
  const DesyncFindings findings = find_desync(input);
  const std::string number = collective(input.sequence);
  std::string text = "Desync report: this rank (" + std::to_string(input.rank) + ") is at " +
                     number + " of the communicator, " + input.description + ".";
  for (int r : findings.behind) {
    text += " " + capitalized(name_of(input, r)) + " never reached " + number + ": " +
            last_collective(*input.records[r]) + ".";
  }
  for (int r : findings.different) {
    text += " " + capitalized(name_of(input, r)) + " called " +
            *input.records[r]->description_of(input.sequence) + " as " + number + " instead.";
  }
  if (!findings.unread.empty()) {
    text += " The progress of " + list_names(input, findings.unread) + " could not be read" +
            (input.read_problem.empty() ? "" : " (" + input.read_problem + ")") + ".";
  }
  if (!findings.behind.empty()) {
    text +=
        " A rank that never reached a collective is stuck, stopped or busy elsewhere: look at "
        "what it is doing (py-spy dump, gdb -p PID).";
  }
  if (!findings.different.empty()) {
    text +=
        " Every rank must issue the same collectives in the same order: compare the code "
        "paths that issue them.";
  }
  if (!findings.found_culprit() && findings.unread.empty()) {
    text += " Every rank issued " + number +
            " as the same collective, so none is behind or out of step: one may be stopped or "
            "stuck inside it, or the transport is blocked.";
  }
  return text;
}

}  // namespace gradwire
