// The timeline's API (gradwire/common/timeline.h) over its recorder (timeline_recorder.h, Note
// [timeline buffers]): the running recorder, each thread's buffer in it, and the recording calls,
// which build their event in place in the calling thread's buffer. The one process-wide state of
// the timeline is g_recorder (Note in architecture.md, Threads and state): a trace is the
// process's, as is its file.
#include "gradwire/common/timeline.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "common/mix.h"
#include "common/timeline_event.h"
#include "common/timeline_record.h"
#include "common/timeline_recorder.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"

namespace gradwire::timeline {

namespace detail {
std::atomic<bool> g_enabled{false};
}  // namespace detail

static_assert(sizeof(Event) <= kEventBytes && alignof(Event) <= 8);
static_assert(std::is_trivially_copyable_v<Event>);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

std::atomic<Recorder*> g_recorder{nullptr};
std::mutex g_control_mutex;  // start() and stop()
std::atomic<uint64_t> g_next_async_id{1};

struct ThreadSlot {
  Recorder* owner = nullptr;
  std::shared_ptr<ThreadBuffer> buffer;
  std::string name;  // name_thread's: the track's name in this timeline and those started later
  ~ThreadSlot();
};
thread_local bool t_slot_gone = false;  // trivially destructible: readable at thread exit
thread_local ThreadSlot t_slot;

ThreadSlot::~ThreadSlot() {
  t_slot_gone = true;
  if (buffer) buffer->owner->retire(buffer);
}

// The calling thread's buffer in the running recorder, nullptr when none runs. A thread that
// has none yet is registered, its track named as name_thread last named it, else by its system
// name. `*registered`: whether that happened in this call.
ThreadBuffer* thread_buffer(bool* registered = nullptr) {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || t_slot_gone) return nullptr;
  ThreadSlot& slot = t_slot;
  if (slot.owner != recorder) {
    if (slot.buffer) slot.buffer->owner->retire(slot.buffer);
    slot.buffer = recorder->register_thread(slot.name);
    slot.owner = recorder;
    if (registered != nullptr) *registered = true;
  }
  return slot.buffer.get();
}

// Appends `event` to `buffer` as its record (Note [timeline records]), handing the chunk to the
// writer first when the record does not fit (Note [timeline buffers]).
void append(ThreadBuffer& buffer, Event& event) {
  event.tid = buffer.tid;
  const size_t size = record_size(event);
  size_t used = buffer.used.load(std::memory_order_relaxed);
  if (used + size > buffer.capacity) {
    buffer.owner->hand_off(buffer);
    used = 0;
  }
  encode_record(buffer.bytes() + used, event);
  buffer.used.store(used + size, std::memory_order_release);
}

// Appends an event to the calling thread's buffer: `fill` builds it (phase, name, args,
// timestamps) on the stack, where only the bytes it uses are touched.
template <typename Fill>
void publish(Fill&& fill) {
  ThreadBuffer* buffer = thread_buffer();
  if (buffer == nullptr) return;
  Event event;
  fill(event);
  append(*buffer, event);
}

// Appends one half of an async span: `phase` 'b' or 'e' of span `id`, at ts_ns.
void publish_async(char phase, std::string_view name, const char* category, Args args,
                   int64_t ts_ns, uint64_t id) {
  publish([&](Event& event) {
    event.reset(phase, name, category);
    event.add(args);
    event.ts_ns = ts_ns;
    event.id = id;
  });
}

}  // namespace

bool window_records(int64_t window) {
  // splitmix64's finalizer: every bit of the index moves the low bit.
  return (splitmix64_mix(static_cast<uint64_t>(window)) & 1) == 0;
}

namespace {

// Whether the window of an alternating timeline holding `job_ns` records.
bool records_at(int64_t job_ns, int64_t alternate_ns) {
  return window_records(job_ns / alternate_ns);
}

// Note [alternating timeline]: with StartOptions::alternate_ns, a thread of the timeline's own
// ("gw timeline alt", sleeping between boundaries) switches detail::g_enabled at each boundary of
// the job clock's windows: on in the windows that window_records() picks, off in the others.
// The pick is a hash of the window's index, not its parity: the machine's periodic work (kernel
// timers rounded to the whole second, a writer's flush every second) lands in windows of one
// parity, and measured the parity schedule's "cost" of a timeline that recorded nothing at
// 0.997-1.017x between batches of runs (docs/history/2026-11-timeline.md, Fifth pass); a hashed
// pick is uncorrelated with any period. Recording calls test enabled()
// as ever, so an off window costs what no timeline costs; a span begun in an on window still
// records when it ends in an off one. The recorder, its writer and the file stay throughout
// (running() is true). Processes of a job compute the same windows from the job clock, so the
// servers' and the ranks' timelines switch together, within the thread's wake-up latency (the
// margin gradwire-bench leaves after each boundary).
class Alternator {
 public:
  explicit Alternator(int64_t alternate_ns) : alternate_ns_(alternate_ns) {
    thread_ = std::thread([this] { run(); });
  }
  Alternator(const Alternator&) = delete;
  Alternator& operator=(const Alternator&) = delete;
  ~Alternator() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  int64_t alternate_ns() const { return alternate_ns_; }

