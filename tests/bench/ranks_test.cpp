#include "harness/ranks.h"

#include <gtest/gtest.h>

namespace gradwire::bench {
namespace {

// gradwire-bench decides "join the job or start my own ranks" with comm's one detector.
TEST(RankEnvironmentTest, RecognisesLaunchers) {
  EXPECT_FALSE(in_launcher_environment(EnvMap{}));
  EXPECT_TRUE(in_launcher_environment(EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  // A partial environment counts as a job, so init names what is missing instead of the bench
  // quietly starting ranks of its own.
  EXPECT_TRUE(in_launcher_environment(EnvMap{{"RANK", "0"}}));
  EXPECT_TRUE(in_launcher_environment(
      EnvMap{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  // An salloc shell has a job but no step: not a rank yet, the bench starts its own ranks.
  EXPECT_FALSE(in_launcher_environment(
      EnvMap{{"SLURM_JOB_ID", "5"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "node[1-2]"}}));
  EXPECT_FALSE(in_launcher_environment(EnvMap{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
  EXPECT_TRUE(in_launcher_environment(
      EnvMap{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_ID", "0"}}));
}

TEST(RankThreadsTest, SplitsCoresBetweenLocalRanks) {
  EXPECT_EQ(default_threads_per_rank(2, 2), 1);
  EXPECT_EQ(default_threads_per_rank(16, 4), 4);
  EXPECT_EQ(default_threads_per_rank(2, 8), 1);
  EXPECT_EQ(default_threads_per_rank(8, 0), 8);
}

TEST(UserCommandTest, HidesTheRelaunchDetails) {
  EXPECT_EQ(user_command({"/proc/self/exe", "collectives", "--iters", "3", kWorkerFlag}),
            (std::vector<std::string>{"gradwire-bench", "collectives", "--iters", "3"}));
  EXPECT_EQ(user_command({"./gradwire-bench", "collectives"}),
            (std::vector<std::string>{"./gradwire-bench", "collectives"}));
}

}  // namespace
}  // namespace gradwire::bench
