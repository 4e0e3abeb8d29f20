// LaunchOptions::bind_cores with real /bin/sh workers: each worker runs on the CPUs the plan
// gives it (read back from /proc/self/status), sees them in GRADWIRE_BOUND_CPUS and gets a
// matching OMP_NUM_THREADS; unbound workers keep the launcher's mask; more workers than CPUs
// share them and the launcher says so; a CPU the child cannot be bound to fails the spawn.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "launch/core_binding.h"
#include "launch/process.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

using namespace std::chrono_literals;
using gradwire::UniqueFd;
using testing::read_file;
using testing::TempDir;
using testing::WorkerCpus;

// Restricts the calling thread (and so the processes it starts) to `cpus` while alive.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(const std::vector<int>& cpus)
      : original_(detail::allowed_cpus_of_this_process()) {
    const detail::CpuSet set(cpus);
    ok_ = ::sched_setaffinity(0, set.size_bytes(), set.data()) == 0;
  }
  ~ScopedAffinity() {
    const detail::CpuSet set(original_);
    ::sched_setaffinity(0, set.size_bytes(), set.data());
  }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;
  bool ok() const { return ok_; }

 private:
  std::vector<int> original_;
  bool ok_ = false;
};

bool caller_sets_omp_threads() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  return value != nullptr && *value != '\0';
}

class BindCoresTest : public ::testing::Test {
 protected:
  // Runs `nproc` workers printing their CPUs (testing::kPrintCpusScript) to completion.
  std::map<int, WorkerCpus> run(int nproc, bool bind_cores) {
    LaunchOptions options;
    options.nproc_per_node = nproc;
    options.command = {"/bin/sh", "-c", testing::kPrintCpusScript};
    options.bind_cores = bind_cores;
    options.stdout_fd = out_.get();
    options.stderr_fd = err_.get();
    const LaunchResult result = run_workers(options);
    EXPECT_EQ(result.exit_code(), 0) << result.summary() << err();
    return testing::worker_cpus_by_rank(read_file(dir_.file("stdout")));
  }
  std::string err() const { return read_file(dir_.file("stderr")); }

  TempDir dir_;
  UniqueFd out_{::open(dir_.file("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  UniqueFd err_{::open(dir_.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
};

TEST_F(BindCoresTest, EachWorkerRunsOnItsOwnBlock) {
  const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
  const detail::CoreBindingPlan plan = detail::plan_core_binding(allowed, 2);
  const std::map<int, WorkerCpus> workers = run(2, true);
  ASSERT_EQ(workers.size(), 2u) << read_file(dir_.file("stdout"));
  for (const auto& [rank, cpus] : workers) {
    EXPECT_EQ(cpus.allowed, plan.worker_cpus[rank]) << "rank " << rank;
    EXPECT_EQ(cpus.bound, detail::cpu_list_text(plan.worker_cpus[rank])) << "rank " << rank;
    if (!caller_sets_omp_threads()) {
      EXPECT_EQ(cpus.omp, std::to_string(plan.worker_cpus[rank].size())) << "rank " << rank;
    }
  }
  EXPECT_EQ(plan.shared, testing::contains(err(), "share cores")) << err();
}

TEST_F(BindCoresTest, UnboundWorkersKeepTheLaunchersMask) {
  const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
  const std::map<int, WorkerCpus> workers = run(2, false);
  ASSERT_EQ(workers.size(), 2u) << read_file(dir_.file("stdout"));
  for (const auto& [rank, cpus] : workers) {
    EXPECT_EQ(cpus.allowed, allowed) << "rank " << rank;
    EXPECT_EQ(cpus.bound, "") << "rank " << rank;
  }
}

TEST_F(BindCoresTest, WorkersShareALoneCpuAndTheLauncherSaysSoOnce) {
  const int cpu = detail::allowed_cpus_of_this_process().back();
  ScopedAffinity only_one({cpu});
  ASSERT_TRUE(only_one.ok());
  const std::map<int, WorkerCpus> workers = run(3, true);
  ASSERT_EQ(workers.size(), 3u) << read_file(dir_.file("stdout"));
  for (const auto& [rank, cpus] : workers) {
    EXPECT_EQ(cpus.allowed, std::vector<int>{cpu}) << "rank " << rank;
    EXPECT_EQ(cpus.bound, std::to_string(cpu)) << "rank " << rank;
  }
  const std::string notice = detail::shared_cores_notice({cpu}, 3);
  const std::string text = err();
  const size_t first = text.find(notice);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(notice, first + 1), std::string::npos) << text;
}

TEST_F(BindCoresTest, ANonContiguousMaskIsCutInOrder) {
  const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
  if (allowed.size() < 4) GTEST_SKIP() << "needs 4 CPUs, this process may use " << allowed.size();
  // Every other CPU: e.g. {0, 2, 4, 6} when 8 are allowed.
  std::vector<int> every_other;
  for (size_t i = 0; i < allowed.size(); i += 2) every_other.push_back(allowed[i]);
  ScopedAffinity restricted(every_other);
  ASSERT_TRUE(restricted.ok());
  const detail::CoreBindingPlan plan = detail::plan_core_binding(every_other, 2);
  const std::map<int, WorkerCpus> workers = run(2, true);
  ASSERT_EQ(workers.size(), 2u) << read_file(dir_.file("stdout"));
  for (const auto& [rank, cpus] : workers) EXPECT_EQ(cpus.allowed, plan.worker_cpus[rank]);
}

TEST(SpawnBoundWorkerTest, ACpuTheChildCannotUseFailsTheSpawnNamingIt) {
  detail::SpawnRequest request;
  request.argv = {"/bin/true"};
  ::sigemptyset(&request.signal_mask);
  request.cpus = {4000};  // no such CPU: sched_setaffinity fails with EINVAL in the child
  try {
    detail::spawn_worker(request);
    FAIL() << "spawn_worker did not throw";
  } catch (const ProgramNotExecutable& error) {
    FAIL() << "reported as an exec failure: " << error.what();
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("sched_setaffinity"), std::string::npos) << message;
    EXPECT_NE(message.find("CPUs 4000"), std::string::npos) << message;
    EXPECT_NE(message.find("/bin/true"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace gradwire::launch
