#include "harness/trainer_jobs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/table.h"

namespace gradwire::bench {

nlohmann::json run_trainer_job(const TrainerJob& job, int repeat) {
  const std::string result_file = "/tmp/gradwire-bench-" + job.name + "-" +
                                  std::to_string(getpid()) + "-" + std::to_string(repeat) + ".json";
  std::remove(result_file.c_str());
  launch::LaunchOptions options;
  options.nproc_per_node = job.trainers;
  options.command = job.argv;
  options.command.at(0) = "/proc/self/exe";
  options.command.push_back(kWorkerFlag);
  options.command.insert(options.command.end(), job.flags.begin(), job.flags.end());
  options.command.insert(options.command.end(), {job.result_flag, result_file});
  options.prefix_output = false;
  options.threads_per_worker = job.threads;
  options.extra_env["OMP_NUM_THREADS"] = std::to_string(job.threads);
  options.servers = job.servers;
  options.server_processes = job.server_processes;
  if (!job.timeline.empty()) options.timeline = job.timeline;
  if (job.servers > 0) {
    // An empty program: gradwire-ps-server next to this program, else on PATH.
    options.server_command = {""};
    options.server_command.insert(options.server_command.end(), job.server_arguments.begin(),
                                  job.server_arguments.end());
  }
  const launch::LaunchResult result = launch::run_workers(options);
  if (result.exit_code() != 0) {
    std::remove(result_file.c_str());
    throw Error("the " + job.name + " run failed (exit status " +
                std::to_string(result.exit_code()) + "):\n" + result.summary());
  }
  std::ifstream in(result_file);
  if (!in) throw Error("trainer 0 left no results at " + result_file + ": see its messages above");
  nlohmann::json document;
  in >> document;
  in.close();
  std::remove(result_file.c_str());
  return document;
}

nlohmann::json run_reference_command(std::vector<std::string> command, const std::string& name) {
  const std::string json_path =
      "/tmp/gradwire-bench-" + name + "-reference-" + std::to_string(getpid()) + ".json";
  std::remove(json_path.c_str());
  const std::string what =
      join(std::vector<std::string>(command.begin(),
                                    command.begin() + std::min<std::size_t>(2, command.size())),
           " ");
  command.insert(command.end(), {"--json", json_path});
  launch::LaunchOptions options;
  options.command = std::move(command);
  options.prefix_output = false;
  options.stdout_fd = 2;  // its messages are progress; the tables are ours
  options.threads_per_worker = 1;
  options.extra_env["OMP_NUM_THREADS"] = "1";
  const launch::LaunchResult result = launch::run_workers(options);
  if (result.exit_code() != 0) {
    std::remove(json_path.c_str());
    throw Error("the PyTorch reference (" + what + ") failed with exit status " +
                std::to_string(result.exit_code()) + ": see its messages above");
  }
  nlohmann::json document = read_json_file(json_path);
  std::remove(json_path.c_str());
  return document;
}

}  // namespace gradwire::bench