 private:
  void run() {
    ::pthread_setname_np(::pthread_self(), "gw timeline alt");
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      const int64_t job_ns = job_clock_ns();
      const int64_t window = job_ns / alternate_ns_;
      detail::g_enabled.store(records_at(job_ns, alternate_ns_), std::memory_order_relaxed);
      // The next boundary on the steady clock.
      const int64_t next_ns = (window + 1) * alternate_ns_ - clock_offset_ns();
      changed_.wait_until(lock,
                          std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next_ns)),
                          [this] { return stopping_; });
    }
  }

  const int64_t alternate_ns_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

std::unique_ptr<Alternator> g_alternator;  // guarded by g_control_mutex

void stop_at_exit() { stop(); }

std::string file_name_for(const std::string& label) {
  std::string name = label;
  if (name.rfind("ps server", 0) == 0) name = name.substr(3);  // "ps servers 0-3": servers-0-3
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    if (!keep) c = '-';
  }
  if (name.empty() || name[0] == '.') name = "process" + name;
  return name;
}

}  // namespace

// --- Starting and stopping -------------------------------------------------------------------

void start(const std::string& path, const std::string& process_label, StartOptions options) {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(stop_at_exit); });
  g_alternator.reset();
  if (Recorder* previous = g_recorder.exchange(nullptr)) {
    detail::g_enabled.store(false);
    previous->close();
  }
  // Never freed (Note [timeline buffers]).
  auto* recorder = new Recorder(path, process_label, options);
  g_recorder.store(recorder, std::memory_order_release);
  // Alternating: on only in a window that records, from the start (Note [alternating timeline]).
  detail::g_enabled.store(options.alternate_ns <= 0 ||
                          records_at(job_clock_ns(), options.alternate_ns));
  if (options.alternate_ns > 0) g_alternator = std::make_unique<Alternator>(options.alternate_ns);
}

std::string process_file(const std::string& timeline_path, const std::string& process_label,
                         int restart) {
  std::string name = file_name_for(process_label);
  if (restart > 0) name += ".restart-" + std::to_string(restart);
  return timeline_path + ".d/" + name + std::string(kProcessFileExtension);
}

std::optional<std::string> start_from_env(const EnvMap& env, const std::string& process_label) {
  const std::optional<std::string> path = env.get(settings::kTimeline.name);
  if (!path || path->empty()) return std::nullopt;
  const long restart = env.get_int("TORCHELASTIC_RESTART_COUNT").value_or(0);
  StartOptions options;
  if (const std::optional<long> ms = env.get_int(settings::kTimelineAlternateMs.name)) {
    if (*ms <= 0) {
      throw ConfigError(std::string(settings::kTimelineAlternateMs.name) + "=" +
                        std::to_string(*ms) + ": expected a positive number of milliseconds");
    }
    options.alternate_ns = static_cast<int64_t>(*ms) * 1'000'000;
  }
  std::string file = process_file(*path, process_label, static_cast<int>(restart));
  start(file, process_label, options);
  return file;
}

void flush() {
  if (Recorder* recorder = g_recorder.load(std::memory_order_acquire)) recorder->flush_all();
}

void stop() {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  g_alternator.reset();
  detail::g_enabled.store(false);
  if (Recorder* recorder = g_recorder.exchange(nullptr)) recorder->close();
}

std::string current_path() {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  return recorder != nullptr ? recorder->path() : std::string();
}

bool running() { return g_recorder.load(std::memory_order_acquire) != nullptr; }

int64_t alternate_ns() {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  return g_alternator != nullptr ? g_alternator->alternate_ns() : 0;
}

int recorded_throughout(int64_t start_job_ns, int64_t end_job_ns, int64_t alternate_ns,
                        int64_t margin_ns) {
  if (alternate_ns <= 0 || end_job_ns < start_job_ns) return -1;
  const int64_t window = start_job_ns / alternate_ns;
  if (start_job_ns - window * alternate_ns < margin_ns) return -1;
  if (end_job_ns / alternate_ns != window) return -1;
  return records_at(start_job_ns, alternate_ns) ? 1 : 0;
}

