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

namespace gradwire {
namespace {

struct JobOutput {
  int exit_code = -1;
  std::string text;
  std::map<int64_t, int> world_at_step;  // the last report of each step wins (rollbacks redo)
  std::vector<double> final_parameters;
};

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
  const std::regex step(R"(elastic-test: step (\d+) world (\d+))");
  const std::regex final_line(R"(elastic-test: final(.*))");
  std::istringstream lines(output.text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, step)) {
      output.world_at_step[std::stoll(match[1])] = std::stoi(match[2]);
    } else if (std::regex_search(line, match, final_line)) {
      std::istringstream values(match[1].str());
      output.final_parameters.clear();
      for (double value; values >> value;) output.final_parameters.push_back(value);
    }
  }
  return output;
}

// One process: each step trains on the batches every live rank would take, concatenated.
std::vector<double> reference(const std::map<int64_t, int>& world_at_step, int64_t batch) {
  const elastic_test::Data data = elastic_test::make_data();
  auto model = elastic_test::make_model();
  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(elastic_test::kLearningRate).momentum(elastic_test::kMomentum));
  std::vector<data::DistributedSampler> samplers;
  for (const auto& [step, world] : world_at_step) {
    if (static_cast<int>(samplers.size()) != world) {
      std::vector<data::DistributedSampler> next;
      for (int rank = 0; rank < world; ++rank) {
        next.emplace_back(data.x.size(0), elastic_test::sampler_options());
        if (!samplers.empty()) {
          torch::serialize::OutputArchive saved;
          samplers.front().save(saved);
          std::ostringstream bytes;
          saved.save_to(bytes);
          torch::serialize::InputArchive loaded;
          std::istringstream in(bytes.str());
          loaded.load_from(in);
          next.back().load(loaded);
        }
        next.back().reshard(rank, world);
      }
      samplers = std::move(next);
    }
    std::vector<int64_t> indices;
    for (auto& sampler : samplers) {
      auto taken = sampler.next(static_cast<size_t>(batch));
      indices.insert(indices.end(), taken->begin(), taken->end());
    }
    const auto index = torch::tensor(indices);
    optimizer.zero_grad();
    torch::mse_loss(model->forward(data.x.index_select(0, index)), data.y.index_select(0, index))
        .backward();
    optimizer.step();
  }
  std::vector<double> values;
  for (const auto& parameter : model->parameters()) {
    auto flat = parameter.detach().flatten();
    for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(flat[i].item<double>());
  }
  return values;
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
  const JobOutput job =
      run_job("-n 3 --max-restarts 1 " ELASTIC_WORKER_PATH " 36 2 0.1.0:5 50");
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
