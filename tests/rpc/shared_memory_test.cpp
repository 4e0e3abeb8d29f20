// Shared memory between a trainer and the servers on its host (rpc/shared_memory.h): regions found
// by their tensors, viewed by a server in place (both ways), the wire's shared tensors, and every
// reference a server must refuse (wrong key, unsealed, out of bounds, misaligned, gone).
#include "rpc/shared_memory.h"

#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "error_text.h"
#include "gradwire/common/error.h"
#include "rpc/wire.h"

namespace gradwire::rpc {
namespace shared_memory_test {  // not anonymous: unity batches (docs/architecture.md "Tests")

using testing::contains;

std::string refusal(SharedRegionCache& cache, const v1::SharedBytes& ref,
                    at::IntArrayRef sizes = {4}, at::ScalarType dtype = at::kFloat) {
  return testing::invalid_argument_message([&] { cache.view(ref, sizes, dtype, "push.grads"); });
}

TEST(SharedMemory, ATensorIsZeroedAndFoundWithTheOffsetOfItsBytes) {
  SharedRegions regions;
  const at::Tensor rows = regions.allocate({4, 8}, at::kFloat);
  EXPECT_TRUE(at::equal(rows, at::zeros({4, 8})));
  const auto whole = regions.find(rows);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->pid(), ::getpid());
  EXPECT_EQ(whole->offset(), 0);
  EXPECT_NE(whole->key(), 0u);
  const auto third = regions.find(rows[2]);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->offset(), 2 * 8 * 4);
  EXPECT_EQ(third->key(), whole->key());
  EXPECT_FALSE(regions.find(at::zeros({4, 8})).has_value());
  EXPECT_FALSE(regions.find(rows.t()).has_value()) << "not contiguous";
  // Another object's regions are not this one's.
  SharedRegions others;
  EXPECT_FALSE(others.find(rows).has_value());
}

TEST(SharedMemory, AServerViewsTheTrainersBytesInPlaceBothWays) {
  SharedRegions regions;
  at::Tensor rows = regions.allocate({3, 5}, at::kFloat);
  rows.copy_(at::randn({3, 5}));
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  at::Tensor seen = cache.view(*regions.find(rows), {3, 5}, at::kFloat, "push.grads");
  EXPECT_NE(seen.data_ptr(), rows.data_ptr()) << "the server maps the region itself";
  EXPECT_TRUE(at::equal(seen, rows));
  seen.fill_(7.0);  // a lookup answered in place
  EXPECT_TRUE(at::equal(rows, at::full({3, 5}, 7.0)));
  // The same key again: the mapping is reused.
  cache.view(*regions.find(rows[1]), {5}, at::kFloat, "push.grads");
  EXPECT_EQ(cache.size(), 1);
}

TEST(SharedMemory, TheWireCarriesAReferenceThatOnlyAReceiverWithRegionsDecodes) {
  SharedRegions regions;
  at::Tensor rows = regions.allocate({6, 4}, at::kFloat);
  rows.copy_(at::randn({6, 4}));
  v1::Tensor message;
  encode_shared_tensor(rows, *regions.find(rows), &message, "push.grads");
  EXPECT_TRUE(message.data().empty());
  EXPECT_TRUE(message.has_shared());
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  const at::Tensor back = decode_tensor(message, "push.grads", {at::kFloat, 2}, &cache);
  EXPECT_TRUE(at::equal(back, rows));
  rows.add_(1.0);
  EXPECT_TRUE(at::equal(back, rows)) << "a view, not a copy";
  EXPECT_TRUE(contains(testing::invalid_argument_message(
                           [&] { decode_tensor(message, "push.grads", {at::kFloat, 2}); }),
                       "shared memory"));
  // Bytes and a reference together are malformed; so is a shape past the region's end.
  v1::Tensor both = message;
  both.set_data(std::string(6 * 4 * 4, '\0'));
  EXPECT_THROW(decode_tensor(both, "push.grads", {at::kFloat, 2}, &cache), InvalidArgument);
  v1::Tensor larger = message;
  larger.set_shape(0, 7);
  EXPECT_THROW(decode_tensor(larger, "push.grads", {at::kFloat, 2}, &cache), InvalidArgument);
}

