// Hostile shared references, batches and attempt numbers on both transports (issue 37): a
// deterministic fuzz (fixed seeds) of an in-process server that shares memory with this process
// (probed) and serves its call channel. Each request goes over gRPC with the token and, if Lookup,
// Push, Step or Batch, over the channel too; a lookup, push or step sent alone travels as the one
// part of a Batch, the only call that carries them (docs/ps.md "Routes").
// - References, in Lookup.rows_into, Push.grads, Assign.rows and Batch parts: the server's own
//   memory (as CreateTable and a channel Step name it, under another descriptor, a server_memory
//   region made here), huge sparse sealed regions, descriptors swapped for another file after the
//   reference was made (also while the server opens them), wrong keys, pids and descriptors,
//   offsets out of bounds or misaligned, mutations of a valid reference, the caller's channel.
// - Batches: around and above kMaxBatchParts parts, lookups whose answers together pass the
//   budget, shapes that lie, random mixes. Attempts: restart and incarnation at 0, 1, small
//   jumps, the limits, INT64_MAX, UINT64_MAX, negative and random, in Push, Step, Resume, Batch.
// Expectations: every call completes in time, OK or a clear refusal (INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED, ABORTED, NOT_FOUND, FAILED_PRECONDITION), refused where it must be, with a
// message of at most 1 KiB. Afterwards the server maps at most --max-shared-bytes of this
// process's regions (/proc/self/maps; VmSize grows by less than 4 GiB), answers, the victim (a
// trained sync dense table, its rows in the server's memory) is bit for bit as it was, at its step
// and attempt (an empty step of attempt 0 is applied), and the server stops within 2 s.
#include "server_fuzz_hostile.h"

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <random>
#include <thread>

#include "ps/server/service.h"

