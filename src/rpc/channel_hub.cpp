// The server's end of the call channels (rpc/call_channel.h): ChannelHub, its per-trainer groups
// and threads, and the ChannelServer handles.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <system_error>

#include "common/futex.h"
#include "common/process.h"
#include "gradwire/common/error.h"
#include "rpc/call_channel.h"
#include "rpc/channel_layout.h"

namespace gradwire::rpc {

using namespace channel_layout;

// Note [hub threads]: a ChannelHub keeps one group per trainer process: the channels that trainer
// attached to the hub's servers, and the threads serving them. One thread at a time holds the
// group's role: it takes every posted slot of every channel (in each channel's slot order), runs
// the handler and writes the answer, and sleeps on all the channels' next slots at once
// (futex_wait_any) when none is posted. It wakes the trainer once per pass over the channels,
// after answering every slot it found posted: a trainer waiting for a lookup's answers from the
// eight servers of a process is woken once, not once per answer.
//
// A handler about to block (ChannelCall::will_wait) makes its thread wake the answers of its pass
// and give the role up first, to an idle thread of the group or a new one; that thread finishes
// its call, answers it, and then waits idle for the role. So a trainer's Step blocked on server A
// never holds its calls to server B (which other trainers' Steps on A may wait for), and a group
// has as many threads as calls blocked at once, plus one (and one more when a hand-off came while
// a thread that finished its blocked call was not back yet; idle threads are reused). A slot taken is marked kTaken so that
// the role holder, having moved on, never takes it twice. The group ends (its threads with it)
// when the trainer's process is gone or none of its channels is served any more.
//
// Note [busy slots]: a slot's state lives in the trainer's memory, which the trainer may rewrite
// at any time: a slot whose call is still being answered (blocked, on another thread) could be
// posted again and taken again, each time by a new thread. The hub keeps its own record of the
// slots being answered (Channel::busy) and never takes a busy slot, whatever its state says, so a
// channel has at most kChannelSlots calls in its handlers and a group at most that many per
// channel blocked threads. A slot posted while busy is taken once its call has been answered.
struct ChannelHub::Channel {
  at::Tensor region;
  void* base = nullptr;
  ChannelHandler handler;
  int64_t trainer_pid = 0;
  uint64_t next = 0;                  // the next slot to take; only the role holder touches it
  std::atomic<bool> stopping{false};  // detached by its server, or the hub stops
  bool ended = false;                 // no longer served; under the group's mutex
  int running = 0;                    // its calls being answered now; under the group's mutex
  // Slots whose call is being answered now, in the server's memory (Note [busy slots]); under
  // the group's mutex.
  std::array<bool, kChannelSlots> busy{};
};

struct ChannelHub::Group {
  explicit Group(int64_t pid) : trainer_pid(pid) {}
  const int64_t trainer_pid;
  std::mutex mutex;
  std::condition_variable cv;  // the role was given up, a call ended, the group ends
  std::vector<std::shared_ptr<Channel>> channels;  // served
  bool role_taken = false;
  int idle = 0;  // threads waiting for the role
  bool ending = false;
  // Bumped (and woken) when channels come or go or the group ends: the role holder sleeps on it
  // beside the channels' slots.
  std::atomic<uint32_t> changed{0};
};

namespace {

void bump(std::atomic<uint32_t>& word) {
  word.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(word);
}

// Answers the request the role holder took from slot `index` of the channel at `base`, without
// waking the trainer.
void answer_slot(void* base, uint64_t index, const ChannelHandler& handler,
                 const std::function<bool()>& cancelled, const std::function<void()>& will_wait) {
  Slot& slot = slot_of(base, index);
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
  } else if (method != static_cast<uint32_t>(ChannelMethod::kBatch)) {
    status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "unknown method " + std::to_string(method) + " over shared memory");
  } else {
    const std::string request(data_of(base, index), bytes);
    const std::chrono::system_clock::time_point deadline{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(deadline_ns))};
    status = handler(
        ChannelCall{static_cast<ChannelMethod>(method), request, deadline, cancelled, will_wait},
        &answer);
  }
  const size_t answer_bytes = status.ok() && answer ? answer->ByteSizeLong() : 0;
  if (status.ok() && answer_bytes > static_cast<size_t>(kChannelSlotBytes)) {
    status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "an answer of " + std::to_string(answer_bytes) +
                              " bytes does not fit a shared-memory slot of " +
                              std::to_string(kChannelSlotBytes) + " bytes");
  }
  char* data = data_of(base, index);
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
  // The caller wakes the trainer (Note [hub threads]: after the other answers of its pass).
}

}  // namespace

