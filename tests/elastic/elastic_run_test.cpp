// An elastic job under gradwire-run --elastic: 3 workers, one killed (SIGKILL) at step 5, a
// replacement started by the launcher. The survivors go on without a restart, the replacement
// joins at a commit, and the final model equals, to 1e-9, one process trained on the
// concatenation of the live ranks' batches step by step, following the membership schedule the
// job printed (the world size at every committed step).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
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
  const std::string command =
      "GRADWIRE_TIMEOUT=" + timeout + " GRADWIRE_RENDEZVOUS_TIMEOUT=" + timeout +
      " timeout -k 5 150 " GRADWIRE_RUN_PATH " --elastic --grace-period 2s " + arguments + " > " +
      log + " 2>&1";
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
  // 250 ms a step while fewer than 3 train: the replacement (a new process loading libtorch) has
  // about 7 s to join, however loaded the machine.
  const JobOutput job = run_job("-n 3 --max-restarts 1 " ELASTIC_WORKER_PATH " 36 2 0.1.0:5 250 3");
  expect_equal_to_reference(job, 36, 2);
  EXPECT_NE(job.text.find("worker 0.1.0"), std::string::npos) << job.text;
  EXPECT_NE(job.text.find("a replacement starts"), std::string::npos) << job.text;
  // Steps 1-5 with 3 workers; then 2 until the replacement joined (usually at a commit; on a
  // loaded machine it may reach the survivors' own rendezvous in time); 3 again by the end.
  for (int64_t step = 1; step <= 5; ++step) EXPECT_EQ(job.world_at_step.at(step), 3);
  EXPECT_NE(job.text.find("gradwire elastic: 0.1.1 is rank"), std::string::npos) << job.text;
  EXPECT_EQ(job.world_at_step.at(36), 3) << job.text;
}

TEST(ElasticRun, WithoutReplacementsTheSurvivorsFinish) {
  const JobOutput job = run_job("-n 3 " ELASTIC_WORKER_PATH " 10 4 0.2.0:3");
  expect_equal_to_reference(job, 10, 4);
  EXPECT_EQ(job.world_at_step.at(3), 3);
  EXPECT_EQ(job.world_at_step.at(10), 2);
  EXPECT_NE(job.text.find("no replacements left"), std::string::npos) << job.text;
}

// With --timeline, each worker records under its id: one merged trace with a process track per
// worker, each survivor's generations (its rank and the world's size) and its membership change.
TEST(ElasticRun, WithATimelineEachWorkerHasATrackWithItsGenerations) {
  char dir_template[] = "/tmp/gradwire-elastic-trace-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string trace_path = dir + "/trace.json";
  const JobOutput job =
      run_job("-n 3 --timeline " + trace_path + " " ELASTIC_WORKER_PATH " 10 4 0.2.0:3");
  expect_equal_to_reference(job, 10, 4);
  std::ifstream in(trace_path);
  ASSERT_TRUE(in.good()) << job.text;
  const nlohmann::json trace = nlohmann::json::parse(in);
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  std::map<int64_t, std::string> worker_of_pid;
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") == "M" && event.value("name", "") == "process_name") {
      worker_of_pid[event["pid"].get<int64_t>()] = event["args"]["name"].get<std::string>();
    }
  }
  std::map<std::string, std::vector<int>> worlds;  // worker -> the world size of each generation
  std::map<std::string, int> changes;
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") != "i" || event.value("cat", "") != "elastic") continue;
    const std::string& worker = worker_of_pid[event["pid"].get<int64_t>()];
    if (event["name"] == "generation") worlds[worker].push_back(event["args"]["world_size"]);
    if (event["name"] == "membership change") ++changes[worker];
  }
  std::set<std::string> workers;
  for (const auto& [pid, worker] : worker_of_pid) workers.insert(worker);
  EXPECT_TRUE(workers.count("worker 0.0.0") && workers.count("worker 0.1.0") &&
              workers.count("worker 0.2.0"))
      << trace.dump().substr(0, 2000);
  for (const std::string survivor : {"worker 0.0.0", "worker 0.1.0"}) {
    EXPECT_EQ(worlds[survivor], (std::vector<int>{3, 2})) << survivor;
    EXPECT_EQ(changes[survivor], 1) << survivor;
  }
  std::filesystem::remove_all(dir);
}