TEST(SharedMemory, AServerRefusesWhatIsNotASealedRegionOfThatKeyOrLiesOutsideIt) {
  SharedRegions regions;
  const at::Tensor rows = regions.allocate({16}, at::kFloat);
  const v1::SharedBytes good = *regions.find(rows);
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));

  v1::SharedBytes wrong_key = good;
  wrong_key.set_key(good.key() ^ 1);
  EXPECT_TRUE(contains(refusal(cache, wrong_key), "is not that region"));

  v1::SharedBytes past_end = good;
  past_end.set_offset(60);
  EXPECT_TRUE(contains(refusal(cache, past_end, {4}), "out of bounds"));
  v1::SharedBytes misaligned = good;
  misaligned.set_offset(2);
  EXPECT_TRUE(contains(refusal(cache, misaligned, {4}), "aligned"));
  v1::SharedBytes negative = good;
  negative.set_offset(-4);
  EXPECT_TRUE(contains(refusal(cache, negative, {4}), "out of bounds"));

  SharedRegionCache fresh;  // one that has not mapped the key yet
  ASSERT_TRUE(fresh.probe(regions.probe()));
  v1::SharedBytes other_fd = good;
  other_fd.set_fd(good.fd() + 1000);
  EXPECT_TRUE(contains(refusal(fresh, other_fd), "is not that region"));

  // A key the server knows, claimed by another descriptor.
  cache.view(good, {4}, at::kFloat, "push.grads");
  v1::SharedBytes stolen = good;
  stolen.set_fd(0);
  EXPECT_TRUE(contains(refusal(cache, stolen), "belongs to"));

  // A memfd with a region's name but no seals (it could shrink under the server's mapping).
  const uint64_t key = 0x1234abcd5678ef00ULL;
  char name[40];
  std::snprintf(name, sizeof(name), "gradwire-ps-%016llx", static_cast<unsigned long long>(key));
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  v1::SharedBytes unsealed;
  unsealed.set_key(key);
  unsealed.set_pid(::getpid());
  unsealed.set_fd(fd);
  EXPECT_TRUE(contains(refusal(cache, unsealed), "not sealed"));
  ::close(fd);
}

TEST(SharedMemory, TheProbeSaysWhetherTheServerCanMapTheTrainersRegions) {
  SharedRegions regions;
  SharedRegionCache cache;
  const v1::SharedBytes probe = regions.probe();
  EXPECT_TRUE(cache.probe(probe));
  v1::SharedBytes elsewhere = probe;
  elsewhere.set_pid(0x7ffffff0);  // no such process here: another host's trainer
  EXPECT_FALSE(cache.probe(elsewhere));
}

// Note [probed processes]: a server's cache takes references only to regions of a process that
// passed its probe; a trainer's cache (the servers' rows) needs none.
TEST(SharedMemory, OnlyReferencesOfAProcessThatPassedTheProbeAreTaken) {
  SharedRegions regions;
  at::Tensor rows = regions.allocate({4}, at::kFloat);
  rows.fill_(2.0);
  const v1::SharedBytes ref = *regions.find(rows);
  SharedRegionCache cache;
  const std::string refused = refusal(cache, ref);
  EXPECT_TRUE(contains(refused, "did not pass this server's shared-memory probe")) << refused;
  EXPECT_TRUE(contains(refused, "process " + std::to_string(::getpid()))) << refused;
  EXPECT_EQ(cache.mapped_bytes(), 0);
  // A failed probe (a region that is not there) grants nothing.
  v1::SharedBytes bad_probe = regions.probe();
  bad_probe.set_key(bad_probe.key() ^ 1);
  EXPECT_FALSE(cache.probe(bad_probe));
  EXPECT_TRUE(contains(refusal(cache, ref), "probe"));
  ASSERT_TRUE(cache.probe(regions.probe()));
  EXPECT_TRUE(at::equal(cache.view(ref, {4}, at::kFloat, "push.grads"), rows));
  // Another cache (another server) has seen no probe.
  SharedRegionCache other;
  EXPECT_TRUE(contains(refusal(other, ref), "probe"));
  SharedRegionCache trainer(SharedRegionLimits::unlimited(), /*servers_rows=*/true);
  EXPECT_NO_THROW(trainer.view(ref, {4}, at::kFloat, "server_rows"));
}

