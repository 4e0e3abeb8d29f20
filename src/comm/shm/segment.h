// The shared-memory segment of one shm communicator: its layout (pure), and the mapping that
// creates, attaches and unlinks it. See docs/communicator.md, "shm backend".
//
// Layout (offsets from the start of the mapping, all page aligned):
//   header      one page: magic, version, rank count, slot size, and the work-claiming word of
//               allreduce_shared (shm/collectives.h), on its own cache line
//   controls    one RankControl per rank: pid, step counters, op signatures and the futex
//               word waiters sleep on, each on its own cache line
//   data        2 slots of slot_bytes per rank (double buffering by step parity):
//               slot(rank, parity) at data_offset + (rank * 2 + parity) * slot_bytes
//
// Thread safety: a Segment is a mapping; what lives in it is synchronised by the step
// counters in RankControl (shm/sync.h). Ownership: the mapping is unmapped on destruction;
// the name is unlinked by whoever calls unlink_segment() (as soon as every rank attached).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gradwire::shm {

constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;
constexpr uint64_t kSegmentMagic = 0x6772647773686d31ULL;  // "grdwshm1"
constexpr uint32_t kSegmentVersion = 4;

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t ranks;
  uint64_t slot_bytes;
  uint64_t total_bytes;
  // Which pieces of the current allreduce in place on a shared buffer are taken (claim_piece() in
  // shm/collectives.h). Written by every rank (atomic RMW).
  alignas(kCacheLine) std::atomic<uint64_t> claim;
};
static_assert(sizeof(Header) <= kPage, "the header fits its page");

// Written only by its rank, read by all. Each counter on its own cache line.
struct alignas(kCacheLine) RankControl {
  alignas(kCacheLine) std::atomic<int64_t> pid;
  // The last step whose input this rank has published.
  alignas(kCacheLine) std::atomic<uint64_t> posted;
  // The last step whose slice this rank has reduced (large allreduce only).
  alignas(kCacheLine) std::atomic<uint64_t> reduced;
  // What this rank's collective of the step with that parity is (shm/sync.h, op signatures),
  // written before `posted`, so ranks calling different collectives are told so.
  alignas(kCacheLine) std::atomic<uint64_t> signature[2];
  // The signature's argument, compared like it: for an allreduce of a shared buffer, which
  // buffer and where in it (shm/shared_buffers.h); 0 otherwise.
  std::atomic<uint64_t> argument[2];
  // Bumped after every post (posted or reduced) so that waiters can sleep on it with FUTEX_WAIT
  // (shm/sync.cpp); `sleepers` counts the threads of any rank sleeping on it, so a post makes the
  // FUTEX_WAKE system call only when someone sleeps. Written by every rank (atomic RMW).
  alignas(kCacheLine) std::atomic<uint32_t> wake_sequence;
  std::atomic<uint32_t> sleepers;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "futex words must be plain 32-bit atomics");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shm flags need lock-free atomics");

struct Layout {
  int ranks = 0;
  size_t slot_bytes = 0;
  size_t controls_offset = 0;
  size_t data_offset = 0;
  size_t total_bytes = 0;
};

// Pure: the layout for `ranks` ranks with slots of `slot_bytes` (rounded up to a cache line).
Layout compute_layout(int ranks, size_t slot_bytes);

// Pure: "/gradwire-<port>-<pid>-<nonce hex>": the job's rendezvous port (unique per host while the
// job runs), the creating process and a random nonce, so two jobs or communicators never collide.
// A job's segments are the /dev/shm entries starting with segment_prefix(port).
std::string segment_name(int port, int creator_pid, uint64_t nonce);
std::string segment_prefix(int port);  // "gradwire-<port>-" (as listed in /dev/shm)

class Segment {
 public:
  // Creates `name` exclusively and maps it (rank 0). Throws std::runtime_error naming the segment
  // and errno when it exists or cannot be sized (e.g. /dev/shm full).
  static Segment create(const std::string& name, const Layout& layout);
  // Maps the existing `name` and checks its header against `layout`. Throws std::runtime_error
  // (e.g. when the creator runs on another host, or the segment is gone).
  static Segment attach(const std::string& name, const Layout& layout);

  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  const Layout& layout() const { return layout_; }
  const std::string& name() const { return name_; }
  RankControl& control(int rank) const;
  std::atomic<uint64_t>& claim_word() const;
  // Slot `parity` (0 or 1) of `rank`: slot_bytes bytes, 64-byte aligned.
  char* slot(int rank, int parity) const;

 private:
  Segment(std::string name, Layout layout, char* base);
  std::string name_;
  Layout layout_;
  char* base_ = nullptr;
};

// Removes the name (mappings stay valid). Missing names are not an error.
void unlink_segment(const std::string& name);

}  // namespace gradwire::shm
