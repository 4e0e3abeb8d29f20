// The timeline: a trace of what this process spent its time on, written in the Chrome trace event
// format that Perfetto (ui.perfetto.dev) and chrome://tracing open (docs/timeline.md).
//
// One process writes one file; `gradwire-trace merge` joins the files of a job into one trace,
// one process track per rank and server, and shifts each file by its clock offset. Recording is
// process-wide (a trace is a process's, as its file is): start() or start_from_env() once, then
// any thread records spans, instants and counters; stop() (also run at exit) closes the file.
//
// Cost: when no timeline runs, each recording call is one relaxed atomic load and a branch
// (enabled(), inline); a Span or AsyncSpan does nothing more. The args of a call are built
// before it (a few stores): where even that matters, test enabled() first. When one runs, an event
// is appended to the calling thread's buffer as a compact record of about 110 bytes (no lock, no
// allocation but a thread's first event, which allocates its buffer); a full buffer (a chunk) is
// handed to the process's timeline writer, a low-priority thread that writes the chunks' bytes
// to the file as they are, and every second also the records buffered since its last write;
// flush() writes everything now. So a process killed by SIGKILL leaves a file that ends with the
// events written before (about the last second's lost), which merge reads. A process file is
// binary (docs/timeline.md, The files); `gradwire-trace merge` turns files into one Chrome trace.
//
// Strings: an event's name and string args are copied (up to kTextBytes in all, cut beyond);
// categories and arg keys are not: pass string literals (or strings that outlive the process,
// and never change). The file names them once each, by their first kTextBytes / 2 bytes.
//
// Thread safety: every function may be called from any thread. A Span belongs to the thread that
// made it; an AsyncSpan may be ended on another thread (e.g. a bucket's allreduce, launched in an
// autograd hook and waited for by the training thread), by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gradwire {
class EnvMap;
}

namespace gradwire::timeline {

// The bytes an event keeps for its copied name and string args.
inline constexpr size_t kTextBytes = 160;
// The most args an event carries (more are dropped); an async_span's begin and end args together.
inline constexpr size_t kMaxArgs = 7;
// The bytes of one event being built (a Span holds one; its record in a buffer takes less).
inline constexpr size_t kEventBytes = 384;

// One key and value of an event's "args" (bytes, algorithm, table, transport, ...).
struct Arg {
  enum class Kind : uint8_t { kInt, kUint, kDouble, kBool, kText };

  template <typename T,
            std::enable_if_t<
                std::is_integral_v<T> && std::is_signed_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Arg(const char* key_, T value) : key(key_), kind(Kind::kInt), int_value(value) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T> && std::is_unsigned_v<T> &&
                                             !std::is_same_v<T, bool>,
                                         int> = 0>
  Arg(const char* key_, T value) : key(key_), kind(Kind::kUint), uint_value(value) {}
  Arg(const char* key_, double value) : key(key_), kind(Kind::kDouble), double_value(value) {}
  Arg(const char* key_, bool value) : key(key_), kind(Kind::kBool), int_value(value ? 1 : 0) {}
  Arg(const char* key_, std::string_view value) : key(key_), kind(Kind::kText), text(value) {}
  Arg(const char* key_, const char* value) : Arg(key_, std::string_view(value)) {}
  Arg(const char* key_, const std::string& value) : Arg(key_, std::string_view(value)) {}