TEST(ElasticRun, BelowTheMinimumTheJobFailsNamingWhatIsMissing) {
  const JobOutput job = run_job("-n 2 --min-workers 2 " ELASTIC_WORKER_PATH " 10 4 0.1.0:3", "4s");
  EXPECT_NE(job.exit_code, 0) << job.text;
  EXPECT_NE(job.text.find("at least 2 needed"), std::string::npos) << job.text;
}

// --host-discovery: the job starts with 2 workers; once step 6 is done the script gives this node 3
// slots (a third worker starts and joins at a commit), once 3 workers trained a step 2 again (the
// worker of the highest place gets SIGTERM, the others go on). Steps take 250 ms until both
// changes happened, so that each has time however loaded the machine is.
TEST(ElasticRun, HostDiscoveryGrowsAndShrinksTheJob) {
  char dir_template[] = "/tmp/gradwire-discovery-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string hosts = dir + "/hosts";
  const std::string log = dir + "/out.txt";
  auto write_hosts = [&](const std::string& text) {
    std::ofstream(hosts + ".tmp") << text;
    std::rename((hosts + ".tmp").c_str(), hosts.c_str());
  };
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 1200; ++i) {
      std::ifstream in(log);
      std::stringstream buffer;
      buffer << in.rdbuf();
      if (buffer.str().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  write_hosts("localhost:2\n");
  const std::string pace = dir + "/pace";
  std::ofstream(pace) << "slow\n";  // steps take 250 ms until the file goes
  int status = -1;
  std::thread job([&] {
    const std::string command = "ELASTIC_TEST_PACE_FILE=" + pace +
                                " GRADWIRE_TIMEOUT=30s timeout -k 5 150 " GRADWIRE_RUN_PATH
                                " --elastic -n 2 --grace-period 2s --discovery-interval 200ms "
                                "--host-discovery 'cat " +
                                hosts + "' " ELASTIC_WORKER_PATH " 60 1 - 250 > " + log + " 2>&1";
    status = std::system(command.c_str());
  });
  EXPECT_TRUE(wait_for("elastic-test: step 6 world"));
  write_hosts("# grown\nlocalhost:3\n");
  EXPECT_TRUE(wait_for(" world 3 at "));  // a step trained by 3 workers
  write_hosts("localhost:2\n");
  EXPECT_TRUE(wait_for("after the host discovery asked for fewer workers"));
  EXPECT_TRUE(wait_for("generation 2 world 2"));
  std::remove(pace.c_str());  // the rest at full speed
  job.join();
  JobOutput output;
  std::ifstream in(log);
  std::stringstream buffer;
  buffer << in.rdbuf();
  output.text = buffer.str();
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  parse_job_output(output);
  std::remove(log.c_str());
  std::remove(hosts.c_str());
  ::rmdir(dir.c_str());
  expect_equal_to_reference(output, 60, 1);
  EXPECT_EQ(output.world_at_step.at(1), 2) << output.text;
  EXPECT_EQ(output.world_at_step.at(60), 2) << output.text;
  bool grew = false;
  for (const auto& [step, world] : output.world_at_step) grew = grew || world == 3;
  EXPECT_TRUE(grew) << output.text;
  EXPECT_NE(output.text.find("this node now has 3 slot(s), was 2"), std::string::npos)
      << output.text;
  EXPECT_NE(output.text.find("after the host discovery asked for fewer workers"), std::string::npos)
      << output.text;
}

}  // namespace
}  // namespace gradwire
