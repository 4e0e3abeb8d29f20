#include "membership.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>

#include "gradwire/common/error.h"

namespace gradwire::elastic::detail {
namespace {

std::string key(int64_t generation, const std::string& rest) {
  return "elastic/g" + std::to_string(generation) + "/" + rest;
}

Record parse_record(const std::string& text) {
  Record record;
  std::istringstream in(text);
  std::string commits;
  std::getline(in, record.id, '\t');
  std::getline(in, record.host, '\t');
  std::getline(in, commits);
  record.commits = commits.empty() ? 0 : std::stoll(commits);
  return record;
}

// Reads the records of generation `number`'s first `count` arrivals that `records` does not hold
// yet (a record never changes once written, so each is read once); one still being written stays
// empty.
void read_records(JobStore& store, int64_t number, int64_t count,
                  std::vector<std::optional<Record>>& records) {
  records.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i]) continue;
    if (const std::optional<std::string> text =
            store.get(key(number, "member/" + std::to_string(i)))) {
      records[i] = parse_record(*text);
    }
  }
}

std::string join_ids(const std::vector<std::string>& ids) {
  std::string text;
  for (const std::string& id : ids) text += (text.empty() ? "" : ", ") + id;
  return text.empty() ? "none" : text;
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

std::string node_of(const std::string& worker_id) {
  return worker_id.substr(0, worker_id.find('.'));
}

std::string world_prefix(int64_t number) { return key(number, "world"); }

std::vector<std::string> missing(const JoinView& view) {
  std::vector<std::string> absent;
  for (const std::string& id : view.previous) {
    if (!contains(view.arrivals, id) && view.gone.count(id) == 0) absent.push_back(id);
  }
  return absent;
}

JoinDecision decide(const JoinView& view) {
  const int arrived = static_cast<int>(view.arrivals.size());
  if (arrived >= view.max_workers) return JoinDecision::kClose;
  const bool previous_gone =
      std::all_of(view.previous.begin(), view.previous.end(),
                  [&](const std::string& id) { return view.gone.count(id) != 0; });
  const bool eligible = view.previous.empty() || contains(view.previous, view.me) || previous_gone;
  if (view.previous.empty()) {
    if (arrived >= view.initial_workers) return JoinDecision::kClose;
  } else if (eligible && missing(view).empty() && arrived >= view.min_workers) {
    return JoinDecision::kClose;
  }
  if (!view.timed_out) return JoinDecision::kWait;
  if (eligible && arrived >= view.min_workers) return JoinDecision::kClose;
  return JoinDecision::kFail;
}

Membership::Membership(JobStore& store, MembershipOptions options)
    : store_(store), options_(std::move(options)) {}

int64_t Membership::first_generation() {
  const std::optional<std::string> current = store_.get("elastic/current");
  return current ? std::stoll(*current) + 1 : 0;
}

bool Membership::joiners_waiting(int64_t number) {
  return store_.add(key(number + 1, "arrived"), 0) > 0;
}

std::vector<std::string> Membership::members_of(int64_t number) {
  std::vector<std::string> ids;
  if (number < 0) return ids;
  const std::optional<std::string> closed = store_.get(key(number, "closed"));
  if (!closed) return ids;
  std::vector<std::optional<Record>> records;
  read_records(store_, number, std::stoi(*closed), records);
  for (const auto& record : records) {
    if (record) ids.push_back(record->id);
  }
  return ids;
}

std::set<std::string> Membership::gone(const std::vector<std::string>& ids) {
  std::set<std::string> result;
  const auto now = std::chrono::steady_clock::now();
  for (const std::string& id : ids) {
    if (store_.get("elastic/exited/" + id)) {
      result.insert(id);
      continue;
    }
    const std::string node = node_of(id);
    const std::optional<std::string> beat = store_.get("elastic/agent/" + node);
    if (!beat) continue;  // no launcher beats for it: only its exit mark can tell
    const int64_t value = std::stoll(*beat);
    Beat& seen = beats_[node];
    if (seen.value != value) {
      seen.value = value;
      seen.changed = now;
    } else if (now - seen.changed >= options_.agent_silence) {
      result.insert(id);
    }
  }
  return result;
}

// `known`: the records read while waiting (the members are its first `count`).
Generation Membership::generation_from(int64_t number, int count, const std::string& me,
                                       std::vector<std::optional<Record>> known) {
  read_records(store_, number, count, known);
  std::vector<Record> records;
  for (int i = 0; i < count; ++i) {
    if (!known[i]) {
      throw InternalError("gradwire elastic: generation " + std::to_string(number) +
                          " closed with " + std::to_string(count) + " members but member " +
                          std::to_string(i) + " wrote no record");
    }
    records.push_back(*known[i]);
  }
  // Rank 0 is a member with the latest commit: the state is synced from it.
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return a.commits != b.commits ? a.commits > b.commits : a.id < b.id;
  });
  Generation generation;
  generation.number = number;
  generation.size = count;
  std::string my_host;
  for (int r = 0; r < count; ++r) {
    generation.members.push_back(records[r].id);
    if (records[r].id == me) {
      generation.rank = r;
      my_host = records[r].host;
    }
  }
  generation.local_size = 0;
  for (int r = 0; r < count; ++r) {
    if (records[r].host != my_host) continue;
    if (r < generation.rank) ++generation.local_rank;
    ++generation.local_size;
  }
  return generation;
}

