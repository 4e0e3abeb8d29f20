// Unit tests of the core-binding plan (which CPUs each worker gets), the launcher's own CPU list
// and the CPU set handed to sched_setaffinity.
#include "launch/core_binding.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <numeric>
#include <utility>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {
namespace {

using CpuLists = std::vector<std::vector<int>>;

std::vector<int> cpu_range(int first, int count) {
  std::vector<int> cpus(static_cast<size_t>(count));
  std::iota(cpus.begin(), cpus.end(), first);
  return cpus;
}

TEST(CoreBindingTest, TwoCpusTwoWorkersGetOneEach) {
  const CoreBindingPlan plan = plan_core_binding({0, 1}, 2);
  EXPECT_EQ(plan.worker_cpus, (CpuLists{{0}, {1}}));
  EXPECT_FALSE(plan.shared);
}

TEST(CoreBindingTest, OneWorkerGetsEveryCpu) {
  EXPECT_EQ(plan_core_binding(cpu_range(0, 4), 1).worker_cpus, (CpuLists{{0, 1, 2, 3}}));
}

TEST(CoreBindingTest, LeftoverCpusAreGivenToNobody) {
  // 16 / 3: blocks of 5; CPU 15 stays unused so that every worker gets as many CPUs.
  const CoreBindingPlan plan = plan_core_binding(cpu_range(0, 16), 3);
  EXPECT_EQ(plan.worker_cpus, (CpuLists{cpu_range(0, 5), cpu_range(5, 5), cpu_range(10, 5)}));
  EXPECT_FALSE(plan.shared);
}

TEST(CoreBindingTest, NonContiguousMaskIsCutInAscendingOrder) {
  EXPECT_EQ(plan_core_binding({2, 3, 6, 7}, 2).worker_cpus, (CpuLists{{2, 3}, {6, 7}}));
  EXPECT_EQ(plan_core_binding({2, 3, 6, 7}, 4).worker_cpus, (CpuLists{{2}, {3}, {6}, {7}}));
  EXPECT_EQ(plan_core_binding({2, 3, 6, 7}, 3).worker_cpus, (CpuLists{{2}, {3}, {6}}));
  // Order and duplicates of the input do not matter.
  EXPECT_EQ(plan_core_binding({7, 2, 6, 3, 2}, 2).worker_cpus, (CpuLists{{2, 3}, {6, 7}}));
}

TEST(CoreBindingTest, FewerCpusThanWorkersShareThemInTurn) {
  const CoreBindingPlan one = plan_core_binding({0}, 2);
  EXPECT_EQ(one.worker_cpus, (CpuLists{{0}, {0}}));
  EXPECT_TRUE(one.shared);

  const CoreBindingPlan three = plan_core_binding({4, 5, 9}, 5);
  EXPECT_EQ(three.worker_cpus, (CpuLists{{4}, {5}, {9}, {4}, {5}}));
  EXPECT_TRUE(three.shared);
}

TEST(CoreBindingTest, BrokenPreconditionsAreChecked) {
  EXPECT_THROW(plan_core_binding({}, 2), InternalError);
  EXPECT_THROW(plan_core_binding({0, 1}, 0), InternalError);
  EXPECT_THROW(plan_core_binding({-1, 0}, 1), InternalError);
}

TEST(CoreBindingTest, CpuListTextJoinsWithCommas) {
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(cpu_list_text({3}), "3");
  EXPECT_EQ(cpu_list_text({0, 2, 5}), "0,2,5");
}

TEST(CoreBindingTest, SharedCoresNoticeNamesTheCounts) {
  const std::string notice = shared_cores_notice({0, 1}, 3);
  EXPECT_NE(notice.find("3 workers"), std::string::npos) << notice;
  EXPECT_NE(notice.find("2 CPUs (0,1)"), std::string::npos) << notice;
  EXPECT_NE(notice.find("share cores"), std::string::npos) << notice;
  EXPECT_EQ(notice.back(), '\n');
  EXPECT_NE(shared_cores_notice({0}, 2).find("1 CPU (0)"), std::string::npos);
}

TEST(CoreBindingTest, AllowedCpusMatchTheAffinityMask) {
  const std::vector<int> cpus = allowed_cpus_of_this_process();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof(mask), &mask) == 0) {  // fails beyond 1024 CPUs only
    EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&mask));
    for (int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &mask)) << cpu;
  }
}

TEST(CoreBindingTest, CpuSetHoldsExactlyItsCpus) {
  CpuSet set({1, 5, 1200});
  ASSERT_NE(set.data(), nullptr);
  EXPECT_GE(set.size_bytes() * 8, 1201u);
  EXPECT_EQ(CPU_COUNT_S(set.size_bytes(), set.data()), 3);
  EXPECT_TRUE(CPU_ISSET_S(1, set.size_bytes(), set.data()));
  EXPECT_TRUE(CPU_ISSET_S(5, set.size_bytes(), set.data()));
  EXPECT_TRUE(CPU_ISSET_S(1200, set.size_bytes(), set.data()));

  CpuSet moved(std::move(set));
  EXPECT_EQ(set.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(CPU_COUNT_S(moved.size_bytes(), moved.data()), 3);

  EXPECT_EQ(CpuSet(std::vector<int>{}).data(), nullptr);  // no CPUs: keep the launcher's mask
}

}  // namespace
}  // namespace gradwire::launch::detail
