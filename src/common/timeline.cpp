// The timeline's recorder (gradwire/common/timeline.h): per-thread buffers in a process-wide
// registry, written to the process's file in chunks.
//
// Note [timeline buffers]: a thread appends to its own buffer without a lock: it fills the slot
// at `count` and publishes it with a release store. Its buffer's mutex is taken only to write a
// chunk: by the thread itself when the buffer is full or its flush interval has passed (then it
// empties the buffer), and by flush()/stop() on any thread, which write the published events
// not yet written and leave the buffer in place. The registry holds every buffer so that flush()
// finds them; a thread that exits writes and retires its own. A Recorder is never freed (a thread
// may still hold one that a stop() replaced): stop() closes its file and later chunks are
// dropped. The one process-wide state of the timeline is g_recorder (Note in architecture.md,
// Threads and state): a trace is the process's, as is its file.
#include "gradwire/common/timeline.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "common/timeline_event.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
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

int64_t wall_minus_steady_ns() {
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return wall - now_ns();
}

int32_t this_thread_id() {
  thread_local const int32_t tid = static_cast<int32_t>(::syscall(SYS_gettid));
  return tid;
}

class Recorder;

struct ThreadBuffer {
  Recorder* owner = nullptr;
  int32_t tid = 0;
  size_t capacity = 0;
  std::unique_ptr<Event[]> events;
  std::atomic<size_t> count{0};  // published events; written by the owning thread only
  int64_t next_flush_ns = 0;     // owning thread only
  std::mutex mutex;              // taken per chunk (Note [timeline buffers])
  size_t written = 0;            // guarded by mutex: events of this fill already in the file
};

class Recorder {
 public:
  Recorder(std::string path, std::string label, StartOptions options)
      : path_(std::move(path)),
        label_(std::move(label)),
        options_(options),
        pid_(static_cast<int64_t>(::getpid())),
        offset_ns_(wall_minus_steady_ns()) {
    options_.events_per_chunk = std::max<size_t>(options_.events_per_chunk, 1);
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ignored;
    if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
    fd_ =
        UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
    if (!fd_.valid()) {
      throw Error("timeline: cannot create " + path_ + ": " + errno_text(errno) +
                  " (GRADWIRE_TIMELINE names the trace; its folder must be writable)");
    }
    Event event;
    event.reset('M', "process_name", nullptr);
    event.add({"name", std::string_view(label_)});
    write_metadata(event);
    write_clock("wall clock at start", 0);
  }

  const std::string& path() const { return path_; }
  const StartOptions& options() const { return options_; }
  int64_t offset_ns() const { return offset_ns_.load(std::memory_order_relaxed); }

  std::shared_ptr<ThreadBuffer> register_thread() {
    auto buffer = std::make_shared<ThreadBuffer>();
    buffer->owner = this;
    buffer->tid = this_thread_id();
    buffer->capacity = options_.events_per_chunk;
    buffer->events.reset(new Event[buffer->capacity]);
    buffer->next_flush_ns = now_ns() + options_.flush_interval_ns;
    {
      std::lock_guard<std::mutex> lock(registry_mutex_);
      buffers_.push_back(buffer);
    }
    char name[32] = {};
    if (::pthread_getname_np(::pthread_self(), name, sizeof name) == 0 && name[0] != '\0') {
      Event event;
      event.reset('M', "thread_name", nullptr);
      event.tid = buffer->tid;
      event.add({"name", std::string_view(name)});
      write_metadata(event);
    }
    return buffer;
  }

  // The thread owning `buffer` exits or moves to another recorder: its events go to the file.
  void retire(const std::shared_ptr<ThreadBuffer>& buffer) {
    {
      std::lock_guard<std::mutex> lock(buffer->mutex);
      write_published(*buffer);
    }
    std::lock_guard<std::mutex> lock(registry_mutex_);
    buffers_.erase(std::remove(buffers_.begin(), buffers_.end(), buffer), buffers_.end());
  }