  const char* key;  // a literal: not copied
  Kind kind;
  union {
    int64_t int_value = 0;
    uint64_t uint_value;
    double double_value;
  };
  std::string_view text;  // kText: copied when the event is recorded
};

using Args = std::initializer_list<Arg>;

enum class Scope : char;

namespace detail {
// Whether a timeline runs; read on every recording call (relaxed).
extern std::atomic<bool> g_enabled;
// The recording calls behind the inline checks below.
void record_complete(std::string_view name, const char* category, int64_t start_ns, int64_t end_ns,
                     Args args);
void record_instant(std::string_view name, const char* category, Args args, Scope scope);
void record_counter(std::string_view name, Args values);
void record_async(std::string_view name, const char* category, int64_t start_ns, int64_t end_ns,
                  Args begin_args, Args end_args);
}  // namespace detail

// Whether a timeline runs in this process: the one branch of a call when none does.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// The timeline's clock (steady, CLOCK_MONOTONIC) in nanoseconds. Events are stamped with it.
int64_t now_ns();

// --- Starting and stopping -------------------------------------------------------------------

struct StartOptions {
  // Bytes a thread buffers before handing them to the writer as one chunk: about 1200 events'
  // records. At least one record's most (328 bytes).
  size_t chunk_bytes = 128 * 1024;
  // The writer also writes the records buffered in every thread's chunk this often (at least 1 ms).
  int64_t flush_interval_ns = 1'000'000'000;
  // Chunks handed to the writer and not yet written beyond which a thread that fills its chunk
  // writes it itself (blocking file I/O on that thread): memory stays bounded and no event is
  // lost when the writer, which runs at the lowest priority, falls behind. The writer is woken
  // when half of them wait (and every flush interval).
  size_t max_pending_chunks = 16;
  // 0: record throughout. Otherwise record only in half of the windows of this many nanoseconds
  // of the job's clock (those window_records(job_clock_ns() / alternate_ns) picks, a hash of the
  // window's index: no periodic work of the machine falls on one side), so that one run has steps
  // with the timeline and steps without it, interleaved, and measures the timeline's cost side by
  // side (GRADWIRE_TIMELINE_ALTERNATE_MS; gradwire-bench hybrid's "timeline alternating" figures;
  // docs/timeline.md, The cost). Processes of one job agree on the windows: they share its clock.
  int64_t alternate_ns = 0;
};

// Starts the timeline of this process, writing the process file `path` (binary, docs/timeline.md
// The files: read by gradwire-trace merge; created or truncated; its directory is
// created) with the process track named `process_label` ("rank 3", "ps server 1", "bench").
// A timeline already running is stopped first. Throws gradwire::Error naming the path when the
// file cannot be created. Registers stop() to run at exit.
void start(const std::string& path, const std::string& process_label, StartOptions options = {});

// The file of one process under GRADWIRE_TIMELINE=`timeline_path` (pure): the folder
// "<timeline_path>.d" holds one file per process, named after its label: "rank 3" ->
// "<timeline_path>.d/rank-3.gwtl", "ps server 1" -> "server-1.gwtl", "ps servers 0-3" ->
// "servers-0-3.gwtl", other labels with characters outside [A-Za-z0-9_.-] replaced by '-'. A
// restarted process (restart > 0) writes "rank-3.restart-2.gwtl", so its earlier incarnation's
// file stays.
std::string process_file(const std::string& timeline_path, const std::string& process_label,
                         int restart = 0);

// Starts the timeline when GRADWIRE_TIMELINE is set in `env`: process_file(value, label,
// TORCHELASTIC_RESTART_COUNT), alternating as GRADWIRE_TIMELINE_ALTERNATE_MS says (unset: not).
// Returns the file written, nullopt when the variable is unset or empty (nothing starts). Throws
// as start() does, and ConfigError naming GRADWIRE_TIMELINE_ALTERNATE_MS when it is not a
// positive integer.
std::optional<std::string> start_from_env(const EnvMap& env, const std::string& process_label);

// Writes every thread's buffered events to the file (blocking file I/O). No-op when off.
void flush();

// Flushes, ends the file (its end record) and closes it. Later events are dropped. Idempotent.
void stop();

// The file being written, empty when off.
std::string current_path();

// Whether a timeline runs in this process, recording now or not (enabled() is false in the
// windows where an alternating timeline does not record).
bool running();

// The running timeline's StartOptions::alternate_ns; 0 when it does not alternate or none runs.
int64_t alternate_ns();

// Whether an alternating timeline records in window `window` (job_clock_ns() / alternate_ns)
// (pure): a hash of the index picks half of the windows, in no period (Note [alternating
// timeline]).
bool window_records(int64_t window);

// Where a step [start_job_ns, end_job_ns] of the job's clock lies when the timeline alternates
// every `alternate_ns` (pure): 1 within one window that records, 0 within one that does not, -1
// across a boundary or within `margin_ns` after one (where a process may not have switched yet).
int recorded_throughout(int64_t start_job_ns, int64_t end_job_ns, int64_t alternate_ns,
                        int64_t margin_ns);

// --- Recording -------------------------------------------------------------------------------

// A complete event (ph "X") on the calling thread's track: [start_ns, end_ns] of now_ns().
inline void complete(std::string_view name, const char* category, int64_t start_ns, int64_t end_ns,
                     Args args = {}) {
  if (enabled()) detail::record_complete(name, category, start_ns, end_ns, args);
}

// An async span recorded whole when it has ended (ph "b" at start_ns, "e" at end_ns, one id):
// what AsyncSpan draws, for work whose start need not be recorded as it happens (a call to a
// server, recorded when its answer arrives), for about 25 % less than an AsyncSpan's begin and
// end. `begin_args` go on the "b" event, `end_args` on the "e" event.
inline void async_span(std::string_view name, const char* category, int64_t start_ns,
                       int64_t end_ns, Args begin_args, Args end_args = {}) {
  if (enabled()) detail::record_async(name, category, start_ns, end_ns, begin_args, end_args);
}

// Where an instant event is drawn: on its thread's track, across its process or the whole trace.
enum class Scope : char { kThread = 't', kProcess = 'p', kGlobal = 'g' };

// An instant event (ph "i") now: restarts, timeouts, checkpoints taken.
inline void instant(std::string_view name, const char* category, Args args = {},
                    Scope scope = Scope::kProcess) {
  if (enabled()) detail::record_instant(name, category, args, scope);
}

// A counter sample (ph "C") now: each arg (numeric) is one series of the counter `name`.
inline void counter(std::string_view name, Args values) {
  if (enabled()) detail::record_counter(name, values);
}

// Names the calling thread's track (thread_name metadata): "ddp hooks", "progress", in the
// running timeline and in those started later (a call while none runs takes effect at the next
// start); naming it again by the same name writes nothing. A thread that never names itself is
// named after its system name (pthread_getname_np).
void name_thread(std::string_view name);

// A span on the calling thread's track from construction to destruction (RAII):
//   { timeline::Span span("allreduce", "comm", {{"bytes", n}}); ...; span.arg({"algorithm", a}); }
// Spans of one thread must nest. Does nothing when no timeline runs at construction.
class Span {
 public:
  Span(std::string_view name, const char* category, Args args = {}) {
    if (enabled()) begin(name, category, args);
  }
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  // Adds an arg (known only later: the algorithm chosen, the bytes received).
  void arg(const Arg& value);
  // Ends the span now (the destructor then does nothing).
  void end() {
    if (active()) finish();
  }

