#include "harness/ranks.h"

#include <gtest/gtest.h>

namespace gradwire::bench {
namespace {

TEST(RankEnvironmentTest, RecognisesLaunchers) {
  EXPECT_FALSE(in_rank_environment(EnvMap{}));
  EXPECT_FALSE(in_rank_environment(EnvMap{{"RANK", "0"}}));
  EXPECT_TRUE(in_rank_environment(EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  EXPECT_TRUE(
      in_rank_environment(EnvMap{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  // An salloc shell has a job but no step: not a rank yet.
  EXPECT_FALSE(in_rank_environment(EnvMap{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
  EXPECT_TRUE(in_rank_environment(
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
