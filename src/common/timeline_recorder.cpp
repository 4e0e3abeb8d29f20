// The timeline's recorder (timeline_recorder.h; Note [timeline buffers]).
#include "common/timeline_recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "gradwire/common/error.h"

namespace gradwire::timeline {

namespace {

// The written chunks a recorder keeps for reuse, so that a thread taking an empty chunk finds its
// pages already faulted in (beyond them, written chunks are freed).
constexpr size_t kMostSpareChunks = 16;

int32_t this_thread_id() {
  thread_local const int32_t tid = static_cast<int32_t>(::syscall(SYS_gettid));
  return tid;
}

}  // namespace

int64_t wall_minus_steady_ns() {
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return wall - now_ns();
}

Recorder::Recorder(std::string path, std::string label, StartOptions options)
    : path_(std::move(path)),
      label_(std::move(label)),
      options_(options),
      offset_ns_(wall_minus_steady_ns()) {
  options_.chunk_bytes = (std::max(options_.chunk_bytes, kMaxRecordBytes) + 7) & ~size_t{7};
  options_.flush_interval_ns = std::max<int64_t>(options_.flush_interval_ns, 1'000'000);
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::error_code ignored;
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  fd_ = UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_.valid()) {
    throw Error("timeline: cannot create " + path_ + ": " + errno_text(errno) +
                " (GRADWIRE_TIMELINE names the trace; its folder must be writable)");
  }
  if (!write_fully(fd_.get(), kFileMagic.data(), kFileMagic.size())) fd_.reset();
  Event event;
  event.reset('M', "process_name", nullptr);
  event.add({"name", std::string_view(label_)});
  write_metadata(event);
  write_clock("wall clock at start", 0);
  writer_ = std::thread([this] { writer_loop(); });
}

std::shared_ptr<ThreadBuffer> Recorder::register_thread(std::string_view name) {
  auto buffer = std::make_shared<ThreadBuffer>();
  buffer->owner = this;
  buffer->tid = this_thread_id();
  buffer->capacity = options_.chunk_bytes;
  {
    std::lock_guard<std::mutex> queue_lock(queue_mutex_);
    buffer->chunk = take_spare_locked();
  }
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    buffers_.push_back(buffer);
  }
  char system_name[32] = {};
  if (name.empty() &&
      ::pthread_getname_np(::pthread_self(), system_name, sizeof system_name) == 0) {
    name = system_name;
  }
  if (!name.empty()) {
    Event event;
    event.reset('M', "thread_name", nullptr);
    event.tid = buffer->tid;
    event.add({"name", name});
    write_metadata(event);
  }
  return buffer;
}

void Recorder::retire(const std::shared_ptr<ThreadBuffer>& buffer) {
  {
    std::lock_guard<std::mutex> lock(buffer->mutex);
    write_published(*buffer);
  }
  std::lock_guard<std::mutex> lock(registry_mutex_);
  buffers_.erase(std::remove(buffers_.begin(), buffers_.end(), buffer), buffers_.end());
}

void Recorder::hand_off(ThreadBuffer& buffer) {
  std::lock_guard<std::mutex> lock(buffer.mutex);
  const size_t used = buffer.used.load(std::memory_order_relaxed);
  bool write_here = false;
  bool wake_writer = false;
  {
    std::lock_guard<std::mutex> queue_lock(queue_mutex_);
    if (closed_) {  // after stop(): dropped
      buffer.used.store(0, std::memory_order_relaxed);
      buffer.written = 0;
      return;
    }
    if (pending_.size() >= options_.max_pending_chunks) {
      write_here = true;  // the writer is behind: this thread pays (Note [timeline buffers])
    } else {
      pending_.push_back({std::move(buffer.chunk), buffer.written, used});
      buffer.chunk = take_spare_locked();
      // Woken once a backlog of chunks is there, not for each (Note [timeline buffers]).
      wake_writer = pending_.size() == std::max<size_t>(options_.max_pending_chunks / 2, 1);
    }
  }
  if (write_here) {
    write_published(buffer);
  } else if (wake_writer) {
    queue_changed_.notify_one();
  }
  buffer.used.store(0, std::memory_order_relaxed);
  buffer.written = 0;
}

std::unique_ptr<uint64_t[]> Recorder::take_spare_locked() {
  if (spare_.empty()) return std::unique_ptr<uint64_t[]>(new uint64_t[options_.chunk_bytes / 8]);
  std::unique_ptr<uint64_t[]> chunk = std::move(spare_.back());
  spare_.pop_back();
  return chunk;
}

