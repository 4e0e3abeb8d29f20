#include "comm/diagnostics/desync_report.h"

#include <sstream>

#include "gradwire/common/error.h"

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
  std::string text = std::string(kMagic) + "\n" + std::to_string(record.issued) + " " +
                     std::to_string(record.beats);
  for (const auto& description : record.recent) text += "\n" + one_line(description);
  return text;
}

std::optional<ProgressRecord> decode_progress(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return std::nullopt;
  if (!std::getline(in, line)) return std::nullopt;
  const auto space = line.find(' ');
  const std::string issued = line.substr(0, space);
  const std::string beats = space == std::string::npos ? "" : line.substr(space + 1);
  for (const auto& number : {issued, beats}) {
    if (number.empty() || number.size() > 19 ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
  }
  ProgressRecord record;
  record.issued = std::stoull(issued);
  record.beats = std::stoull(beats);
  while (std::getline(in, line)) record.recent.push_back(line);
  if (record.recent.size() > record.issued) return std::nullopt;
  return record;
}

DesyncFindings find_desync(const DesyncInput& input) {
  DesyncFindings findings;
  for (int r = 0; r < static_cast<int>(input.records.size()); ++r) {
    if (r == input.rank) continue;
    const auto& record = input.records[r];
    const bool silent = r < static_cast<int>(input.silent.size()) && input.silent[r];
    if (!record) {
      findings.unread.push_back(r);
    } else if (record->issued < input.sequence) {
      findings.behind.push_back(r);
    } else if (auto theirs = record->description_of(input.sequence);
               theirs && *theirs != input.description) {
      findings.different.push_back(r);
    } else if (silent) {
      findings.silent.push_back(r);
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
  auto looks_stopped = [&](int r) {
    return r < static_cast<int>(input.silent.size()) && input.silent[r];
  };
  const std::string stopped = "its progress record did not change in " +
                              format_duration(input.watched) +
                              " although it would have written a heartbeat: it looks stopped or "
                              "hung (SIGSTOP, a debugger, swapped out)";
  for (int r : findings.behind) {
    text += " " + capitalized(name_of(input, r)) + " never reached " + number + ": " +
            last_collective(*input.records[r]) + (looks_stopped(r) ? "; " + stopped : "") + ".";
  }
  for (int r : findings.silent) {
    text +=
        " " + capitalized(name_of(input, r)) + " issued " + number + " too, but " + stopped + ".";
  }
  for (int r : findings.different) {
    text += " " + capitalized(name_of(input, r)) + " called " +
            *input.records[r]->description_of(input.sequence) + " as " + number + " instead.";
  }
  if (!findings.unread.empty()) {
    text += " The progress of " + list_names(input, findings.unread) + " could not be read" +
            (input.read_problem.empty() ? "" : " (" + input.read_problem + ")") + ".";
  }
  if (!findings.behind.empty() || !findings.silent.empty()) {
    text +=
        " Look at what the rank(s) named are doing (py-spy dump, gdb -p PID): a rank that "
        "never reached a collective is stuck, stopped or busy elsewhere.";
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
