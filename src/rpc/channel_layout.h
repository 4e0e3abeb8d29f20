// The call channel's layout in shared memory (rpc/call_channel.h), shared by its trainer's end
// (call_channel.cpp) and the server's hub (channel_hub.cpp); internal to src/rpc.
#pragma once

#include <atomic>
#include <cstdint>

#include "rpc/call_channel.h"

namespace gradwire::rpc::channel_layout {

inline constexpr uint64_t kMagic = 0x31306c6e61686377;  // "wchanl01"
inline constexpr uint32_t kFree = 0;
inline constexpr uint32_t kPosted = 1;
inline constexpr uint32_t kAnswered = 2;
inline constexpr uint32_t kTaken = 3;  // the server took the request (Note [hub threads])

// A slot's control word and fields, in the shared region. `state` is the futex both sides wait
// on; the other fields are written by one side before it stores the state that hands the slot
// over (release) and read by the other after it saw that state (acquire).
struct alignas(64) Slot {
  std::atomic<uint32_t> state;  // kFree, kPosted (trainer wrote a request), kTaken, kAnswered
  uint32_t method;
  int64_t deadline_ns;     // the call's deadline, system clock, ns since the epoch
  uint32_t bytes;          // the request's bytes (posted) or the answer's (answered)
  int32_t code;            // the answer's grpc::StatusCode
  uint32_t message_bytes;  // the answer's status message, before its bytes
};

struct alignas(64) Header {
  uint64_t magic;
  std::atomic<int32_t> server_pid;  // written by the server when it attaches
  std::atomic<uint32_t> closed;     // the trainer closed the channel
  Slot slots[kChannelSlots];
};

inline constexpr int64_t kHeaderBytes = 4096;
inline constexpr int64_t kRegionBytes = kHeaderBytes + kChannelSlots * kChannelSlotBytes;
static_assert(sizeof(Header) <= kHeaderBytes, "the channel's header fits its page");

inline Header& header_of(void* base) { return *static_cast<Header*>(base); }
inline Slot& slot_of(void* base, uint64_t index) {
  return header_of(base).slots[index % kChannelSlots];
}
inline char* data_of(void* base, uint64_t index) {
  return static_cast<char*>(base) + kHeaderBytes + (index % kChannelSlots) * kChannelSlotBytes;
}

}  // namespace gradwire::rpc::channel_layout
