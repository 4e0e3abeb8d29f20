// Internal: the timeline's recorder (gradwire/common/timeline.h): per-thread buffers of events,
// formatted and written to the process's file by a writer thread.
//
// Note [timeline buffers]: a thread appends to its own buffer (a chunk of bytes) without a lock:
// it writes an event's record (timeline_record.h, Note [timeline records]) at `used` and
// publishes it with a release store. When the next record does not fit, the thread hands the
// chunk to the recorder's writer thread and takes an empty one (under its buffer's mutex, the one
// lock of its hot path, once per chunk), so that file I/O stays off the threads being traced. The
// writer, a low-priority thread ("gw timeline"), writes the chunks handed to it as they are (it
// formats nothing: gradwire-trace merge does): woken when half of
// StartOptions::max_pending_chunks wait, so that it runs in batches rather than once a chunk
// between the traced work (docs/history/2026-11-timeline.md), and every flush interval, when it
// also writes the records published in every thread's current chunk (under that buffer's mutex,
// leaving the chunk in place), so that a process killed by SIGKILL leaves a file that ends at
// most about one interval before its death. When the writer falls behind
// (StartOptions::max_pending_chunks handed over and not yet written), a thread writes its full
// chunk itself: the timeline slows a run down rather than lose events or grow without bound.
// flush() and stop() write every chunk handed over and every thread's published records, on the
// calling thread. The registry holds every buffer so that they are found; a thread that exits
// writes and retires its own. A Recorder is never freed (a thread may still hold one that a
// stop() replaced): close() ends its file and later events are dropped.
//
// Lock order: write_mutex_ (one writer at a time) -> a buffer's mutex -> queue_mutex_, file_mutex_.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/timeline_event.h"
#include "common/timeline_record.h"
#include "gradwire/common/files.h"
#include "gradwire/common/timeline.h"

namespace gradwire::timeline {

class Recorder;

// One thread's events (Note [timeline buffers]).
struct ThreadBuffer {
  Recorder* owner = nullptr;
  int32_t tid = 0;
  size_t capacity = 0;                // bytes of a chunk
  std::unique_ptr<uint64_t[]> chunk;  // the current chunk; replaced by its thread, under mutex
  std::atomic<size_t> used{0};        // published bytes; written by the owning thread only
  std::mutex mutex;                   // taken per chunk and by the writer
  size_t written = 0;                 // guarded by mutex: bytes of this chunk already in the file

  unsigned char* bytes() const { return reinterpret_cast<unsigned char*>(chunk.get()); }
};

class Recorder {
 public:
  // Creates (truncates) `path` and writes its process_name; starts the writer thread. Throws
  // gradwire::Error naming the path when it cannot be created.
  Recorder(std::string path, std::string label, StartOptions options);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const std::string& path() const { return path_; }
  int64_t offset_ns() const { return offset_ns_.load(std::memory_order_relaxed); }

  // A buffer for the calling thread, registered, its thread_name written: `name`, else the
  // thread's system name when it has one.
  std::shared_ptr<ThreadBuffer> register_thread(std::string_view name = {});
  // The thread owning `buffer` exits or moves to another recorder: its events go to the file.
  void retire(const std::shared_ptr<ThreadBuffer>& buffer);
  // The owning thread's next record does not fit: hands the chunk to the writer and takes an
  // empty one.
  void hand_off(ThreadBuffer& buffer);

  // Writes every chunk handed over and every thread's published records (blocking file I/O).
  void flush_all();
  // Stops the writer, flushes, ends the file's JSON array and closes it. Idempotent.
  void close();

  void write_metadata(const Event& event);
  void set_offset(int64_t offset_ns, int64_t error_ns, std::string_view source);

 private:
  struct Chunk {
    std::unique_ptr<uint64_t[]> bytes;
    size_t begin = 0;  // bytes before it were written by an interval's flush
    size_t end = 0;
  };

  // An empty chunk: a spare one, else a new one (queue_mutex_ held).
  std::unique_ptr<uint64_t[]> take_spare_locked();
  void writer_loop();
  // Writes the chunks handed over (write_mutex_ held).
  void drain_locked();
  // Writes the published, unwritten records of every thread's current chunk (write_mutex_ held).
  void flush_current_locked();
  // Writes the bytes [written, used) of the buffer's chunk (buffer.mutex held).
  void write_published(ThreadBuffer& buffer);
  // Appends whole records to the file, after the string records of the addresses they use that
  // the file does not define yet (Note [timeline records]).
  void write_records(const unsigned char* records, size_t size);
  void write_clock(std::string_view source, int64_t error_ns);

  const std::string path_;
  const std::string label_;
  StartOptions options_;
  std::atomic<int64_t> offset_ns_;

  std::mutex registry_mutex_;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_;  // guarded by registry_mutex_

  std::mutex write_mutex_;  // held while chunks are formatted: flush() waits for the writer

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<Chunk> pending_;                       // guarded by queue_mutex_
  std::vector<std::unique_ptr<uint64_t[]>> spare_;  // guarded by queue_mutex_: written chunks
  bool stopping_ = false;                           // guarded by queue_mutex_
  bool closed_ = false;                             // guarded by queue_mutex_
  std::thread writer_;

  std::mutex file_mutex_;
  UniqueFd fd_;                           // guarded by file_mutex_; closed at a failed write
  std::unordered_set<uint64_t> defined_;  // guarded by file_mutex_: addresses the file defines
  std::vector<unsigned char> staged_;     // guarded by file_mutex_: string records to write
};

// The process's wall clock minus its steady clock (now_ns()), in nanoseconds: a file's offset at
// start.
int64_t wall_minus_steady_ns();

}  // namespace gradwire::timeline
