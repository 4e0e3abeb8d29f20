// Elastic rendezvous through the job store (elastic-internal). Keys, all under "elastic/":
//   current                 the last generation that closed
//   g<G>/arrived            how many workers arrived at generation G (their arrival index + 1)
//   g<G>/member/<i>         arrival i's record: "<worker id>\t<host identity>\t<commits>"
//   g<G>/closed             how many arrivals are G's members (set once, by compare-and-set)
//   g<G>/world/...          the generation's communicator's own rendezvous
//   done                    the generation whose training returned: the job is over
//   exited/<worker id>      set by the launcher when that worker exited ("code 1", "signal 9")
//   agent/<node>            a launcher's heartbeat counter, bumped every agent_beat
// A worker's id is "<node>.<slot>.<incarnation>": its launcher's node, its place there, and how
// many workers held that place before it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gradwire/comm/job_store.h"
#include "gradwire/elastic/elastic.h"

namespace gradwire::elastic::detail {

// Pure: what one waiting arrival of generation G sees.
struct JoinView {
  std::vector<std::string> arrivals;  // ids by arrival index
  std::vector<std::string> previous;  // G-1's members; empty for the first generation
  std::set<std::string> gone;         // exited, or their launcher stopped beating
  std::string me;
  int min_workers = 1;
  int max_workers = 1 << 30;
  int initial_workers = 1;
  bool timed_out = false;
};
enum class JoinDecision { kWait, kClose, kFail };
// Close when max_workers arrived; the first generation when initial_workers arrived; a later one
// when every previous member arrived or is gone and min_workers arrived. Only a previous member
// (or anyone, once every previous member is gone) may close: a newcomer must not start a second
// job beside members that are still training. After the timeout: close with at least
// min_workers (by an eligible arrival), else fail.
JoinDecision decide(const JoinView& view);

// "0.1.2" -> "0"
std::string node_of(const std::string& worker_id);

// The store prefix of generation `number`'s communicator ("elastic/g<G>/world").
std::string world_prefix(int64_t number);

// The previous members that neither arrived nor are gone, for messages.
std::vector<std::string> missing(const JoinView& view);

// One arrival's record: "<worker id>\t<host identity>\t<commits>".
struct Record {
  std::string id;
  std::string host;
  int64_t commits = 0;
};

struct MembershipOptions {
  std::string worker_id;
  std::string host;  // host identity: who may share memory
  int min_workers = 1;
  int max_workers = 1 << 30;
  int initial_workers = 1;
  std::chrono::milliseconds timeout{300000};
  std::chrono::milliseconds agent_silence{3000};
  bool verbose = true;
};

class Membership {
 public:
  Membership(JobStore& store, MembershipOptions options);

  // The generation a worker starting now joins: the one after the last closed.
  int64_t first_generation();
  // Arrives at generation `number` (or, too late for it, at the following ones) and waits until
  // it closes with this worker as a member; nullopt when the job finished meanwhile (a member
  // returned from training: mark_done). Throws TimeoutError naming who is missing.
  std::optional<Generation> join(int64_t number, int64_t commits);
  // Generation `number` finished the training: waiting workers need not join.
  void mark_done(int64_t number);
  // Whether workers wait to join the generation after `number`.
  bool joiners_waiting(int64_t number);
  // Those of `ids` that are gone: their exit marked, or their launcher silent for agent_silence
  // (counted from the first call that saw its heartbeat).
  std::set<std::string> gone(const std::vector<std::string>& ids);

  JobStore& store() { return store_; }

 private:
  std::vector<std::string> members_of(int64_t number);
  Generation generation_from(int64_t number, int count, const std::string& me,
                             std::vector<std::optional<Record>> known);

  JobStore& store_;
  MembershipOptions options_;
  // Agent heartbeats: node -> (last value seen, when it last changed).
  struct Beat {
    int64_t value = -1;
    std::chrono::steady_clock::time_point changed;
  };
  std::map<std::string, Beat> beats_;
};

}  // namespace gradwire::elastic::detail
