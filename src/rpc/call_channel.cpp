// The trainer's end of a call channel (rpc/call_channel.h): ChannelClient. The server's end is
// channel_hub.cpp; the layout they share, channel_layout.h.
#include "rpc/call_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/futex.h"
#include "common/process.h"
#include "gradwire/common/error.h"
#include "rpc/channel_layout.h"

namespace gradwire::rpc {

using namespace channel_layout;

namespace {

using Clock = std::chrono::steady_clock;

int64_t to_ns(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

}  // namespace

ChannelClient::ChannelClient(SharedRegions& regions, std::string address)
    : address_(std::move(address)), region_(regions.allocate({kRegionBytes}, at::kByte)) {
  base_ = region_.data_ptr();
  header_of(base_).magic = kMagic;
  const auto where = regions.find(region_);
  GRADWIRE_CHECK(where.has_value());
  reference_ = *where;
}

ChannelClient::~ChannelClient() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!pending_.empty()) finish_locked(pending_.begin()->first, SteadyTime::max());
  Header& header = header_of(base_);
  header.closed.store(1, std::memory_order_release);
  for (uint64_t i = 0; i < kChannelSlots; ++i) futex_wake_all(slot_of(base_, i).state);
}

void ChannelClient::attached() {
  std::lock_guard<std::mutex> lock(mutex_);
  server_pid_ = header_of(base_).server_pid.load(std::memory_order_acquire);
  attached_ = server_pid_ > 0;
}

bool ChannelClient::usable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return attached_ && !broken_;
}

uint64_t ChannelClient::start(ChannelMethod method, const google::protobuf::Message& request,
                              SystemTime deadline, int64_t answer_bytes,
                              google::protobuf::Message* response, grpc::Status* status) {
  const size_t bytes = request.ByteSizeLong();
  if (bytes > static_cast<size_t>(kChannelSlotBytes) || answer_bytes > kChannelSlotBytes) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!attached_ || broken_) return 0;
  const uint64_t ticket = next_;
  const uint64_t index = ticket - 1;
  // The slot's previous call must have been answered to its caller first.
  if (ticket > kChannelSlots && pending_.count(ticket - kChannelSlots) != 0) {
    finish_locked(ticket - kChannelSlots, SteadyTime::max());
  }
  Slot& slot = slot_of(base_, index);
  if (broken_ || slot.state.load(std::memory_order_acquire) != kFree) return 0;
  if (!request.SerializeToArray(data_of(base_, index), static_cast<int>(bytes))) return 0;
  slot.method = static_cast<uint32_t>(method);
  slot.deadline_ns = to_ns(deadline);
  slot.bytes = static_cast<uint32_t>(bytes);
  slot.state.store(kPosted, std::memory_order_release);
  futex_wake_all(slot.state);
  const auto left = deadline - std::chrono::system_clock::now();
  pending_[ticket] = {response, status,
                      Clock::now() + std::chrono::duration_cast<Clock::duration>(left)};
  ++next_;
  return ticket;
}

bool ChannelClient::finish(uint64_t ticket, SteadyTime limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  return finish_locked(ticket, limit);
}

void ChannelClient::cancel(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.count(ticket) == 0) return;
  fail_locked(ticket, grpc::Status(grpc::StatusCode::CANCELLED,
                                   "the call over shared memory was given up by the caller"));
}

void ChannelClient::fail_locked(uint64_t ticket, grpc::Status status) {
  auto found = pending_.find(ticket);
  *found->second.status = std::move(status);
  pending_.erase(found);
  broken_ = true;  // the server may still answer into the slot
}

bool ChannelClient::finish_locked(uint64_t ticket, SteadyTime limit) {
  auto found = pending_.find(ticket);
  if (found == pending_.end()) return true;
  const Pending call = found->second;
  const uint64_t index = ticket - 1;
  Slot& slot = slot_of(base_, index);
  const SteadyTime until = std::min(limit, call.deadline);
  const SteadyTime started = Clock::now();
  for (uint32_t state = slot.state.load(std::memory_order_acquire); state != kAnswered;
       state = slot.state.load(std::memory_order_acquire)) {
    const SteadyTime now = Clock::now();
    if (now >= until) {
      if (now < call.deadline) return false;
      fail_locked(
          ticket,
          grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                       "no answer over shared memory from the server at " + address_ +
                           " (process " + std::to_string(server_pid_) + ") within " +
                           format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(
                               now - started))));
      return true;
    }
    const auto slice = std::min<Clock::duration>(until - now, kLivenessSlice);
    if (!futex_wait(slot.state, state, slice) && process_gone(server_pid_)) {
      fail_locked(ticket, grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                       "the parameter server at " + address_ + " (process " +
                                           std::to_string(server_pid_) +
                                           " on this host) exited before it answered"));
      return true;
    }
  }
  const int32_t code = slot.code;
  const uint32_t message_bytes = slot.message_bytes;
  const uint32_t bytes = slot.bytes;
  const char* data = data_of(base_, index);
  if (code < 0 || code > grpc::StatusCode::UNAUTHENTICATED ||
      int64_t{message_bytes} + bytes > kChannelSlotBytes) {
    fail_locked(ticket, grpc::Status(grpc::StatusCode::INTERNAL,
                                     "a malformed answer over shared memory from " + address_));
    return true;
  }
  if (code != grpc::StatusCode::OK) {
    *call.status =
        grpc::Status(static_cast<grpc::StatusCode>(code), std::string(data, message_bytes));
  } else if (!call.response->ParseFromArray(data + message_bytes, static_cast<int>(bytes))) {
    *call.status = grpc::Status(grpc::StatusCode::INTERNAL, "an answer over shared memory from " +
                                                                address_ + " does not parse as " +
                                                                call.response->GetTypeName());
  } else {
    *call.status = grpc::Status::OK;
  }
  slot.state.store(kFree, std::memory_order_release);
  pending_.erase(found);
  return true;
}

}  // namespace gradwire::rpc