  // The owning thread published an event: writes a chunk when the buffer is full or due.
  void after_publish(ThreadBuffer& buffer, size_t count, int64_t now) {
    if (count < buffer.capacity && now < buffer.next_flush_ns) return;
    std::lock_guard<std::mutex> lock(buffer.mutex);
    write_published(buffer);
    if (count == buffer.capacity) {
      buffer.count.store(0, std::memory_order_relaxed);
      buffer.written = 0;
    }
    buffer.next_flush_ns = now + options_.flush_interval_ns;
  }

  void flush_all() {
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
    {
      std::lock_guard<std::mutex> lock(registry_mutex_);
      buffers = buffers_;
    }
    for (const auto& buffer : buffers) {
      std::lock_guard<std::mutex> lock(buffer->mutex);
      write_published(*buffer);
    }
  }

  void close() {
    flush_all();
    std::lock_guard<std::mutex> lock(file_mutex_);
    if (!fd_.valid()) return;
    write_fully(fd_.get(), "]\n", 2);
    fd_.reset();
  }

  void write_metadata(const Event& event) {
    std::string line(1, ',');
    append_event_json(line, event, pid_);
    line += '\n';
    write_lines(line);
  }

  void write_clock(std::string_view source, int64_t error_ns) {
    Event event;
    event.reset('M', "gradwire_clock", nullptr);
    event.add({"offset_ns", offset_ns()});
    event.add({"error_ns", error_ns});
    event.add({"source", source});
    write_metadata(event);
  }

  void set_offset(int64_t offset_ns, int64_t error_ns, std::string_view source) {
    offset_ns_.store(offset_ns, std::memory_order_relaxed);
    write_clock(source, error_ns);
  }

 private:
  // Writes buffer.events[written, count) (buffer.mutex held).
  void write_published(ThreadBuffer& buffer) {
    const size_t count = buffer.count.load(std::memory_order_acquire);
    if (count <= buffer.written) return;
    std::string lines;
    lines.reserve((count - buffer.written) * 160);
    for (size_t i = buffer.written; i < count; ++i) {
      lines += ',';
      append_event_json(lines, buffer.events[i], pid_);
      lines += '\n';
    }
    buffer.written = count;
    write_lines(lines);
  }

  // Appends `lines` (each ",{...}\n") to the file; the file's first line starts with '['.
  void write_lines(std::string& lines) {
    std::lock_guard<std::mutex> lock(file_mutex_);
    if (!fd_.valid() || lines.empty()) return;
    if (!started_) {
      lines[0] = '[';
      started_ = true;
    }
    // A full disk loses events, never the run.
    if (!write_fully(fd_.get(), lines.data(), lines.size())) failed_writes_++;
  }

  const std::string path_;
  const std::string label_;
  StartOptions options_;
  const int64_t pid_;
  std::atomic<int64_t> offset_ns_;

  std::mutex registry_mutex_;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_;  // guarded by registry_mutex_

  std::mutex file_mutex_;
  UniqueFd fd_;               // guarded by file_mutex_
  bool started_ = false;      // guarded by file_mutex_
  size_t failed_writes_ = 0;  // guarded by file_mutex_
};

std::atomic<Recorder*> g_recorder{nullptr};
std::mutex g_control_mutex;  // start() and stop()
std::atomic<uint64_t> g_next_async_id{1};

struct ThreadSlot {
  Recorder* owner = nullptr;
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadSlot();
};
thread_local bool t_slot_gone = false;  // trivially destructible: readable at thread exit
thread_local ThreadSlot t_slot;

ThreadSlot::~ThreadSlot() {
  t_slot_gone = true;
  if (buffer) buffer->owner->retire(buffer);
}

// The calling thread's buffer in the running recorder, nullptr when none runs.
ThreadBuffer* thread_buffer() {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || t_slot_gone) return nullptr;
  ThreadSlot& slot = t_slot;
  if (slot.owner != recorder) {
    if (slot.buffer) slot.buffer->owner->retire(slot.buffer);
    slot.buffer = recorder->register_thread();
    slot.owner = recorder;
  }
  return slot.buffer.get();
}