namespace gradwire::ps::server_fuzz_hostile_test {

// The files a trainer can put at a reference's descriptor after making it (dup2): for a region of
// `key` and `bytes`, a descriptor to swap in.
struct Replacement {
  const char* what;
  int (*open)(uint64_t key, off_t bytes);
};
std::vector<Replacement> replacements() {
  return {
      {"another memfd", [](uint64_t, off_t bytes) { return make_memfd("other", bytes, true); }},
      {"an unsealed memfd of the region's name",
       [](uint64_t key, off_t bytes) { return make_memfd(region_name(key), bytes, false); }},
      {"a sealed memfd of the region's name, 1 TiB",
       [](uint64_t key, off_t) { return make_memfd(region_name(key), off_t{1} << 40, true); }},
      {"a regular file",
       [](uint64_t, off_t bytes) {
         char path[] = "/tmp/gradwire-hostile-XXXXXX";
         const int fd = ::mkstemp(path);
         return fd >= 0 && ::unlink(path) == 0 && ::ftruncate(fd, bytes) == 0 ? fd : -1;
       }},
      {"a pipe",
       [](uint64_t, off_t) {
         int ends[2];
         return ::pipe(ends) == 0 && ::close(ends[1]) == 0 ? ends[0] : -1;
       }},
      {"/dev/zero", [](uint64_t, off_t) { return ::open("/dev/zero", O_RDWR | O_CLOEXEC); }},
  };
}

TEST_F(HostileFuzz, SharedReferencesAreRefusedOnBothTransports) {
  std::mt19937_64 rng(0x5eed0037);
  const int32_t self = static_cast<int32_t>(::getpid());
  // The valid reference, changed by `set` to each of `values`.
  const auto vary = [&](const std::string& category, const auto& values, auto set, Expect expect) {
    for (const auto value : values) {
      v1::SharedBytes ref = valid_;
      set(ref, value);
      send_ref(category, std::to_string(value), ref, expect);
    }
  };
  const auto set_offset = [](v1::SharedBytes& ref, int64_t value) { ref.set_offset(value); };
  // The valid reference is taken, at aligned offsets inside the region.
  vary("valid offset", std::vector<int64_t>{0, 4, 16, 64 * kDim * 4 - 32}, set_offset, Expect::kOk);
  // The server's own memory: as named, at another offset, under another descriptor of it (the
  // in-process server's descriptors are this process's), and a server_memory region of this
  // process that this server never named.
  std::vector<v1::SharedBytes> own = own_refs_;
  std::vector<int> reopened;
  for (v1::SharedBytes moved : own_refs_) {
    moved.set_offset(16);
    own.push_back(moved);
    reopened.push_back(::open(("/proc/self/fd/" + std::to_string(moved.fd())).c_str(), O_RDONLY));
    ASSERT_GE(reopened.back(), 0);
    moved.set_fd(reopened.back());
    own.push_back(moved);
  }
  rpc::SharedRegions servers_memory(/*server_memory=*/true);
  const at::Tensor other_rows = servers_memory.allocate({16, kDim}, at::kFloat);
  own.push_back(*servers_memory.find(other_rows));
  for (size_t i = 0; i < own.size(); ++i) {
    send_ref("own", "server memory #" + std::to_string(i), own[i], Expect::kRefused);
  }
  for (const int fd : reopened) ::close(fd);
  // Huge sparse sealed regions (above the region cap: refused, never mapped), and regions at the
  // cap, more than the per-process and total caps allow together (taken while they fit).
  constexpr off_t kCap = kRegionCap;
  for (const off_t bytes :
       {off_t{16} << 40, off_t{1} << 40, off_t{64} << 30, off_t{8} << 30, off_t{1} << 30, 2 * kCap,
        kCap + 4096, kCap + 1, kCap, kCap, kCap, kCap - 4096, kCap}) {
    v1::SharedBytes ref;
    ref.set_key(rng() | 1);
    ref.set_pid(self);
    ref.set_fd(make_memfd(region_name(ref.key()), bytes, true));
    ASSERT_GE(ref.fd(), 0) << bytes;
    send_ref("huge", std::to_string(bytes) + " bytes", ref,
             bytes > kRegionCap ? Expect::kRefused : Expect::kAny);
    v1::PushRequest held;  // a sync push keeps its gradients' region mapped until its step
    held.set_table("fz_sync");
    *held.mutable_ids() = ids({1, 3});
    *held.mutable_grads() = shared_rows(ref, 2);
    for (const Transport transport : kBoth) {
      check("huge", transport, std::to_string(bytes) + " bytes held", "Push", held,
            bytes > kRegionCap ? Expect::kRefused : Expect::kAny);
    }
    ::close(ref.fd());
  }
  expect_within_caps();
  v1::StepRequest release;  // the held pushes (zeros) are applied and their regions let go
  release.set_table("fz_sync");
  expect_ok(Transport::kGrpc, "Step", release);
  // Descriptors swapped after the reference was made: before the server saw the region (refused)
  // and after it mapped it (it keeps its mapping of the trainer's region).
  for (const Replacement& replacement : replacements()) {
    for (const bool seen : {false, true}) {
      const at::Tensor region = own_region(16);
      const v1::SharedBytes ref = *caller_->regions().find(region);
      if (seen) send_ref("swapped", "the region, before the swap", ref, Expect::kOk);
      const int other = replacement.open(ref.key(), 16 * kDim * 4);
      ASSERT_GE(other, 0) << replacement.what;
      ASSERT_EQ(::dup2(other, ref.fd()), ref.fd());
      ::close(other);
      send_ref("swapped", std::string(replacement.what) + (seen ? " after use" : ""), ref,
               seen ? Expect::kAny : Expect::kRefused);
    }
  }
  // Swapped back and forth while the server checks and opens them (issue 37, finding 7: the
  // server pins the file with O_PATH before it opens it).
  {
    int ends[2];
    ASSERT_EQ(::pipe(ends), 0);
    std::vector<at::Tensor> regions;
    std::vector<std::pair<int, int>> swaps;  // (reference's fd, a saved descriptor of its region)
    for (int i = 0; i < 16; ++i) {
      regions.push_back(own_region(16));
      const int fd = caller_->regions().find(regions.back())->fd();
      swaps.emplace_back(fd, ::dup(fd));
    }
    std::atomic<bool> stop{false};
    std::thread racer([&] {
      while (!stop.load()) {
        for (const auto& [fd, saved] : swaps) {
          ::dup2(ends[0], fd);
          ::dup2(saved, fd);
        }
      }
    });
    for (const at::Tensor& region : regions) {
      send_ref("swapped", "a descriptor swapped meanwhile", *caller_->regions().find(region),
               Expect::kAny);
    }
    stop = true;
    racer.join();
    for (const auto& [fd, saved] : swaps) ::close(saved);
    ::close(ends[0]);
    ::close(ends[1]);
  }
  // Wrong keys, pids and descriptors, and offsets out of bounds or misaligned.
  const uint64_t key = valid_.key();
  vary(
      "wrong key",
      std::vector<uint64_t>{0, key ^ 1, key + 1, ~key, key ^ (uint64_t{1} << 63),
                            own_refs_[0].key(), rng()},
      [](v1::SharedBytes& ref, uint64_t value) { ref.set_key(value); }, Expect::kRefused);
  constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
  vary(
      "wrong pid", std::vector<int32_t>{0, -1, 1, ::getppid(), -self, kI32Max, -kI32Max - 1},
      [](v1::SharedBytes& ref, int32_t value) { ref.set_pid(value); }, Expect::kRefused);
  vary(
      "wrong fd", std::vector<int32_t>{-1, 0, 1, 2, valid_.fd() + 1000, own_refs_[0].fd(), kI32Max},
      [](v1::SharedBytes& ref, int32_t value) { ref.set_fd(value); }, Expect::kRefused);
  vary("offset",
       std::vector<int64_t>{-4, -1, 1, 2, 3, 64 * kDim * 4 - 28, 64 * kDim * 4, kI64Max, kI64Min,
                            int64_t{1} << 62},
       set_offset, Expect::kRefused);
  // Random mutations of the valid reference: one field, changed by a bit, a step, or at random.
  for (int i = 0; i < 300; ++i) {
    v1::SharedBytes ref = valid_;
    const uint64_t how = rng() % 3;
    const auto change = [&](int64_t value) {
      return how == 0   ? value ^ (int64_t{1} << (rng() % 63))
             : how == 1 ? value + static_cast<int64_t>(rng() % 17) - 8
                        : static_cast<int64_t>(rng());
    };
    const uint64_t field = rng() % 4;
    if (field == 0) ref.set_key(static_cast<uint64_t>(change(static_cast<int64_t>(ref.key()))));
    if (field == 1) ref.set_pid(static_cast<int32_t>(change(ref.pid())));
    if (field == 2) ref.set_fd(static_cast<int32_t>(change(ref.fd())));
    if (field == 3) ref.set_offset(change(ref.offset()));
    send_ref("mutated", ref.ShortDebugString(), ref, Expect::kAny);
  }
  // The caller's own channel named as data: its slots' bytes (written before an answer is), then,
  // over gRPC, its control words (the trainer breaks its own channel; the server stays sound).
  for (const int64_t offset :
       {int64_t{4096} + kMiB / 2, int64_t{4096} + 3 * kMiB, int64_t{0}, int64_t{64}}) {
    v1::SharedBytes ref = caller_->channel_ref();
    ref.set_offset(offset);
    send_ref("own channel", "offset " + std::to_string(offset), ref, Expect::kAny, offset < 4096);
  }
  v1::CreateTableResponse created;  // a new channel for the checks
  ASSERT_TRUE(caller_->create(table_config("fz_async", kRows, kDim), &created, true).ok());
  own_mapped_ += 4096 + rpc::kChannelSlots * rpc::kChannelSlotBytes;
  expect_unharmed();
}

// A batch of `parts` parts of `kind`: one-id lookups of fz_async, one-id pushes to it, steps of
// fz_sync at step -1 (finished: nothing changes), or the three in turn ("mixed").
v1::BatchRequest parts_batch(const std::string& kind, int parts) {
  v1::LookupRequest lookup;
  lookup.set_table("fz_async");
  v1::PushRequest push;
  push.set_table("fz_async");
  *push.mutable_grads() = rpc::encode_tensor(at::ones({1, kDim}));
  v1::StepRequest step;
  step.set_table("fz_sync");
  step.set_step(-1);
  std::vector<v1::Tensor> one_id;
  for (int64_t id = 0; id < kRows; ++id) one_id.push_back(ids({id}));
  v1::BatchRequest batch;
  for (int i = 0; i < parts; ++i) {
    const int which = kind == "lookups" ? 0 : kind == "pushes" ? 1 : kind == "steps" ? 2 : i % 3;
    *lookup.mutable_ids() = *push.mutable_ids() = one_id[static_cast<size_t>(i % kRows)];
    if (which == 0) *batch.add_lookups() = lookup;
    if (which == 1) *batch.add_pushes() = push;
    if (which == 2) *batch.add_steps() = step;
  }
  return batch;
}

TEST_F(HostileFuzz, BatchesAreBoundedOnBothTransports) {
  const auto async_rows = [&] { return rows_of("fz_async"); };  // a refused batch keeps them
  // Parts around and above kMaxBatchParts: refused before any part runs.
  for (const Transport transport : kBoth) {
    for (const int parts :
         {1, 1000, kMaxBatchParts - 1, kMaxBatchParts, kMaxBatchParts + 1, 5000, 20000}) {
      for (const char* kind : {"lookups", "pushes", "steps", "mixed"}) {
        const bool over = parts > kMaxBatchParts;
        const std::string before = async_rows();
        check("many parts", transport, std::to_string(parts) + " " + kind, "Batch",
              parts_batch(kind, parts), over ? Expect::kExhausted : Expect::kOk);
        if (over) EXPECT_EQ(async_rows(), before) << "a refused batch changed a table";
      }
    }
  }
  // Lookups of fz_wide (256-byte rows) whose answers together pass the budget, after a push that
  // a refused batch must not apply; and shapes that lie about the ids they hold.
  for (const Transport transport : kBoth) {
    const int64_t limit =
        std::min(kMaxMessageBytes,
                 transport == Transport::kGrpc ? kMaxMessageBytes : rpc::kChannelSlotBytes);
    // Parts of how many ids, answered as float32 but the last three (float16, bfloat16, float16).
    const int64_t max = kMaxBatchParts - 1;
    const std::vector<int64_t> parts = {1, 2, 1, 3, 64, 1000, max, max, 1, 1, 16, 8, 40};
    const std::vector<int64_t> counts = {4096, 4096,   8192,   3000, 100,  9,   3,
                                         1,    100000, 200000, 512,  2000, 1000};
    for (size_t row = 0; row < parts.size(); ++row) {
      const int64_t dtype = row + 3 < parts.size() ? v1::FLOAT32
                            : row % 2              ? v1::BFLOAT16
                                                   : v1::FLOAT16;
      const int64_t count = counts[row];
      v1::BatchRequest batch = parts_batch("pushes", 1);
      v1::LookupRequest lookup;
      lookup.set_table("fz_wide");
      lookup.set_rows_dtype(static_cast<v1::DType>(dtype));
      *lookup.mutable_ids() = rpc::encode_tensor(at::arange(count, at::kLong) % 1024);
      for (int64_t i = 0; i < parts[row]; ++i) *batch.add_lookups() = lookup;
      const int64_t bytes = parts[row] * count * kWideDim * (dtype == v1::FLOAT32 ? 4 : 2);
      const Expect expect = bytes > limit             ? Expect::kExhausted
                            : bytes <= limit / 10 * 9 ? Expect::kOk
                                                      : Expect::kAny;
      const std::string before = async_rows();
      check("large answers", transport,
            std::to_string(parts[row]) + " x " + std::to_string(count) + " ids", "Batch", batch,
            expect);
      if (bytes > limit) EXPECT_EQ(async_rows(), before) << "a refused batch changed a table";
    }
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {int64_t{1} << 40}, {int64_t{1} << 32, int64_t{1} << 32}, {-5}, {}, {0}, {kI64Max}}) {
      v1::BatchRequest batch;
      v1::LookupRequest* lookup = batch.add_lookups();
      lookup->set_table("fz_wide");
      lookup->mutable_ids()->set_dtype(v1::INT64);
      for (const int64_t size : shape) lookup->mutable_ids()->add_shape(size);
      lookup->mutable_ids()->set_data(std::string(8, '\0'));
      check("lying shapes", transport, lookup->ids().ShortDebugString(), "Batch", batch,
            Expect::kRefused);
    }
  }
  // Random mixes of pushes, steps and lookups, mostly valid (so that many run), now and then an
  // odd part: an unknown table, ids out of range, a step or attempt out of turn, an unknown
  // answer dtype, a mutated shared reference; some lookups of 2,000 rows, some near the part cap.
  std::mt19937_64 rng(0xba7c4);
  const std::vector<std::string> tables = {"fz_async", "fz_wide", "fz_sync", "no_such_table"};
  const auto odd = [&] { return rng() % 50 == 0; };
  const auto pick_ids = [&](const std::string& table, int64_t count, bool in_range) {
    std::vector<int64_t> values;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t rows = table == "fz_wide" ? 1024 : kRows;
      values.push_back(in_range ? static_cast<int64_t>(rng() % rows)
                                : static_cast<int64_t>(rng() % (rows + 4)) - 2);
    }
    return ids(values);
  };
  const auto odd_ref = [&] {
    v1::SharedBytes ref = valid_;
    ref.set_offset(static_cast<int64_t>(rng() % 2048) - 16);
    if (rng() % 2) ref.set_key(ref.key() ^ (uint64_t{1} << (rng() % 64)));
    return ref;
  };
  for (int i = 0; i < 300; ++i) {
    v1::BatchRequest batch;
    const int lookups = rng() % 8 == 0 ? kMaxBatchParts - 30 + static_cast<int>(rng() % 40)
                                       : static_cast<int>(rng() % 40);
    for (int p = static_cast<int>(rng() % 40); p > 0; --p) {
      const bool hostile = odd();
      v1::PushRequest* push = batch.add_pushes();
      push->set_table(tables[rng() % (hostile ? 4 : 2)]);
      const int64_t count = 1 + static_cast<int64_t>(rng() % 4);
      *push->mutable_ids() = pick_ids(push->table(), count, !hostile);
      const int64_t dim = push->table() == "fz_wide" ? kWideDim : kDim;
      *push->mutable_grads() = dim == kDim && rng() % 8 == 0
                                   ? shared_rows(hostile ? odd_ref() : valid_, count)
                                   : rpc::encode_tensor(at::full({count, dim}, 0.01f));
      if (hostile) push->set_step(static_cast<int64_t>(rng() % 4) - 1);
      if (hostile) *push->mutable_attempt() = attempt(static_cast<int64_t>(rng() % 3) - 1, 0);
    }
    for (int p = static_cast<int>(rng() % 10); p > 0; --p) {
      const bool hostile = odd();
      v1::StepRequest* step = batch.add_steps();
      step->set_table(hostile ? tables[rng() % 4] : rng() % 2 ? "fz_sync" : "fz_async");
      step->set_step(hostile || step->table() == "fz_async" ? static_cast<int64_t>(rng() % 5) - 1
                                                            : -1);
      *step->mutable_attempt() = attempt(1, 0);  // the newest an odd push can claim
    }
    for (int p = 0; p < lookups; ++p) {
      const bool hostile = odd();
      v1::LookupRequest* lookup = batch.add_lookups();
      lookup->set_table(tables[rng() % (hostile ? 4 : 3)]);
      const int64_t count = lookup->table() == "fz_wide" && rng() % 16 == 0 ? 2000 : 1 + rng() % 8;
      *lookup->mutable_ids() = pick_ids(lookup->table(), count, !hostile);
      static constexpr int kDtypes[] = {0, 1, 3, 4, 2, 99};
      lookup->set_rows_dtype(static_cast<v1::DType>(kDtypes[rng() % (hostile ? 6 : 4)]));
      if (lookup->table() != "fz_wide" && rng() % 10 == 0) {
        lookup->set_rows_dtype(v1::FLOAT32);
        *lookup->mutable_rows_into() = hostile ? odd_ref() : valid_;
      }
    }
    check("random batch", kBoth[i % 2], "#" + std::to_string(i), "Batch", batch, Expect::kAny);
  }
  expect_unharmed();
}

