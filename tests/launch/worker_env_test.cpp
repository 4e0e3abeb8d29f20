// Unit tests of the pure part of the launcher: option validation and worker environments.
#include "launch/worker_env.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"

namespace gradwire::launch::detail {
namespace {

LaunchOptions two_node_options() {
  LaunchOptions options;
  options.command = {"train"};
  options.nproc_per_node = 2;
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_addr = "10.0.0.1";
  options.master_port = 29500;
  return options;
}

WorkerEnvContext context_with(std::map<std::string, std::string> parent) {
  WorkerEnvContext context;
  context.parent = EnvMap(std::move(parent));
  context.master_port = 29500;
  context.fresh_run_id = "freshrun";
  context.fresh_job_token = "0123456789abcdef0123456789abcdef";
  context.hardware_threads = 8;
  return context;
}

TEST(WorkerEnvTest, TorchrunVariablesForSecondNodeOfTwo) {
  const LaunchOptions options = two_node_options();
  const WorkerEnvContext context = context_with({{"HOME", "/home/me"}, {"RANK", "stale"}});

  const auto env = worker_env(options, context, 1);
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("ROLE_RANK"), "3");
  EXPECT_EQ(env.at("ROLE_WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("ROLE_NAME"), "default");
  EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "freshrun");
  EXPECT_EQ(env.at("TORCHELASTIC_RESTART_COUNT"), "0");
  EXPECT_EQ(env.at("TORCHELASTIC_MAX_RESTARTS"), "0");
  EXPECT_EQ(env.at("GRADWIRE_JOB_TOKEN"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(env.at("HOME"), "/home/me");  // the parent's environment is inherited

  EXPECT_EQ(worker_env(options, context, 0).at("RANK"), "2");
  EXPECT_EQ(global_rank(options, 0), 2);
}

TEST(WorkerEnvTest, RestartVariablesTellTheAttempt) {
  LaunchOptions options = two_node_options();
  options.max_restarts = 3;
  WorkerEnvContext context = context_with({});
  context.restart_count = 2;
  const auto env = worker_env(options, context, 0);
  EXPECT_EQ(env.at("TORCHELASTIC_RESTART_COUNT"), "2");
  EXPECT_EQ(env.at("TORCHELASTIC_MAX_RESTARTS"), "3");
  options.max_restarts = -1;
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
}

TEST(WorkerEnvTest, OmpNumThreadsDividesCoresUnlessSet) {
  LaunchOptions options = two_node_options();
  EXPECT_EQ(worker_env(options, context_with({}), 0).at("OMP_NUM_THREADS"), "4");  // 8 cores / 2

  options.threads_per_worker = 3;
  EXPECT_EQ(worker_env(options, context_with({}), 0).at("OMP_NUM_THREADS"), "3");

  // The caller's own setting wins over both.
  EXPECT_EQ(worker_env(options, context_with({{"OMP_NUM_THREADS", "7"}}), 0).at("OMP_NUM_THREADS"),
            "7");
  // An empty value counts as unset.
  EXPECT_EQ(worker_env(options, context_with({{"OMP_NUM_THREADS", ""}}), 0).at("OMP_NUM_THREADS"),
            "3");
}

TEST(WorkerEnvTest, BoundWorkersSeeTheirCpusAndDefaultToThatManyThreads) {
  LaunchOptions options = two_node_options();
  WorkerEnvContext context = context_with({});
  context.bound_cpus = {{2, 3, 4}, {5, 6, 7}};
  const auto env = worker_env(options, context, 1);
  EXPECT_EQ(env.at("GRADWIRE_BOUND_CPUS"), "5,6,7");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "3");  // its CPUs, not 8 cores / 2

  options.threads_per_worker = 1;
  EXPECT_EQ(worker_env(options, context, 0).at("OMP_NUM_THREADS"), "1");
  WorkerEnvContext with_omp = context_with({{"OMP_NUM_THREADS", "7"}});
  with_omp.bound_cpus = context.bound_cpus;
  EXPECT_EQ(worker_env(options, with_omp, 0).at("OMP_NUM_THREADS"), "7");
}

TEST(WorkerEnvTest, UnboundWorkersDoNotInheritBoundCpus) {
  // A launcher started by a binding launcher does not pass that launch's variable on.
  const auto env =
      worker_env(two_node_options(), context_with({{"GRADWIRE_BOUND_CPUS", "0,1"}}), 0);
  EXPECT_EQ(env.count("GRADWIRE_BOUND_CPUS"), 0u);
}

TEST(WorkerEnvTest, DefaultThreadsPerWorkerIsAtLeastOne) {
  EXPECT_EQ(default_threads_per_worker(8, 2), 4);
  EXPECT_EQ(default_threads_per_worker(8, 3), 2);
  EXPECT_EQ(default_threads_per_worker(2, 8), 1);
  EXPECT_EQ(default_threads_per_worker(0, 1), 1);  // hardware_concurrency() unknown
}

TEST(WorkerEnvTest, JobTokenAndRunIdAreSharedAndInherited) {
  const LaunchOptions options = two_node_options();
  const WorkerEnvContext fresh = context_with({});
  EXPECT_EQ(worker_env(options, fresh, 0).at("GRADWIRE_JOB_TOKEN"),
            worker_env(options, fresh, 1).at("GRADWIRE_JOB_TOKEN"));
  EXPECT_EQ(worker_env(options, fresh, 0).at("TORCHELASTIC_RUN_ID"),
            worker_env(options, fresh, 1).at("TORCHELASTIC_RUN_ID"));

  const WorkerEnvContext inherited =
      context_with({{"GRADWIRE_JOB_TOKEN", "parenttoken"}, {"TORCHELASTIC_RUN_ID", "job42"}});
  for (int local = 0; local < 2; ++local) {
    const auto env = worker_env(options, inherited, local);
    EXPECT_EQ(env.at("GRADWIRE_JOB_TOKEN"), "parenttoken");
    EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "job42");
  }

  const WorkerEnvContext empty =
      context_with({{"GRADWIRE_JOB_TOKEN", ""}, {"TORCHELASTIC_RUN_ID", ""}});
  EXPECT_EQ(worker_env(options, empty, 0).at("GRADWIRE_JOB_TOKEN"), fresh.fresh_job_token);
  EXPECT_EQ(worker_env(options, empty, 0).at("TORCHELASTIC_RUN_ID"), "freshrun");
}

TEST(WorkerEnvTest, ExtraEnvOverridesComputedValues) {
  LaunchOptions options = two_node_options();
  options.extra_env = {{"MASTER_ADDR", "override.example"}, {"MY_FLAG", "1"}};
  const auto env = worker_env(options, context_with({{"MY_FLAG", "0"}}), 0);
  EXPECT_EQ(env.at("MASTER_ADDR"), "override.example");
  EXPECT_EQ(env.at("MY_FLAG"), "1");
  EXPECT_EQ(env.at("RANK"), "2");
}

TEST(WorkerEnvTest, ValidOptionsPass) {
  EXPECT_NO_THROW(validate_launch_options(two_node_options()));
  LaunchOptions single;
  single.command = {"prog"};
  EXPECT_NO_THROW(validate_launch_options(single));  // port 0 is fine on one node
}

TEST(WorkerEnvTest, InvalidOptionsThrowInvalidArgument) {
  auto expect_invalid = [](const std::function<void(LaunchOptions&)>& change,
                           const std::string& mention) {
    LaunchOptions options = two_node_options();
    change(options);
    try {
      validate_launch_options(options);
      ADD_FAILURE() << "expected InvalidArgument mentioning " << mention;
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find(mention), std::string::npos) << error.what();
    }
  };
  expect_invalid([](LaunchOptions& o) { o.command.clear(); }, "no program");
  expect_invalid([](LaunchOptions& o) { o.command = {""}; }, "no program");
  expect_invalid([](LaunchOptions& o) { o.nproc_per_node = 0; }, "nproc_per_node");
  expect_invalid([](LaunchOptions& o) { o.nnodes = 0; }, "nnodes");
  expect_invalid([](LaunchOptions& o) { o.node_rank = 2; }, "node_rank");
  expect_invalid([](LaunchOptions& o) { o.node_rank = -1; }, "node_rank");
  expect_invalid([](LaunchOptions& o) { o.master_port = 0; }, "master_port 0");
  expect_invalid([](LaunchOptions& o) { o.master_port = 70000; }, "master_port");
  expect_invalid([](LaunchOptions& o) { o.master_addr.clear(); }, "master_addr");
  expect_invalid([](LaunchOptions& o) { o.grace_period = std::chrono::milliseconds(-1); },
                 "grace_period");
  expect_invalid([](LaunchOptions& o) { o.threads_per_worker = 0; }, "threads_per_worker");
  expect_invalid([](LaunchOptions& o) { o.stdout_fd = -1; }, "stdout_fd");
  expect_invalid([](LaunchOptions& o) { o.extra_env = {{"A=B", "x"}}; }, "A=B");
}

TEST(WorkerEnvTest, RunWorkersRejectsInvalidOptionsBeforeStartingAnything) {
  LaunchOptions options;
  options.command = {"/bin/true"};
  options.nproc_per_node = 0;
  EXPECT_THROW(run_workers(options), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::launch::detail

namespace gradwire::launch::detail {
namespace {

TEST(AllocatorPolicyTest, WorkersKeepFreedMemoryUnlessTheUserChose) {
  std::map<std::string, std::string> env;
  apply_allocator_policy(true, EnvMap{}, env);
  EXPECT_EQ(env["MALLOC_MMAP_THRESHOLD_"], kWorkerMmapThreshold);
  EXPECT_EQ(env["MALLOC_TRIM_THRESHOLD_"], kWorkerTrimThreshold);
  for (const EnvMap& chose : {EnvMap{{"MALLOC_TRIM_THRESHOLD_", "0"}},
                              EnvMap{{"MALLOC_MMAP_THRESHOLD_", "65536"}},
                              EnvMap{{"LD_PRELOAD", "libjemalloc.so.2"}}}) {
    std::map<std::string, std::string> untouched;
    apply_allocator_policy(true, chose, untouched);
    EXPECT_TRUE(untouched.empty());
  }
  std::map<std::string, std::string> untouched;
  apply_allocator_policy(false, EnvMap{}, untouched);
  EXPECT_TRUE(untouched.empty());
}

TEST(ResolveLaunchOptions, OptionThenEnvironmentThenDefault) {
  LaunchOptions options;
  EXPECT_EQ(resolve(options, EnvMap{}).tune_allocator, true);
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_MALLOC", "system"}}).tune_allocator, false);
  options.tune_allocator = true;
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_MALLOC", "system"}}).tune_allocator, true);

  options = LaunchOptions{};
  options.command = {"train"};
  EXPECT_EQ(resolve(options, EnvMap{}).job_token, std::nullopt);  // run_workers makes one
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_JOB_TOKEN", ""}}).job_token, std::nullopt);
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_JOB_TOKEN", "parent"}}).job_token, "parent");
  options.extra_env["GRADWIRE_JOB_TOKEN"] = "extra";
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_JOB_TOKEN", "parent"}}).job_token, "extra");
  options.job_token = "given";
  EXPECT_EQ(resolve(options, EnvMap{{"GRADWIRE_JOB_TOKEN", "parent"}}).job_token, "given");
  // Both ways at once must agree.
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
  options.extra_env["GRADWIRE_JOB_TOKEN"] = "given";
  EXPECT_NO_THROW(validate_launch_options(options));
  // What every worker gets.
  WorkerEnvContext context;
  context.parent = EnvMap{{"GRADWIRE_JOB_TOKEN", "parent"}};
  context.master_port = 29500;
  context.fresh_job_token = "fresh";
  EXPECT_EQ(worker_env(options, context, 0).at("GRADWIRE_JOB_TOKEN"), "given");
  options.tune_allocator = false;
  EXPECT_EQ(worker_env(options, context, 0).count("MALLOC_MMAP_THRESHOLD_"), 0u);
}

}  // namespace
}  // namespace gradwire::launch::detail

namespace gradwire::launch {
namespace {

TEST(WorkersPerNodeTest, NumbersGpuCpuAndAutoAsTorchrunTakesThem) {
  const EnvMap none;
  EXPECT_EQ(resolve_nproc_per_node("3", none, 0, 2), 3);
  EXPECT_EQ(resolve_nproc_per_node("gpu", none, 8, 2), 8);
  EXPECT_EQ(resolve_nproc_per_node("cpu", none, 8, 2), 2);
  EXPECT_EQ(resolve_nproc_per_node("auto", none, 8, 2), 8);
  EXPECT_EQ(resolve_nproc_per_node("auto", none, 0, 2), 2);
  // CUDA_VISIBLE_DEVICES narrows what the driver lists, up to its first invalid entry.
  EXPECT_EQ(resolve_nproc_per_node("gpu", EnvMap{{"CUDA_VISIBLE_DEVICES", "2,3"}}, 8, 2), 2);
  EXPECT_EQ(visible_gpu_count(EnvMap{{"CUDA_VISIBLE_DEVICES", "0,-1,2"}}, 8), 1);
  EXPECT_EQ(visible_gpu_count(EnvMap{{"CUDA_VISIBLE_DEVICES", ""}}, 8), 0);
  EXPECT_EQ(visible_gpu_count(EnvMap{{"CUDA_VISIBLE_DEVICES", "0,1,2"}}, 1), 1);
}

TEST(WorkersPerNodeTest, GpuWithoutOneAndOtherWordsAreRefused) {
  try {
    resolve_nproc_per_node("gpu", EnvMap{{"CUDA_VISIBLE_DEVICES", "-1"}}, 2, 2);
    ADD_FAILURE() << "gpu with no visible GPU was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU is visible"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA_VISIBLE_DEVICES is -1"), std::string::npos);
  }
  EXPECT_THROW(resolve_nproc_per_node("gpus", EnvMap{}, 2, 2), InvalidArgument);
  EXPECT_THROW(resolve_nproc_per_node("-1", EnvMap{}, 2, 2), InvalidArgument);
  EXPECT_THROW(resolve_nproc_per_node("", EnvMap{}, 2, 2), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::launch
