// An elastic job under gradwire-run --elastic: 3 workers, one killed (SIGKILL) at step 5, a
// replacement started by the launcher. The survivors go on without a restart, the replacement
// joins at a commit, and the final model equals, to 1e-9, one process trained on the
// concatenation of the live ranks' batches step by step, following the membership schedule the
// job printed (the world size at every committed step).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "elastic_data.h"

using gradwire::elastic_test::JobOutput;
using gradwire::elastic_test::parse_job_output;
using gradwire::elastic_test::reference;

namespace gradwire {
namespace {

JobOutput run_job(const std::string& arguments, const std::string& timeout = "30s") {
  char dir_template[] = "/tmp/gradwire-elastic-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string log = dir + "/out.txt";
  const std::string command = "GRADWIRE_TIMEOUT=" + timeout +
                              " timeout -k 5 150 " GRADWIRE_RUN_PATH
                              " --elastic --grace-period 2s " +
                              arguments + " > " + log + " 2>&1";
  JobOutput output;
  const int status = std::system(command.c_str());
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::ifstream in(log);
  std::stringstream buffer;
  buffer << in.rdbuf();
  output.text = buffer.str();
  std::remove(log.c_str());
  ::rmdir(dir.c_str());
  parse_job_output(output);
  return output;
}

void expect_equal_to_reference(const JobOutput& job, int64_t steps, int64_t batch) {
  ASSERT_EQ(job.exit_code, 0) << job.text;
  ASSERT_EQ(static_cast<int64_t>(job.world_at_step.size()), steps) << job.text;
  const std::vector<double> expected = reference(job.world_at_step, batch);
  ASSERT_EQ(job.final_parameters.size(), expected.size()) << job.text;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(job.final_parameters[i], expected[i], 1e-9) << "parameter " << i << "\n"
                                                            << job.text;
  }
}

TEST(ElasticRun, WithoutFailuresEqualsOneProcess) {
  const JobOutput job = run_job("-n 3 " ELASTIC_WORKER_PATH " 8 4");
  expect_equal_to_reference(job, 8, 4);
  for (const auto& [step, world] : job.world_at_step) EXPECT_EQ(world, 3) << "step " << step;
}

TEST(ElasticRun, SurvivorsGoOnAndAReplacementJoins) {
  // 50 ms a step: the replacement (a new process loading libtorch) has time to join.
  const JobOutput job = run_job("-n 3 --max-restarts 1 " ELASTIC_WORKER_PATH " 36 2 0.1.0:5 50");
  expect_equal_to_reference(job, 36, 2);
  EXPECT_NE(job.text.find("worker 0.1.0"), std::string::npos) << job.text;
  EXPECT_NE(job.text.find("a replacement starts"), std::string::npos) << job.text;
  // Steps 1-5 with 3 workers; then 2 until the replacement joined; 3 again by the end.
  for (int64_t step = 1; step <= 5; ++step) EXPECT_EQ(job.world_at_step.at(step), 3);
  bool shrank = false;
  for (const auto& [step, world] : job.world_at_step) shrank = shrank || world == 2;
  EXPECT_TRUE(shrank) << job.text;
  EXPECT_EQ(job.world_at_step.at(36), 3) << job.text;
}

TEST(ElasticRun, WithoutReplacementsTheSurvivorsFinish) {
  const JobOutput job = run_job("-n 3 " ELASTIC_WORKER_PATH " 10 4 0.2.0:3");
  expect_equal_to_reference(job, 10, 4);
  EXPECT_EQ(job.world_at_step.at(3), 3);
  EXPECT_EQ(job.world_at_step.at(10), 2);
  EXPECT_NE(job.text.find("no replacements left"), std::string::npos) << job.text;
}

TEST(ElasticRun, BelowTheMinimumTheJobFailsNamingWhatIsMissing) {
  const JobOutput job = run_job("-n 2 --min-workers 2 " ELASTIC_WORKER_PATH " 10 4 0.1.0:3", "4s");
  EXPECT_NE(job.exit_code, 0) << job.text;
  EXPECT_NE(job.text.find("at least 2 needed"), std::string::npos) << job.text;
}

}  // namespace
}  // namespace gradwire