void Recorder::writer_loop() {
  ::pthread_setname_np(::pthread_self(), "gw timeline");
  // The lowest priority (SCHED_IDLE, else nice 19): it formats when a core would otherwise idle,
  // not in the traced work's place, and yields a core as soon as a traced thread wakes. (Measured
  // on the hybrid 2 x 8 job: at normal priority the timeline cost about 2 % more.)
  sched_param param{};
  if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param) != 0) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()), 19);
  }
  const auto interval = std::chrono::nanoseconds(options_.flush_interval_ns);
  auto next_flush = std::chrono::steady_clock::now() + interval;
  std::unique_lock<std::mutex> queue_lock(queue_mutex_);
  while (!stopping_) {
    const size_t backlog = std::max<size_t>(options_.max_pending_chunks / 2, 1);
    queue_changed_.wait_until(queue_lock, next_flush,
                              [&] { return stopping_ || pending_.size() >= backlog; });
    if (stopping_) break;
    queue_lock.unlock();
    {
      std::lock_guard<std::mutex> write_lock(write_mutex_);
      drain_locked();
      if (std::chrono::steady_clock::now() >= next_flush) {
        flush_current_locked();
        next_flush = std::chrono::steady_clock::now() + interval;
      }
    }
    queue_lock.lock();
  }
}

void Recorder::drain_locked() {
  for (;;) {
    Chunk chunk;
    {
      std::lock_guard<std::mutex> queue_lock(queue_mutex_);
      if (pending_.empty()) return;
      chunk = std::move(pending_.front());
      pending_.pop_front();
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(chunk.bytes.get());
    write_records(bytes + chunk.begin, chunk.end - chunk.begin);
    std::lock_guard<std::mutex> queue_lock(queue_mutex_);
    if (spare_.size() < kMostSpareChunks) spare_.push_back(std::move(chunk.bytes));
  }
}

void Recorder::flush_current_locked() {
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

void Recorder::flush_all() {
  std::lock_guard<std::mutex> write_lock(write_mutex_);
  drain_locked();
  flush_current_locked();
}

void Recorder::close() {
  {
    std::lock_guard<std::mutex> queue_lock(queue_mutex_);
    if (closed_) return;
    stopping_ = true;
  }
  queue_changed_.notify_all();
  if (writer_.joinable()) writer_.join();
  flush_all();
  {
    std::lock_guard<std::mutex> queue_lock(queue_mutex_);
    closed_ = true;
    pending_.clear();  // handed over after the last flush: dropped, as later events are
  }
  std::vector<unsigned char> end;
  append_end_record(end);
  write_records(end.data(), end.size());
  std::lock_guard<std::mutex> lock(file_mutex_);
  fd_.reset();
}

void Recorder::write_metadata(const Event& event) {
  alignas(8) unsigned char record[kMaxRecordBytes];
  encode_record(record, event);
  write_records(record, record_size(event));
}

void Recorder::write_clock(std::string_view source, int64_t error_ns) {
  Event event;
  event.reset('M', "gradwire_clock", nullptr);
  event.add({"offset_ns", offset_ns()});
  event.add({"error_ns", error_ns});
  event.add({"source", source});
  write_metadata(event);
}

void Recorder::set_offset(int64_t offset_ns, int64_t error_ns, std::string_view source) {
  offset_ns_.store(offset_ns, std::memory_order_relaxed);
  write_clock(source, error_ns);
}

void Recorder::write_published(ThreadBuffer& buffer) {
  const size_t used = buffer.used.load(std::memory_order_acquire);
  if (used <= buffer.written) return;
  write_records(buffer.bytes() + buffer.written, used - buffer.written);
  buffer.written = used;
}

void Recorder::write_records(const unsigned char* records, size_t size) {
  if (size == 0) return;
  std::lock_guard<std::mutex> lock(file_mutex_);
  if (!fd_.valid()) return;
  staged_.clear();
  for_each_address(records, records + size, [&](uint64_t address) {
    if (defined_.insert(address).second) {
      append_string_record(staged_, address, reinterpret_cast<const char*>(address));
    }
  });
  // A full disk loses the events from there on, never the run; the file stays whole up to them.
  if ((!staged_.empty() && !write_fully(fd_.get(), staged_.data(), staged_.size())) ||
      !write_fully(fd_.get(), records, size)) {
    fd_.reset();
  }
}

}  // namespace gradwire::timeline
