// Hostile shared-memory references against a parameter server (issue 37, findings 1 and 2): a
// token holder that never passed the probe is not told where the server's own rows of a sync
// dense table are by a Step answer, and when it sends that region anyway as another table's
// `rows_into` it is refused; a caller on
// the server's host names huge sparse regions; a caller whose process never passed the probe
// sends references of its own. The server refuses each clearly, the victim's rows stay as they
// were, and what it maps stays within its caps.
#include <fcntl.h>
#include <grpcpp/client_context.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "gradwire/ps/server.h"
#include "ps/messages/service_messages.h"
#include "rpc/shared_memory.h"
#include "rpc/wire.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace server_shared_refs_test {  // not anonymous: unity batches

using testing::ServerClient;
using testing::table_config;

constexpr char kHost[] = "shared-refs-test-host";

ServerOptions shared_options() {
  ServerOptions options = testing::test_server_options();
  options.host_identity = kHost;
  return options;
}

// A sealed memfd named as a gradwire region of `key`, `bytes` long (sparse: costs nothing).
int sparse_region(uint64_t key, off_t bytes) {
  char name[40];
  std::snprintf(name, sizeof(name), "gradwire-ps-%016llx", static_cast<unsigned long long>(key));
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ::ftruncate(fd, bytes) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return -1;
  }
  return fd;
}

TEST(ServerSharedRefs, AStepAnswersRegionCannotBeWrittenThroughAnotherTable) {
  auto server = start_server(shared_options());
  ServerClient victim(server->address());
  // The victim trainer passed the probe: the server keeps its sync dense table's rows in its own
  // shared memory and names them in answers (Note [shared rows]).
  rpc::SharedRegions trainer_memory;
  TableConfig dense = table_config("victim", 4, 4, UpdateMode::kSync);
  dense.kind = TableKind::kDense;
  v1::CreateTableResponse created;
  ASSERT_TRUE(victim.create_probed(dense, kHost, trainer_memory.probe(), &created).ok());
  ASSERT_TRUE(created.shared_memory());
  ASSERT_TRUE(victim.assign("victim", at::arange(4, at::kLong), at::ones({4, 4})).ok());
  const at::Tensor before = victim.rows("victim", at::arange(4, at::kLong));

  // The attacker: the token, no probe, no host, an async table of its own holding 666s.
  ServerClient attacker(server->address());
  TableConfig mine = table_config("mine", 4, 4, UpdateMode::kAsync);
  ASSERT_TRUE(attacker.create(mine).ok());
  v1::StepRequest step;
  step.set_table("victim");
  step.set_step(-1);
  v1::StepResponse stepped;
  attacker.step(step, &stepped);
  // A step over gRPC never names the server's memory (only a probed trainer's channel is told).
  EXPECT_FALSE(stepped.has_rows());
  // Were the reference leaked anyway (the victim's CreateTable answer names it), the server
  // still refuses to write there.
  const v1::SharedBytes region = created.rows();
  ASSERT_NE(region.key(), 0u);

  v1::LookupRequest lookup;
  lookup.set_table("mine");
  rpc::encode_tensor(at::arange(4, at::kLong), lookup.mutable_ids(), "ids");
  *lookup.mutable_rows_into() = region;
  v1::LookupResponse answer;
  const grpc::Status refused = attacker.lookup(lookup, &answer);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("own memory"), std::string::npos)
      << refused.error_message();

  // The same region under another process's descriptor of it (a trainer on the host that opened
  // the server's rows) is the server's memory too.
  const int reopened = ::open(("/proc/self/fd/" + std::to_string(region.fd())).c_str(), O_RDONLY);
  if (reopened >= 0 && region.pid() == ::getpid()) {  // in-process server: its descriptors are ours
    v1::SharedBytes through_other = region;
    through_other.set_fd(reopened);
    through_other.set_pid(::getpid());
    *lookup.mutable_rows_into() = through_other;
    const grpc::Status again = attacker.lookup(lookup, &answer);
    EXPECT_EQ(again.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << again.error_message();
    ::close(reopened);
  }
  EXPECT_TRUE(victim.rows("victim", at::arange(4, at::kLong)).equal(before))
      << "the victim's rows changed";
  server->shutdown();
}

TEST(ServerSharedRefs, HugeSparseRegionsAreRefusedWithoutMappingThem) {
  ServerOptions options = shared_options();
  options.max_shared_region_bytes = int64_t{8} << 20;
  options.max_shared_bytes = int64_t{24} << 20;
  options.max_shared_process_bytes = int64_t{16} << 20;
  auto server = start_server(options);
  ServerClient caller(server->address());
  const auto create_with_probe = [&](const std::string& name, const v1::SharedBytes& probe) {
    v1::CreateTableResponse response;
    const grpc::Status status = caller.create_probed(
        table_config(name, 4, 4, UpdateMode::kAsync), kHost, probe, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.shared_memory();
  };
  // 16 TiB down to 16 MiB: above the region cap, never mapped, so no shared memory offered.
  uint64_t key = 0x5eed000000000000ULL;
  for (off_t bytes = off_t{16} << 40; bytes >= (off_t{16} << 20); bytes >>= 2) {
    const int fd = sparse_region(++key, bytes);
    ASSERT_GE(fd, 0);
    ::pwrite(fd, &key, sizeof(key), 0);
    v1::SharedBytes probe;
    probe.set_key(key);
    probe.set_pid(::getpid());
    probe.set_fd(fd);
    EXPECT_FALSE(create_with_probe("huge" + std::to_string(bytes), probe)) << bytes << " bytes";
    ::close(fd);
  }
  // A well-formed probe is still taken.
  rpc::SharedRegions trainer_memory;
  EXPECT_TRUE(create_with_probe("fine", trainer_memory.probe()));
  server->shutdown();
}

// Note [probed processes]: a token holder that never passed this server's probe has its shared
// references refused, naming the probe, and nothing changes; once its process passed a probe (a
// CreateTable from the server's host) the same reference is taken.
TEST(ServerSharedRefs, ReferencesAreTakenOnlyFromProcessesThatPassedTheProbe) {
  auto server = start_server(shared_options());
  ServerClient caller(server->address());
  ASSERT_TRUE(caller.create(table_config("table", 4, 4, UpdateMode::kAsync)).ok());
  const at::Tensor ids = at::arange(4, at::kLong);
  const at::Tensor before = caller.rows("table", ids);
  rpc::SharedRegions memory;
  at::Tensor grads = memory.allocate({4, 4}, at::kFloat);
  grads.fill_(1.0);
  v1::PushRequest push;
  push.set_table("table");
  rpc::encode_tensor(ids, push.mutable_ids(), "ids");
  rpc::encode_shared_tensor(grads, *memory.find(grads), push.mutable_grads(), "push.grads");
  const grpc::Status refused = caller.push(push);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("did not pass this server's shared-memory probe"),
            std::string::npos)
      << refused.error_message();
  EXPECT_TRUE(caller.rows("table", ids).equal(before)) << "a refused push changed the table";

  v1::CreateTableResponse created;
  ASSERT_TRUE(caller.create_probed(table_config("probed", 4, 4, UpdateMode::kAsync), kHost,
                                   memory.probe(), &created)
                  .ok());
  ASSERT_TRUE(created.shared_memory());
  const grpc::Status taken = caller.push(push);
  EXPECT_TRUE(taken.ok()) << taken.error_message();
  // SGD, lr 0.5: every weight went down by 0.5.
  EXPECT_TRUE(at::allclose(caller.rows("table", ids), before - 0.5));
  server->shutdown();
}

}  // namespace server_shared_refs_test
}  // namespace gradwire::ps