// Appends `event` (its phase, name, args set) with the timestamps given.
void publish(const Event& event, int64_t ts_ns, int64_t dur_ns, uint64_t id, char scope) {
  ThreadBuffer* buffer = thread_buffer();
  if (buffer == nullptr) return;
  const size_t count = buffer->count.load(std::memory_order_relaxed);
  Event& slot = buffer->events[count];
  slot = event;
  slot.ts_ns = ts_ns;
  slot.dur_ns = dur_ns;
  slot.id = id;
  slot.scope = scope;
  slot.tid = buffer->tid;
  buffer->count.store(count + 1, std::memory_order_release);
  buffer->owner->after_publish(*buffer, count + 1, ts_ns + dur_ns);
}

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
  if (Recorder* previous = g_recorder.exchange(nullptr)) {
    detail::g_enabled.store(false);
    previous->close();
  }
  auto* recorder = new Recorder(path, process_label, options);  // never freed: Note above
  g_recorder.store(recorder, std::memory_order_release);
  detail::g_enabled.store(true);
}

std::string process_file(const std::string& timeline_path, const std::string& process_label,
                         int restart) {
  std::string name = file_name_for(process_label);
  if (restart > 0) name += ".restart-" + std::to_string(restart);
  return timeline_path + ".d/" + name + ".json";
}

std::optional<std::string> start_from_env(const EnvMap& env, const std::string& process_label) {
  const std::optional<std::string> path = env.get(settings::kTimeline.name);
  if (!path || path->empty()) return std::nullopt;
  const long restart = env.get_int("TORCHELASTIC_RESTART_COUNT").value_or(0);
  std::string file = process_file(*path, process_label, static_cast<int>(restart));
  start(file, process_label);
  return file;
}

void flush() {
  if (Recorder* recorder = g_recorder.load(std::memory_order_acquire)) recorder->flush_all();
}

void stop() {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  detail::g_enabled.store(false);
  if (Recorder* recorder = g_recorder.exchange(nullptr)) recorder->close();
}

std::string current_path() {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  return recorder != nullptr ? recorder->path() : std::string();
}

// --- Recording -------------------------------------------------------------------------------

void detail::record_complete(std::string_view name, const char* category, int64_t start_ns,
                             int64_t end_ns, Args args) {
  Event event;
  event.reset('X', name, category);
  event.add(args);
  publish(event, start_ns, std::max<int64_t>(end_ns - start_ns, 0), 0, 't');
}

void detail::record_instant(std::string_view name, const char* category, Args args, Scope scope) {
  Event event;
  event.reset('i', name, category);
  event.add(args);
  publish(event, now_ns(), 0, 0, static_cast<char>(scope));
}

void detail::record_counter(std::string_view name, Args values) {
  Event event;
  event.reset('C', name, nullptr);
  event.add(values);
  publish(event, now_ns(), 0, 0, 't');
}

void name_thread(std::string_view name) {
  if (!enabled()) return;
  ThreadBuffer* buffer = thread_buffer();
  if (buffer == nullptr) return;
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
  publish(*std::launder(reinterpret_cast<Event*>(event_)), start_ns_, end_ns - start_ns_, 0, 't');
  start_ns_ = -1;
}

void AsyncSpan::begin(std::string_view name, const char* category, Args args) {
  id_ = g_next_async_id.fetch_add(1, std::memory_order_relaxed);
  category_ = category;
  name_size_ = static_cast<uint8_t>(std::min(name.size(), sizeof name_));
  std::copy_n(name.data(), name_size_, name_);
  Event event;
  event.reset('b', name, category);
  event.add(args);
  publish(event, now_ns(), 0, id_, 't');
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
  Event event;
  event.reset('e', std::string_view(name_, name_size_), category_);
  event.add(args);
  publish(event, now_ns(), 0, std::exchange(id_, 0), 't');
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
