// Host identities and layouts (pure), what "auto" picks for one host, one rank per host and
// mixed layouts, and hierarchical allreduce against Gloo on simulated hosts (GRADWIRE_HOST_ID per
// rank; ranks are threads of this process).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "comm/connect_world.h"
#include "gradwire/common/error.h"
#include "hierarchical_world.h"
#include "comm/hierarchical/host_identity.h"
#include "support/rank_threads.h"

namespace gradwire {
namespace {

using namespace std::chrono_literals;

TEST(HostLayout, GroupsRanksByIdentityInRankOrder) {
  auto layout = plan_host_layout({"b", "a", "b", "c", "a"});
  EXPECT_EQ(layout.hosts, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(layout.host_of_rank, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(layout.members[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.members[1], (std::vector<int>{1, 4}));
  EXPECT_EQ(layout.leaders(), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(layout.local_index(4), 1);
  EXPECT_EQ(layout.local_index(3), 0);
  EXPECT_EQ(layout.describe(),
            "host 'b': ranks [0, 2]; host 'a': ranks [1, 4]; host 'c': ranks [3]");
}

TEST(HostLayout, AutoChoiceFollowsTheLayout) {
  EXPECT_EQ(choose_cpu_backend(plan_host_layout({"a"})), "shm");
  EXPECT_EQ(choose_cpu_backend(plan_host_layout({"a", "a", "a"})), "shm");
  EXPECT_EQ(choose_cpu_backend(plan_host_layout({"a", "b", "c"})), "gloo");
  EXPECT_EQ(choose_cpu_backend(plan_host_layout({"a", "a", "b"})), "hierarchical");
  EXPECT_EQ(choose_cpu_backend(plan_host_layout({"a", "b", "a", "b"})), "hierarchical");
}

TEST(HostIdentity, OverrideElseHostnameAndBootId) {
  EXPECT_EQ(local_host_identity(EnvMap{{"GRADWIRE_HOST_ID", " node7 "}}), "node7");
  const std::string real = local_host_identity(EnvMap{{"GRADWIRE_HOST_ID", ""}});
  EXPECT_EQ(real, local_host_identity(EnvMap{}));
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  EXPECT_EQ(real.rfind(name, 0), 0u) << real;
  EXPECT_GT(real.size(), std::string(name).size() + 30) << "expected the boot id too: " << real;
}

std::string backend_on(const std::vector<std::string>& hosts,
                       const std::map<std::string, std::string>& env = {},
                       const std::optional<std::string>& backend = "auto") {
  std::mutex mutex;
  std::vector<std::string> names(hosts.size());
  testing::run_ranks_on_hosts(
      backend, hosts,
      [&](int rank, World& world) {
        auto comm = world.communicator();
        at::Tensor t = at::full({5}, rank + 1.0);
        comm->allreduce(t)->wait();
        const double n = static_cast<double>(hosts.size());
        EXPECT_EQ(t[4].item<double>(), n * (n + 1) / 2);
        std::lock_guard<std::mutex> lock(mutex);
        names[rank] = comm->backend();
      },
      20s, env);
  for (const auto& name : names) EXPECT_EQ(name, names[0]);
  return names[0];
}

TEST(AutoBackend, ShmOnOneHost) { EXPECT_EQ(backend_on({"a", "a", "a"}), "shm"); }
TEST(AutoBackend, GlooWhenEveryRankHasItsOwnHost) {
  EXPECT_EQ(backend_on({"a", "b", "c"}), "gloo");
}
TEST(AutoBackend, HierarchicalWhenRanksShareSomeHosts) {
  EXPECT_EQ(backend_on({"a", "a", "b"}), "hierarchical");
}
TEST(AutoBackend, GradwireBackendChoosesWhenTheProgramNamesNone) {
  EXPECT_EQ(backend_on({"a", "a"}, {{"GRADWIRE_BACKEND", "gloo"}}, std::nullopt), "gloo");
  EXPECT_EQ(backend_on({"a", "a", "b"}, {{"GRADWIRE_BACKEND", "gloo"}}, std::nullopt), "gloo");
  // A program that asks for "auto" gets the automatic choice.
  EXPECT_EQ(backend_on({"a", "a"}, {{"GRADWIRE_BACKEND", "gloo"}}, "auto"), "shm");
}

TEST(ShmBackend, RanksOnTwoHostsAreAConfigErrorNamingThem) {
  try {
    testing::run_ranks_on_hosts(
        "shm", {"a", "b"}, [](int, World&) {}, 20s);
    FAIL() << "shm across hosts was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("host 'a': ranks [0]; host 'b': ranks [1]"),
              std::string::npos)
        << e.what();
  }
}

// Rank r's input: small integers, exact in every dtype, different per rank and element.
at::Tensor input_for(int rank, int64_t n, at::ScalarType dtype) {
  return at::arange(n, at::kLong).mul(rank + 3).remainder(17).sub(8).to(dtype);
}

// Every rank runs the same allreduces on a hierarchical world and on a Gloo world; the results
// must be identical.
void expect_hierarchical_equals_gloo(const std::vector<std::string>& hosts) {
  const int world_size = static_cast<int>(hosts.size());
  const int hierarchical_port = testing::free_port();
  const int gloo_port = testing::free_port();
  testing::run_threads(world_size, [&](int rank) {
    auto options = testing::loopback_options(rank, world_size, hierarchical_port, 30s);
    options.backend = "hierarchical";
    auto hierarchical = connect_world(options, EnvMap{{"GRADWIRE_HOST_ID", hosts[rank]}});
    auto gloo = init(testing::loopback_options(rank, world_size, gloo_port, 30s));
    auto h = hierarchical->communicator();
    auto g = gloo->communicator();
    EXPECT_EQ(h->backend(), "hierarchical");
    for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong}) {
      for (int64_t n : {int64_t{1}, int64_t{1001}, int64_t{300000}}) {
        for (auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax}) {
          if (op == ReduceOp::kAvg && c10::isIntegralType(dtype, false)) continue;
          at::Tensor a = input_for(rank, n, dtype);
          at::Tensor b = a.clone();
          auto ha = h->allreduce(a, op);
          auto gb = g->allreduce(b, op);
          ha->wait();
          gb->wait();
          ASSERT_TRUE(at::equal(a, b))
              << c10::toString(dtype) << " n=" << n << " op=" << to_string(op) << " rank " << rank;
        }
      }
    }
  });
}

TEST(HierarchicalAllreduce, EqualsGlooOnTwoHostsOfTwo) {
  expect_hierarchical_equals_gloo({"a", "a", "b", "b"});
}
TEST(HierarchicalAllreduce, EqualsGlooOnUnevenHosts) {
  expect_hierarchical_equals_gloo({"b", "a", "a"});
}

TEST(HierarchicalAllreduce, StalledRankTimesOutNamingItsHost) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  std::atomic<int> finished{0};
  std::mutex mutex;
  std::vector<std::string> errors(hosts.size());
  testing::run_ranks_on_hosts(
      "hierarchical", hosts,
      [&](int rank, World& world) {
        auto comm = world.communicator();
        at::Tensor t = at::ones({1000});
        comm->allreduce(t)->wait();
        if (rank != 3) {  // rank 3 never reaches the second allreduce
          std::string error = "no error";
          try {
            comm->allreduce(t)->wait();
          } catch (const TimeoutError& e) {
            error = e.what();
          } catch (const std::exception& e) {
            error = std::string("not a TimeoutError: ") + e.what();
          }
          std::lock_guard<std::mutex> lock(mutex);
          errors[rank] = error;
          ++finished;
        }
        // Every world stays until each waiting rank has its error: a rank that returned would
        // close its connections, and a leader still waiting would lose its peer instead of
        // timing out.
        while (finished < 3) std::this_thread::sleep_for(10ms);
      },
      1500ms);
  // Rank 2 waits for rank 3 on their host; rank 0 for rank 2 among the leaders.
  EXPECT_NE(errors[2].find("shm allreduce within host 'b' (ranks [2, 3])"), std::string::npos)
      << errors[2];
  EXPECT_NE(errors[0].find("Gloo allreduce among the host leaders, ranks [0, 2]"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("timed out"), std::string::npos) << errors[1];
}

}  // namespace
}  // namespace gradwire