void Membership::mark_done(int64_t number) { store_.set("elastic/done", std::to_string(number)); }

std::optional<Generation> Membership::join(int64_t number, int64_t commits) {
  const auto start = std::chrono::steady_clock::now();
  const std::string& me = options_.worker_id;
  for (;; ++number) {
    const int64_t index = store_.add(key(number, "arrived"), 1) - 1;
    store_.set(key(number, "member/" + std::to_string(index)),
               me + "\t" + options_.host + "\t" + std::to_string(commits));
    const std::vector<std::string> previous = members_of(number - 1);
    std::vector<std::optional<Record>> records;  // the arrivals', read once each
    std::set<std::string> gone_members;          // only grows: exited, or their launcher silent
    bool late = false;
    for (;;) {
      if (const std::optional<std::string> closed = store_.get(key(number, "closed"))) {
        const int count = std::stoi(*closed);
        if (index < count) {
          Generation generation = generation_from(number, count, me, std::move(records));
          if (options_.verbose) {
            std::cerr << "gradwire elastic: " << me << " is rank " << generation.rank << " of "
                      << count << " in generation " << number << " ("
                      << join_ids(generation.members) << ")" << std::endl;
          }
          return generation;
        }
        late = true;  // closed without this arrival: the next generation takes it
        break;
      }
      if (const std::optional<std::string> done = store_.get("elastic/done")) {
        if (options_.verbose) {
          std::cerr << "gradwire elastic: " << me << " arrived after the job finished (generation "
                    << *done << ")" << std::endl;
        }
        return std::nullopt;
      }
      JoinView view;
      read_records(store_, number, store_.add(key(number, "arrived"), 0), records);
      for (const auto& record : records) view.arrivals.push_back(record ? record->id : "");
      view.previous = previous;
      // Only the previous members that neither arrived nor are known gone are looked up.
      std::vector<std::string> unaccounted;
      for (const std::string& id : previous) {
        if (gone_members.count(id) == 0 && !contains(view.arrivals, id)) unaccounted.push_back(id);
      }
      const std::set<std::string> newly_gone = gone(unaccounted);
      gone_members.insert(newly_gone.begin(), newly_gone.end());
      view.gone = gone_members;
      view.me = me;
      view.min_workers = options_.min_workers;
      view.max_workers = options_.max_workers;
      view.initial_workers = options_.initial_workers;
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      view.timed_out = waited >= options_.timeout;
      // Records still being written count once they are there.
      if (std::find(view.arrivals.begin(), view.arrivals.end(), "") != view.arrivals.end() &&
          !view.timed_out) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      switch (decide(view)) {
        case JoinDecision::kClose: {
          const int count =
              std::min<int>(static_cast<int>(view.arrivals.size()), options_.max_workers);
          if (store_.compare_set(key(number, "closed"), "", std::to_string(count)) ==
              std::to_string(count)) {
            store_.set("elastic/current", std::to_string(number));
          }
          continue;  // read back what closed it
        }
        case JoinDecision::kFail:
          throw TimeoutError(
              "gradwire elastic: worker " + me + " waited " + format_duration(waited) +
              " for generation " + std::to_string(number) + ": " +
              std::to_string(view.arrivals.size()) + " worker(s) arrived (" +
              join_ids(view.arrivals) + "), at least " + std::to_string(options_.min_workers) +
              " needed" +
              (missing(view).empty()
                   ? std::string()
                   : "; members of generation " + std::to_string(number - 1) +
                         " that neither arrived nor exited: " + join_ids(missing(view))) +
              ". Start more workers, or lower the minimum (--nnodes MIN:MAX, --min-workers)");
        case JoinDecision::kWait:
          break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (late && options_.verbose) {
      std::cerr << "gradwire elastic: " << me << " arrived after generation " << number
                << " closed; waiting for the next" << std::endl;
    }
  }
}

}  // namespace gradwire::elastic::detail