std::unique_ptr<ChannelServer> ChannelHub::attach(SharedRegionCache& cache,
                                                  const v1::SharedBytes& ref,
                                                  ChannelHandler handler) {
  auto channel = std::make_shared<Channel>();
  channel->region = cache.view(ref, {kRegionBytes}, at::kByte, "create_table.channel");
  channel->base = channel->region.data_ptr();
  channel->handler = std::move(handler);
  channel->trainer_pid = ref.pid();
  Header& header = header_of(channel->base);
  if (header.magic != kMagic) {
    throw InvalidArgument("create_table.channel: the region of process " +
                          std::to_string(ref.pid()) + " is not a gradwire call channel");
  }
  header.server_pid.store(static_cast<int32_t>(::getpid()), std::memory_order_release);
  std::shared_ptr<Group> group;
  bool new_group = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Group>& held = groups_[ref.pid()];
    new_group = held == nullptr;
    if (new_group) held = std::make_shared<Group>(ref.pid());
    group = held;
    std::lock_guard<std::mutex> group_lock(group->mutex);
    group->channels.push_back(channel);
  }
  if (new_group) start_thread(group);
  bump(group->changed);
  return std::unique_ptr<ChannelServer>(new ChannelServer(group, channel));
}

int ChannelHub::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_;
}

ChannelHub::~ChannelHub() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& [pid, group] : groups_) {
    std::lock_guard<std::mutex> group_lock(group->mutex);
    group->ending = true;
    for (auto& channel : group->channels) {
      channel->stopping.store(true);
      channel->ended = true;
    }
    group->channels.clear();
    group->cv.notify_all();
    bump(group->changed);
  }
  groups_.clear();
  threads_ended_.wait(lock, [this] { return threads_ == 0; });
}

void ChannelHub::start_thread(const std::shared_ptr<Group>& group) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++threads_;
  }
  // Detached: the hub's destructor waits for threads_ instead of joining (threads end and start
  // on their own as handlers block).
  try {
    std::thread([this, group] { run(this, group); }).detach();
  } catch (const std::system_error&) {
    // No thread to be had: uncounted again, so the destructor does not wait for it. The role
    // stays free: the group's next thread back from a blocked call takes it.
    std::lock_guard<std::mutex> lock(mutex_);
    --threads_;
    threads_ended_.notify_all();
  }
}

void ChannelHub::run(ChannelHub* hub, std::shared_ptr<Group> group) {
  ::pthread_setname_np(::pthread_self(), "gw-ps-channels");
  {
    std::unique_lock<std::mutex> lock(group->mutex);
    for (;;) {
      ++group->idle;
      group->cv.wait(lock, [&] { return !group->role_taken || group->ending; });
      --group->idle;
      if (group->ending) break;
      group->role_taken = true;
      lock.unlock();
      hub->serve(group);  // returns without the role
      lock.lock();
    }
  }
  group.reset();
  std::lock_guard<std::mutex> lock(hub->mutex_);
  --hub->threads_;
  hub->threads_ended_.notify_all();
}