// At most max_regions processes are remembered; beyond that a probe fails (the trainer then calls
// over gRPC) rather than making the server forget a live trainer.
TEST(SharedMemory, TheProbedProcessesAreBounded) {
  SharedRegions regions;
  SharedRegionCache cache(SharedRegionLimits{1});
  ASSERT_TRUE(cache.probe(regions.probe()));
  ASSERT_TRUE(cache.probe(regions.probe())) << "the same process again";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  // The child shares the parent's descriptors: its copy of the probe region is the same file.
  v1::SharedBytes childs = regions.probe();
  childs.set_pid(child);
  EXPECT_FALSE(cache.probe(childs)) << "one process remembered already, and it runs";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(SharedMemory, FreedTensorsLeaveTheRegistryAndServersKeepWhatTheyMapped) {
  SharedRegions regions;
  at::Tensor rows = regions.allocate({8}, at::kFloat);
  rows.fill_(3.0);
  const at::Tensor view_of_rows = rows.view({2, 4});
  const v1::SharedBytes ref = *regions.find(rows);
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  const at::Tensor seen = cache.view(ref, {8}, at::kFloat, "push.grads");
  rows.reset();
  EXPECT_TRUE(regions.find(view_of_rows).has_value()) << "the storage is still alive";
  const_cast<at::Tensor&>(view_of_rows).reset();
  EXPECT_TRUE(at::equal(seen, at::full({8}, 3.0)));
  SharedRegions fresh;
  at::Tensor another = fresh.allocate({8}, at::kFloat);
  EXPECT_TRUE(fresh.find(another).has_value());
}

TEST(SharedMemory, TheCacheKeepsAtMostItsBoundOfRegions) {
  SharedRegions regions;
  std::vector<at::Tensor> tensors;
  SharedRegionCache cache(SharedRegionLimits{2});
  ASSERT_TRUE(cache.probe(regions.probe()));
  for (int i = 0; i < 3; ++i) {
    tensors.push_back(regions.allocate({4}, at::kFloat));
    cache.view(*regions.find(tensors.back()), {4}, at::kFloat, "push.grads");
  }
  EXPECT_EQ(cache.size(), 2);
  // The evicted one maps again when used.
  cache.view(*regions.find(tensors.front()), {4}, at::kFloat, "push.grads");
  EXPECT_EQ(cache.size(), 2);
}

// A server's own rows (server_memory regions) are never mapped on a caller's word, under their
// own descriptor or another one naming the same memory.
TEST(SharedMemory, AServersOwnMemoryIsNeverMappedOnACallersWord) {
  SharedRegions server(/*server_memory=*/true);
  at::Tensor rows = server.allocate({16}, at::kFloat);
  const v1::SharedBytes own = *server.find(rows);
  EXPECT_TRUE(SharedRegions::is_server_memory(own.key()));
  SharedRegionCache cache;
  EXPECT_TRUE(contains(refusal(cache, own), "own memory"));
  const int again = ::open(("/proc/self/fd/" + std::to_string(own.fd())).c_str(), O_RDWR);
  ASSERT_GE(again, 0);
  v1::SharedBytes other_descriptor = own;
  other_descriptor.set_fd(again);
  EXPECT_TRUE(contains(refusal(cache, other_descriptor), "own memory"));
  ::close(again);
  EXPECT_EQ(cache.mapped_bytes(), 0);
  const uint64_t key = own.key();
  rows = at::Tensor();
  EXPECT_FALSE(SharedRegions::is_server_memory(key));  // freed with its tensor
}

// The caps: a region above max_region_bytes is refused unmapped; mapped bytes are counted, all
// and per process, and given back when the last tensor and the cache let go.
TEST(SharedMemory, TheCacheMapsWithinItsByteCaps) {
  SharedRegionLimits limits;
  limits.max_region_bytes = 1 << 20;
  limits.max_mapped_bytes = 3 << 20;
  limits.max_process_bytes = 2 << 20;
  SharedRegionCache cache(limits);
  SharedRegions trainer;
  ASSERT_TRUE(cache.probe(trainer.probe()));
  EXPECT_EQ(cache.mapped_bytes(), 0) << "the probe's region is not kept";
  const at::Tensor big = trainer.allocate({(1 << 20) / 4 + 1}, at::kFloat);
  EXPECT_TRUE(contains(refusal(cache, *trainer.find(big)), "max_shared_region_bytes"));
  EXPECT_EQ(cache.mapped_bytes(), 0);

  std::vector<at::Tensor> views;
  std::vector<at::Tensor> regions;
  for (int i = 0; i < 2; ++i) {
    regions.push_back(trainer.allocate({(1 << 20) / 4}, at::kFloat));
    views.push_back(cache.view(*trainer.find(regions.back()), {4}, at::kFloat, "push.grads"));
  }
  EXPECT_EQ(cache.mapped_bytes(), 2 << 20);
  EXPECT_EQ(cache.mapped_bytes_of(::getpid()), 2 << 20);
  regions.push_back(trainer.allocate({(1 << 20) / 4}, at::kFloat));
  // Both regions are in use (views), so the process is at its cap.
  EXPECT_TRUE(contains(refusal(cache, *trainer.find(regions.back())), "max_shared_process_bytes"));
  views.clear();  // the cache alone holds them now: it lets go of them to map the new one
  EXPECT_NO_THROW(cache.view(*trainer.find(regions.back()), {4}, at::kFloat, "push.grads"));
  EXPECT_EQ(cache.mapped_bytes(), 1 << 20);
}

}  // namespace shared_memory_test
}  // namespace gradwire::rpc
