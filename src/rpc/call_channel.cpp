#include "rpc/call_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "gradwire/common/error.h"
#include "gradwire/common/futex.h"
#include "gradwire/common/process.h"

namespace gradwire::rpc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x31306c6e61686377;  // "wchanl01"
constexpr uint32_t kFree = 0;
constexpr uint32_t kPosted = 1;
constexpr uint32_t kAnswered = 2;

// A slot's control word and fields, in the shared region. `state` is the futex both sides wait
// on; the other fields are written by one side before it stores the state that hands the slot
// over (release) and read by the other after it saw that state (acquire).
struct alignas(64) Slot {
  std::atomic<uint32_t> state;  // kFree, kPosted (trainer wrote a request), kAnswered
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

constexpr int64_t kHeaderBytes = 4096;
constexpr int64_t kRegionBytes = kHeaderBytes + kChannelSlots * kChannelSlotBytes;
static_assert(sizeof(Header) <= kHeaderBytes, "the channel's header fits its page");

Header& header_of(void* base) { return *static_cast<Header*>(base); }
Slot& slot_of(void* base, uint64_t index) { return header_of(base).slots[index % kChannelSlots]; }
char* data_of(void* base, uint64_t index) {
  return static_cast<char*>(base) + kHeaderBytes + (index % kChannelSlots) * kChannelSlotBytes;
}

int64_t to_ns(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

}  // namespace

// ---- the trainer's end ----

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
  while (slot.state.load(std::memory_order_acquire) != kAnswered) {
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
    if (!futex_wait(slot.state, kPosted, slice) && process_gone(server_pid_)) {
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

// ---- the server's end ----

ChannelServer::ChannelServer(SharedRegionCache& cache, const v1::SharedBytes& ref,
                             ChannelHandler handler)
    : region_(cache.view(ref, {kRegionBytes}, at::kByte, "create_table.channel")),
      trainer_pid_(ref.pid()),
      handler_(std::move(handler)) {
  base_ = region_.data_ptr();
  Header& header = header_of(base_);
  if (header.magic != kMagic) {
    throw InvalidArgument("create_table.channel: the region of process " +
                          std::to_string(ref.pid()) + " is not a gradwire call channel");
  }
  header.server_pid.store(static_cast<int32_t>(::getpid()), std::memory_order_release);
  thread_ = std::thread([this] { serve(); });
}

ChannelServer::~ChannelServer() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void ChannelServer::stop() {
  stop_.store(true);
  for (uint64_t i = 0; i < kChannelSlots; ++i) futex_wake_all(slot_of(base_, i).state);
}

void ChannelServer::serve() {
  Header& header = header_of(base_);
  const auto gone = [this, &header] {
    return stop_.load() || header.closed.load(std::memory_order_acquire) != 0 ||
           process_gone(trainer_pid_);
  };
  std::string request;
  for (uint64_t index = 0; !stop_.load() && header.closed.load() == 0;) {
    Slot& slot = slot_of(base_, index);
    const uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state != kPosted) {
      if (!futex_wait(slot.state, state, kLivenessSlice) && gone()) break;
      continue;
    }
    // Each shared field is read once: the trainer's process could change them meanwhile.
    const uint32_t method = slot.method;
    const uint32_t bytes = slot.bytes;
    const int64_t deadline_ns = slot.deadline_ns;
    grpc::Status status;
    std::unique_ptr<google::protobuf::Message> answer;
    if (bytes > kChannelSlotBytes) {
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "a request of " + std::to_string(bytes) +
                                " bytes in a shared-memory slot of " +
                                std::to_string(kChannelSlotBytes));
    } else if (method < static_cast<uint32_t>(ChannelMethod::kLookup) ||
               method > static_cast<uint32_t>(ChannelMethod::kStep)) {
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "unknown method " + std::to_string(method) + " over shared memory");
    } else {
      request.assign(data_of(base_, index), bytes);
      const std::chrono::system_clock::time_point deadline{
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::nanoseconds(deadline_ns))};
      status = handler_(ChannelCall{static_cast<ChannelMethod>(method), request, deadline, gone},
                        &answer);
    }
    const size_t answer_bytes = status.ok() && answer ? answer->ByteSizeLong() : 0;
    if (status.ok() && answer_bytes > static_cast<size_t>(kChannelSlotBytes)) {
      status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "an answer of " + std::to_string(answer_bytes) +
                                " bytes does not fit a shared-memory slot of " +
                                std::to_string(kChannelSlotBytes) + " bytes");
    }
    char* data = data_of(base_, index);
    if (status.ok()) {
      if (answer) answer->SerializeToArray(data, static_cast<int>(answer_bytes));
      slot.message_bytes = 0;
      slot.bytes = static_cast<uint32_t>(answer_bytes);
    } else {
      const std::string& message = status.error_message();
      const size_t message_bytes = std::min(message.size(), size_t{4096});
      std::memcpy(data, message.data(), message_bytes);
      slot.message_bytes = static_cast<uint32_t>(message_bytes);
      slot.bytes = 0;
    }
    slot.code = static_cast<int32_t>(status.error_code());
    slot.state.store(kAnswered, std::memory_order_release);
    futex_wake_all(slot.state);
    ++index;
  }
  ended_.store(true);
}

}  // namespace gradwire::rpc