void ChannelHub::serve(const std::shared_ptr<Group>& group_ptr) {
  Group& group = *group_ptr;
  bool handed_off = false;
  // Slots answered in this pass over the channels, whose trainer is woken after the pass.
  std::vector<std::atomic<uint32_t>*> answered;
  const auto wake_answered = [&] {
    for (std::atomic<uint32_t>* state : answered) futex_wake_all(*state);
    answered.clear();
  };
  // Gives the role to an idle thread of the group, or a new one (Note [hub threads]).
  const std::function<void()> will_wait = [&] {
    if (handed_off) return;
    handed_off = true;
    wake_answered();
    bool start = false;
    {
      std::lock_guard<std::mutex> lock(group.mutex);
      group.role_taken = false;
      start = group.idle == 0 && !group.ending;
    }
    group.cv.notify_all();
    if (start) start_thread(group_ptr);
  };
  std::vector<std::shared_ptr<Channel>> channels;
  std::vector<FutexWaiter> waiters;
  for (;;) {
    const uint32_t changed = group.changed.load(std::memory_order_acquire);
    {
      std::lock_guard<std::mutex> lock(group.mutex);
      if (group.ending) break;
      auto& held = group.channels;
      for (auto it = held.begin(); it != held.end();) {
        Channel& channel = **it;
        const bool gone = channel.stopping.load() ||
                          header_of(channel.base).closed.load(std::memory_order_acquire) != 0;
        if (gone) channel.ended = true;
        it = gone ? held.erase(it) : std::next(it);
      }
      channels = held;
    }
    if (channels.empty()) {
      if (end_group(group, false)) break;
      continue;
    }
    bool served = false;
    for (const auto& channel : channels) {
      Slot& slot = slot_of(channel->base, channel->next);
      if (slot.state.load(std::memory_order_acquire) != kPosted) continue;
      const size_t slot_index = static_cast<size_t>(channel->next % kChannelSlots);
      {
        std::lock_guard<std::mutex> lock(group.mutex);
        if (channel->ended || channel->busy[slot_index]) continue;  // Note [busy slots]
        ++channel->running;
        channel->busy[slot_index] = true;
      }
      const uint64_t index = channel->next++;
      slot.state.store(kTaken, std::memory_order_release);
      Channel* const raw = channel.get();
      answer_slot(
          channel->base, index, channel->handler,
          [raw] {
            return raw->stopping.load() ||
                   header_of(raw->base).closed.load(std::memory_order_acquire) != 0 ||
                   process_gone(raw->trainer_pid);
          },
          will_wait);
      {
        std::lock_guard<std::mutex> lock(group.mutex);
        --channel->running;
        channel->busy[slot_index] = false;
      }
      group.cv.notify_all();
      // A blocked call answered on a thread that gave the role up: the role holder may be asleep
      // beside a slot posted while this one was busy.
      if (handed_off) bump(group.changed);
      served = true;
      if (handed_off) {  // this thread no longer serves the pass: its own answer is woken now
        futex_wake_all(slot.state);
        return;
      }
      answered.push_back(&slot.state);
    }
    wake_answered();
    if (served) continue;
    waiters.clear();
    bool posted = false;
    for (const auto& channel : channels) {
      auto& state = slot_of(channel->base, channel->next).state;
      waiters.push_back({&state, state.load(std::memory_order_acquire)});
      bool busy = false;
      {
        std::lock_guard<std::mutex> lock(group.mutex);
        busy = channel->busy[static_cast<size_t>(channel->next % kChannelSlots)];
      }
      // A busy slot posted again waits for its call's answer (Note [busy slots]), not a pass.
      posted = posted || (waiters.back().expected == kPosted && !busy);
    }
    if (posted) continue;
    waiters.push_back({&group.changed, changed});
    if (!futex_wait_any(waiters, kLivenessSlice) && process_gone(group.trainer_pid)) {
      end_group(group, true);
      break;
    }
  }
  std::lock_guard<std::mutex> lock(group.mutex);
  group.role_taken = false;
}

bool ChannelHub::end_group(Group& group, bool trainer_gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> group_lock(group.mutex);
  if (!trainer_gone && !group.channels.empty()) return false;  // one came meanwhile
  group.ending = true;
  for (auto& channel : group.channels) channel->ended = true;
  group.channels.clear();
  const auto held = groups_.find(group.trainer_pid);
  if (held != groups_.end() && held->second.get() == &group) groups_.erase(held);
  group.cv.notify_all();
  return true;
}

ChannelServer::ChannelServer(std::shared_ptr<ChannelHub::Group> group,
                             std::shared_ptr<ChannelHub::Channel> channel)
    : group_(std::move(group)), channel_(std::move(channel)) {}

ChannelServer::~ChannelServer() {
  stop();
  ChannelHub::Group& group = *group_;
  {
    std::unique_lock<std::mutex> lock(group.mutex);
    group.cv.wait(lock, [this] { return channel_->running == 0; });
    if (!channel_->ended) {
      auto& held = group.channels;
      held.erase(std::remove(held.begin(), held.end(), channel_), held.end());
      channel_->ended = true;
    }
  }
  bump(group.changed);
}

void ChannelServer::stop() {
  channel_->stopping.store(true);
  bump(group_->changed);
}

bool ChannelServer::ended() const {
  std::lock_guard<std::mutex> lock(group_->mutex);
  return channel_->ended || channel_->stopping.load();
}

}  // namespace gradwire::rpc