// --- Recording -------------------------------------------------------------------------------

void detail::record_complete(std::string_view name, const char* category, int64_t start_ns,
                             int64_t end_ns, Args args) {
  publish([&](Event& event) {
    event.reset('X', name, category);
    event.add(args);
    event.ts_ns = start_ns;
    event.dur_ns = std::max<int64_t>(end_ns - start_ns, 0);
  });
}

void detail::record_instant(std::string_view name, const char* category, Args args, Scope scope) {
  const int64_t ts_ns = now_ns();
  publish([&](Event& event) {
    event.reset('i', name, category);
    event.add(args);
    event.ts_ns = ts_ns;
    event.scope = static_cast<char>(scope);
  });
}

void detail::record_counter(std::string_view name, Args values) {
  const int64_t ts_ns = now_ns();
  publish([&](Event& event) {
    event.reset('C', name, nullptr);
    event.add(values);
    event.ts_ns = ts_ns;
  });
}

void detail::record_async(std::string_view name, const char* category, int64_t start_ns,
                          int64_t end_ns, Args begin_args, Args end_args) {
  // One buffered event, written as the pair (timeline_event.h, 'A').
  const uint64_t id = g_next_async_id.fetch_add(1, std::memory_order_relaxed);
  publish([&](Event& event) {
    event.reset('A', name, category);
    event.add(begin_args);
    event.begin_args = event.arg_count;
    event.add(end_args);
    event.ts_ns = start_ns;
    event.dur_ns = std::max<int64_t>(end_ns - start_ns, 0);
    event.id = id;
  });
}

void name_thread(std::string_view name) {
  if (t_slot_gone) return;
  // Named so already, in this timeline if one runs: nothing to write (callers may name their
  // thread on every call).
  if (t_slot.name == name && t_slot.owner == g_recorder.load(std::memory_order_acquire)) return;
  t_slot.name.assign(name);
  bool registered = false;
  ThreadBuffer* buffer = thread_buffer(&registered);
  if (buffer == nullptr || registered) return;  // registered under `name`: named once
  Event event;
  event.reset('M', "thread_name", nullptr);
  event.tid = buffer->tid;
  event.add({"name", name});
  buffer->owner->write_metadata(event);
}

void Span::begin(std::string_view name, const char* category, Args args) {
  Event* event = new (event_) Event;
  event->reset('X', name, category);
  event->add(args);
  start_ns_ = now_ns();
}

void Span::arg(const Arg& value) {
  if (active()) std::launder(reinterpret_cast<Event*>(event_))->add(value);
}

void Span::finish() {
  const int64_t end_ns = now_ns();
  Event& event = *std::launder(reinterpret_cast<Event*>(event_));
  if (ThreadBuffer* buffer = thread_buffer()) {
    event.ts_ns = start_ns_;
    event.dur_ns = end_ns - start_ns_;
    append(*buffer, event);
  }
  start_ns_ = -1;
}

void AsyncSpan::begin(std::string_view name, const char* category, Args args) {
  id_ = g_next_async_id.fetch_add(1, std::memory_order_relaxed);
  category_ = category;
  name_size_ = static_cast<uint8_t>(std::min(name.size(), sizeof name_));
  std::copy_n(name.data(), name_size_, name_);
  publish_async('b', name, category, args, now_ns(), id_);
}

AsyncSpan::AsyncSpan(AsyncSpan&& other) noexcept { *this = std::move(other); }

AsyncSpan& AsyncSpan::operator=(AsyncSpan&& other) noexcept {
  if (this != &other) {
    end();
    id_ = std::exchange(other.id_, 0);
    category_ = other.category_;
    name_size_ = other.name_size_;
    std::copy_n(other.name_, sizeof name_, name_);
  }
  return *this;
}

void AsyncSpan::finish(Args args) {
  publish_async('e', std::string_view(name_, name_size_), category_, args, now_ns(),
                std::exchange(id_, 0));
}

// --- Clocks ----------------------------------------------------------------------------------

int64_t clock_offset_ns() {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  return recorder != nullptr ? recorder->offset_ns() : wall_minus_steady_ns();
}

int64_t job_clock_ns() { return now_ns() + clock_offset_ns(); }

void set_clock_offset(const ClockOffset& offset, std::string_view source) {
  if (Recorder* recorder = g_recorder.load(std::memory_order_acquire)) {
    recorder->set_offset(offset.offset_ns, offset.error_ns, source);
  }
}

}  // namespace gradwire::timeline
