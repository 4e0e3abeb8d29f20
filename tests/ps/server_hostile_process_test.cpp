// Issue 37's demonstrations replayed against a real gradwire-ps-server process with small caps on
// its command line, by a client talking raw gRPC (server_hostile_process.h): here the shared-memory
// ones (the server's own rows named as another table's destination; 93 huge sparse probes) and
// attempt numbers at their maxima; server_hostile_process_limits_test.cpp has the waiting lookups
// and the batches. Each gets a clear refusal, a victim table trained first stays bit-for-bit as it
// was, the server stays within its caps (figures printed for the record), and it exits cleanly
// within 2 s of SIGTERM once its clients closed their connections.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <limits>

#include "rpc/shared_memory.h"
#include "server_hostile_process.h"

namespace gradwire::ps::server_hostile_process_test {

// A sealed memfd named as a gradwire region of `key`, `bytes` long (sparse: costs nothing), its
// first 8 bytes holding the key as a probe's do; -1 when the system refuses.
int sparse_region(uint64_t key, off_t bytes) {
  char name[40];
  std::snprintf(name, sizeof(name), "gradwire-ps-%016llx", static_cast<unsigned long long>(key));
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (::ftruncate(fd, bytes) != 0 || ::pwrite(fd, &key, sizeof(key), 0) != sizeof(key) ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Finding 1: the server's own region (a probed trainer's sync dense table's rows), named by a
// token holder as its own table's rows_into, under the server's descriptor or one it opened
// itself, or as pushed gradients: refused; and no Step answer over gRPC names it.
TEST_F(HostileProcess, TheServersOwnRowsAreNeverWrittenThroughAnotherTable) {
  rpc::SharedRegions trainer;
  TableConfig dense = table_config("dense", 4, 4, UpdateMode::kSync);
  dense.kind = TableKind::kDense;
  v1::CreateTableResponse created;
  ASSERT_TRUE(create_probed(dense, trainer.probe(), &created).ok());
  ASSERT_TRUE(created.shared_memory()) << "the server could not map this trainer's probe";
  const v1::SharedBytes own = created.rows();
  ASSERT_NE(own.key(), 0u);
  EXPECT_EQ(own.pid(), pid());
  ASSERT_TRUE(client_->assign("dense", at::arange(4, at::kLong), at::ones({4, 4})).ok());
  ASSERT_TRUE(client_->push("dense", 0, 0, at::arange(4, at::kLong), at::ones({4, 4})).ok());
  ASSERT_TRUE(client_->step("dense", 0, 0).ok());
  const at::Tensor dense_rows = client_->rows("dense", at::arange(4, at::kLong));
  {
    ServerClient attacker(address_);  // the token, no probe, no host; a table of its own
    ASSERT_TRUE(attacker.create(table_config("mine", 4, 4)).ok());
    v1::StepRequest step;
    step.set_table("dense");
    step.set_step(-1);
    v1::StepResponse stepped;
    attacker.step(step, &stepped, 2s);
    EXPECT_FALSE(stepped.has_rows()) << "a step's answer over gRPC named the server's memory";

    v1::LookupRequest lookup = lookup_request("mine", at::arange(4, at::kLong));
    *lookup.mutable_rows_into() = own;
    v1::LookupResponse answer;
    const grpc::Status named = attacker.lookup(lookup, &answer);
    // Refused as the server's memory, or (once references need a probed process) as a
    // reference of a process that passed no probe.
    EXPECT_TRUE(refused(named, grpc::StatusCode::INVALID_ARGUMENT, "own memory") ||
                refused(named, grpc::StatusCode::INVALID_ARGUMENT, "probe") ||
                refused(named, grpc::StatusCode::PERMISSION_DENIED, "probe"))
        << named.error_code() << " " << named.error_message();
    // The same region under this (probed) process's own descriptor of it.
    const std::string path =
        "/proc/" + std::to_string(pid()) + "/fd/" + std::to_string(own.fd());
    const int reopened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(reopened, 0) << path << ": " << std::strerror(errno);
    v1::SharedBytes through_mine = own;
    through_mine.set_pid(::getpid());
    through_mine.set_fd(reopened);
    *lookup.mutable_rows_into() = through_mine;
    EXPECT_TRUE(refused(attacker.lookup(lookup, &answer), grpc::StatusCode::INVALID_ARGUMENT,
                        "own memory"));
    v1::PushRequest push = push_request("mine", 0, 0, at::arange(4, at::kLong), at::ones({4, 4}));
    push.mutable_grads()->clear_data();
    *push.mutable_grads()->mutable_shared() = through_mine;
    EXPECT_TRUE(refused(attacker.push(push), grpc::StatusCode::INVALID_ARGUMENT, "own memory"));
    ::close(reopened);
  }
  EXPECT_TRUE(same_bits(client_->rows("dense", at::arange(4, at::kLong)), dense_rows))
      << "the probed trainer's dense rows changed";
  expect_victim_unchanged();
  client_.reset();
  stop(2s);
}

// Finding 2: 93 CreateTable probes with sparse sealed memfds from 16 TiB down to 1 MiB. Regions
// above --max-shared-region-bytes are never mapped (no shared memory offered), VmSize stays far
// below what one of them would add, and a new table and a well-formed probe are still taken.
TEST_F(HostileProcess, HugeSparseProbesAreRefusedWithoutMappingThem) {
  const Usage before = usage();
  int mapped = 0;
  for (int i = 0; i < 93; ++i) {
    const off_t bytes = off_t{1} << (44 - i % 25);
    const uint64_t key = 0x5eed000000000000ULL + static_cast<uint64_t>(i) + 1;
    const int fd = sparse_region(key, bytes);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    v1::SharedBytes probe;
    probe.set_key(key);
    probe.set_pid(::getpid());
    probe.set_fd(fd);
    v1::CreateTableResponse response;
    const grpc::Status status = create_probed(table_config("probed"), probe, &response);
    ::close(fd);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.shared_memory(), bytes <= kRegionCap) << bytes << " bytes";
    mapped += response.shared_memory();
  }
  const Usage after = usage();
  print("93 sparse probes of 16 TiB down to 1 MiB (" + std::to_string(mapped) +
            " of at most 4 MiB mapped)",
        before, after);
  EXPECT_LT((after.size_kb - before.size_kb) * 1024, kSharedCap + 128 * kMiB)
      << "VmSize grew by more than the shared caps and a few threads";
  EXPECT_TRUE(client_->create(table_config("big", 1024, 1024)).ok());  // a 4 MiB table
  rpc::SharedRegions trainer;
  v1::CreateTableResponse response;
  ASSERT_TRUE(create_probed(table_config("fine"), trainer.probe(), &response).ok());
  EXPECT_TRUE(response.shared_memory()) << "a trainer's own probe is no longer taken";
  expect_victim_unchanged();
  client_.reset();
  stop(2s);
}

// Finding 6: Step, Push and Resume with restart 2^63 - 1 (or 10^18), and incarnation 2^64 - 1,
// are refused naming the attempt limits and change nothing; restart 0 is still taken afterwards.
TEST_F(HostileProcess, AttemptsAtTheirMaximaAreRefusedAndTheTableStaysUsable) {
  ASSERT_TRUE(client_->create(table_config("att", 8, 4, UpdateMode::kSync, 1)).ok());
  const auto step = [&](int64_t restart, uint64_t incarnation, int64_t* new_step = nullptr) {
    v1::StepRequest request;
    request.set_table("att");
    request.mutable_attempt()->set_restart(restart);
    request.mutable_attempt()->set_incarnation(incarnation);
    v1::StepResponse response;
    const grpc::Status status = client_->step(request, &response, 5s);
    if (new_step) *new_step = response.step();
    return status;
  };
  const auto push = [&](int64_t restart, uint64_t incarnation) {
    return client_->push(
        push_request("att", 0, 0, ids({2}), at::ones({1, 4}), restart, incarnation));
  };
  constexpr int64_t kMaxRestart = std::numeric_limits<int64_t>::max();
  constexpr uint64_t kMaxIncarnation = std::numeric_limits<uint64_t>::max();
  const at::Tensor att_rows = client_->rows("att", at::arange(8, at::kLong));
  const auto code = grpc::StatusCode::INVALID_ARGUMENT;
  EXPECT_TRUE(refused(step(kMaxRestart, 0), code, "at most 1024"));
  EXPECT_TRUE(refused(push(kMaxRestart, 0), code, "at most 1024"));
  EXPECT_TRUE(refused(step(1000000000000000000, 0), code, "at most 1024"));
  EXPECT_TRUE(refused(client_->resume("att", 0, 0, kMaxRestart), code, "at most 1024"));
  EXPECT_TRUE(refused(step(0, kMaxIncarnation), code, "600 s"));
  EXPECT_TRUE(refused(push(0, kMaxIncarnation), code, "600 s"));
  EXPECT_TRUE(same_bits(client_->rows("att", at::arange(8, at::kLong)), att_rows));

  int64_t now = -1;
  ASSERT_TRUE(push(0, 0).ok());
  ASSERT_TRUE(step(0, 0, &now).ok());
  EXPECT_EQ(now, 1);
  EXPECT_FALSE(same_bits(client_->rows("att", at::arange(8, at::kLong)), att_rows));
  int64_t resumed = -1;  // a restarted group (attempt 1) still resumes the table
  EXPECT_TRUE(client_->resume("att", 0, 1, 1, &resumed).ok());
  EXPECT_EQ(resumed, 1);
  expect_victim_unchanged();
  // The client stays connected: an idle connection does not hold the stop (Note [quick shutdown]).
  stop(2s);
}

}  // namespace gradwire::ps::server_hostile_process_test