  bool active() const { return start_ns_ >= 0; }

 private:
  void begin(std::string_view name, const char* category, Args args);
  void finish();

  int64_t start_ns_ = -1;
  alignas(8) unsigned char event_[kEventBytes];  // the event being built, when active
};

// A span that starts in one place and ends in another, maybe on another thread: an async event
// pair (ph "b" / "e", one id) that Perfetto draws on a track of its own under the process, so
// that it may overlap the thread's spans. Movable; ended by end() or destruction.
class AsyncSpan {
 public:
  AsyncSpan() = default;
  AsyncSpan(std::string_view name, const char* category, Args args = {}) {
    if (enabled()) begin(name, category, args);
  }
  ~AsyncSpan() { end(); }
  AsyncSpan(AsyncSpan&& other) noexcept;
  AsyncSpan& operator=(AsyncSpan&& other) noexcept;
  AsyncSpan(const AsyncSpan&) = delete;
  AsyncSpan& operator=(const AsyncSpan&) = delete;

  void end(Args args = {}) {
    if (active()) finish(args);
  }
  bool active() const { return id_ != 0; }

 private:
  void begin(std::string_view name, const char* category, Args args);
  void finish(Args args);

  uint64_t id_ = 0;
  const char* category_ = nullptr;
  uint8_t name_size_ = 0;
  char name_[63] = {};  // the end event's name (cut at 63 bytes)
};

// --- Clocks ----------------------------------------------------------------------------------
//
// Each file records the offset that turns its timestamps into the job's clock: at start, the
// process's wall clock minus its steady clock (processes of one host agree exactly, hosts as
// well as their wall clocks do); once measured, the offset against the reference process
// (rank 0), whose own job clock is its steady clock plus its start-time offset (job_clock_ns()).

// One round trip to the reference: this process's clock when it asked, the reference's job
// clock when it answered, this process's clock when the answer arrived (all nanoseconds).
struct ClockSample {
  int64_t local_send_ns = 0;
  int64_t reference_ns = 0;
  int64_t local_receive_ns = 0;
};

struct ClockOffset {
  int64_t offset_ns = 0;  // reference = local + offset_ns
  int64_t error_ns = 0;   // at most this far off: half the round trip of the sample used
};

// Cristian's estimate (pure): from the sample of the shortest round trip, the reference's time
// taken at the middle of it. nullopt when `samples` is empty or every sample is inconsistent
// (receive before send).
std::optional<ClockOffset> estimate_clock_offset(const std::vector<ClockSample>& samples);

// Offsets from one barrier every process leaves at nearly the same moment (pure): each
// process's local clock when it left; offsets put every process on process 0's clock. Coarser
// than round trips (the error is the barrier's release skew) but needs one store round.
std::vector<int64_t> offsets_from_barrier(const std::vector<int64_t>& local_exit_ns);

// Measures this process's offset against a reference: calls `reference_now_ns` (a round trip
// that returns the reference's job_clock_ns()) `rounds` times and estimates. Blocks as the
// callback does. nullopt when rounds < 1.
template <typename ReferenceNow>
std::optional<ClockOffset> measure_clock_offset(ReferenceNow&& reference_now_ns, int rounds) {
  std::vector<ClockSample> samples;
  for (int i = 0; i < rounds; ++i) {
    ClockSample sample;
    sample.local_send_ns = now_ns();
    sample.reference_ns = reference_now_ns();
    sample.local_receive_ns = now_ns();
    samples.push_back(sample);
  }
  return estimate_clock_offset(samples);
}

// The two store operations the measurement below needs; comm adapts its c10d store to it.
class ClockStore {
 public:
  virtual ~ClockStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Blocks until `key` is set (the store's timeout applies; its error propagates).
  virtual std::string get(const std::string& key) = 0;
};

// The ranks whose clocks must be measured against rank 0's (pure): those whose kernel differs
// from rank 0's, by `kernel_ids` (one per rank, rank 0 first; "<hostname>/<boot id>"). Processes of
// one kernel read one wall clock and one steady clock, so their start-time offsets agree exactly
// and a measurement could only add its error. An empty id (unknown) is measured. Never rank 0.
std::vector<int> ranks_to_measure(const std::vector<std::string>& kernel_ids);

// Measures the offsets of `measured` ranks (ranks_to_measure) against rank 0 through the store
// (a collective: every rank of the world calls it once, with the same `prefix`, unique to this
// measurement, and the same `measured`). Rank 0 answers each measured rank's `rounds` round trips
// in turn with its job_clock_ns(): rank r sets "<prefix>/<r>/ask/<k>" and waits for
// "<prefix>/<r>/answer/<k>". A measured rank records its offset (set_clock_offset, "rank 0
// through the store") when a timeline runs, and returns it; any other rank returns its current
// offset (rank 0 and ranks of its kernel: error 0). Blocks for measured.size() * rounds round
// trips at rank 0; a round trip through libtorch 1.13's TCPStore takes up to ~200 ms on loopback,
// which bounds the error (half of it) of offsets measured across hosts.
ClockOffset sync_clock_through_store(ClockStore& store, const std::string& prefix, int rank,
                                     const std::vector<int>& measured, int rounds = 5);

// This process's job clock: now_ns() plus its current offset (its start-time offset until
// set_clock_offset()). The reference answers round trips with it.
int64_t job_clock_ns();

// The offset job_clock_ns() adds to now_ns().
int64_t clock_offset_ns();

// Records a measured offset (reference = local + offset) in the file, for merge. `source` says
// against what ("rank 0 through the store"). No-op when off.
void set_clock_offset(const ClockOffset& offset, std::string_view source);

}  // namespace gradwire::timeline