// Attempt numbers (Note [attempt limits], ps/core/table_shard.h) in every call that carries one,
// about fz_sync (one trainer: no call waits), then a job's attempt finds the table and trains, and
// the victim refuses those that must be refused.
TEST_F(HostileFuzz, AttemptNumbersLockNoTableOnBothTransports) {
  std::mt19937_64 rng(0xa77e37);
  constexpr uint64_t kSecond = 1000000000u;
  const uint64_t now = now_ns();
  // The newest attempt fz_sync can have taken (every attempt sent within the limit may have been);
  // one more than kMaxAttemptJump above it is refused, as is an incarnation more than
  // kMaxIncarnationSkew ahead of the server's clock, which is at most a minute ahead of `now`.
  int64_t ceiling = 0;
  int64_t step = 0;  // fz_sync's, as its answers tell
  const auto must_refuse = [&](const v1::Attempt& sent) {
    return sent.restart() < 0 || sent.restart() - ceiling > kMaxAttemptJump ||
           sent.incarnation() > now + 660 * kSecond;
  };
  // (method, request) of trainer 0 about `table`'s step `at`, carrying `sent`.
  const auto requests = [&](const v1::Attempt& sent, const std::string& table, int64_t at) {
    const auto about = [&](auto message) {  // a Push, Step or Resume request
      message.set_table(table);
      message.set_step(at);
      *message.mutable_attempt() = sent;
      return message;
    };
    v1::PushRequest push = about(v1::PushRequest());
    *push.mutable_ids() = ids({1});
    *push.mutable_grads() = rpc::encode_tensor(at::ones({1, kDim}));
    v1::BatchRequest both;
    *both.add_pushes() = push;
    *both.add_steps() = about(v1::StepRequest());
    std::vector<std::pair<std::string, std::unique_ptr<Message>>> out;
    out.emplace_back("Push", std::make_unique<v1::PushRequest>(push));
    out.emplace_back("Step", std::make_unique<v1::StepRequest>(both.steps(0)));
    out.emplace_back("Batch", std::make_unique<v1::BatchRequest>(both));
    out.emplace_back("Resume", std::make_unique<v1::ResumeRequest>(about(v1::ResumeRequest())));
    return out;
  };
  std::vector<v1::Attempt> sent;
  for (const int64_t restart :
       {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{17}, int64_t{1023}, kMaxAttemptJump,
        kMaxAttemptJump + 1, 2 * kMaxAttemptJump, int64_t{1000000000000000000}, kI64Max - 1,
        kI64Max, int64_t{-1}, int64_t{-1024}, kI64Min}) {
    sent.push_back(attempt(restart, 0));
  }
  for (const uint64_t incarnation :
       {uint64_t{1}, now - kSecond, now, now + kSecond, now + 590 * kSecond, now + 700 * kSecond,
        now + 3600 * kSecond, uint64_t{1} << 63, kU64Max - 1, kU64Max}) {
    sent.push_back(attempt(-2, incarnation));  // -2: the newest restart, filled in when sent
  }
  for (int i = 0; i < 200; ++i) {
    const int64_t restart = rng() % 3 == 0 ? static_cast<int64_t>(rng())
                            : rng() % 2    ? -3  // the newest restart plus a small jump
                                           : -static_cast<int64_t>(rng() % 5000) - 10;
    const uint64_t incarnation = rng() % 3 == 0 ? rng()
                                 : rng() % 2    ? now - 600 * kSecond + rng() % (1300 * kSecond)
                                                : 0;
    sent.push_back(attempt(restart, incarnation));
  }
  for (v1::Attempt& hostile : sent) {
    if (hostile.restart() == -2) hostile.set_restart(ceiling);
    if (hostile.restart() == -3) hostile.set_restart(ceiling + static_cast<int64_t>(rng() % 1100));
    const Expect expect = must_refuse(hostile) ? Expect::kRefused : Expect::kAny;
    for (const Transport transport : kBoth) {
      for (const auto& [method, request] : requests(hostile, "fz_sync", step)) {
        const std::unique_ptr<Message> answer = response_of(method);
        if (!check("attempts", transport, hostile.ShortDebugString(), method, *request, expect,
                   answer.get())
                 .ok()) {
          continue;
        }
        if (const auto* one = dynamic_cast<v1::StepResponse*>(answer.get())) step = one->step();
        if (const auto* one = dynamic_cast<v1::ResumeResponse*>(answer.get())) step = one->step();
        if (const auto* all = dynamic_cast<v1::BatchResponse*>(answer.get())) {
          if (all->steps_size() == 1) step = all->steps(0).step();
        }
      }
    }
    if (hostile.restart() >= 0 && hostile.restart() - ceiling <= kMaxAttemptJump) {
      ceiling = std::max(ceiling, hostile.restart());
    }
  }
  // No attempt locks fz_sync: a Resume of attempt r is taken (OK, or FAILED_PRECONDITION for
  // want of a checkpoint) once r is at most kMaxAttemptJump above the table's, which lies below
  // `ceiling`; then that attempt's trainer trains over both transports.
  int64_t taken = -1;
  for (int64_t restart = ceiling + 1; restart >= 0 && taken < 0; restart -= kMaxAttemptJump) {
    const auto resume = requests(attempt(restart, 0), "fz_sync", step);
    const grpc::Status status = send(Transport::kGrpc, "Resume", *resume[3].second).status;
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) continue;
    EXPECT_TRUE(status.ok() || status.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
        << "Resume of attempt " << restart << ": " << status.error_message();
    taken = restart;
  }
  ASSERT_GE(taken, 0) << "no attempt at or below " << ceiling + 1 << " is taken";
  v1::StepResponse stepped;  // a finished step is answered with the table's step
  expect_ok(Transport::kGrpc, "Step", *requests(attempt(taken, 0), "fz_sync", -1)[1].second,
            &stepped);
  step = stepped.step();
  for (const Transport transport : kBoth) {
    const auto calls = requests(attempt(taken, 0), "fz_sync", step);
    check("attempts", transport, "the job's", "Push", *calls[0].second, Expect::kOk);
    check("attempts", transport, "the job's", "Step", *calls[1].second, Expect::kOk, &stepped);
    EXPECT_EQ(stepped.step(), ++step) << transport_name(transport);
  }
  // The victim refuses every attempt that must be refused, on both transports.
  for (const v1::Attempt& hostile :
       {attempt(kMaxAttemptJump + 1, 0), attempt(kI64Max, 0), attempt(-1, 0), attempt(kI64Min, 0),
        attempt(0, kU64Max), attempt(0, now + 3600 * kSecond), attempt(kI64Max, kU64Max)}) {
    for (const Transport transport : kBoth) {
      for (const auto& [method, request] : requests(hostile, "victim", victim_.step)) {
        check("attempts at the victim", transport, hostile.ShortDebugString(), method, *request,
              Expect::kRefused);
      }
    }
  }
  expect_unharmed();
}

}  // namespace gradwire::ps::server_fuzz_hostile_test
