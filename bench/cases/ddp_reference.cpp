#include "cases/ddp_reference.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gradwire/launch/launcher.h"
#include "harness/command.h"
#include "harness/host_collectives.h"
#include "harness/report.h"
#include "harness/table.h"

namespace gradwire::bench {

ReferenceNeeds ddp_reference_needs(const DdpSettings& settings) {
  return {settings.python, "", training_script_places(ddp_format(), settings.reference_script)};
}

std::vector<std::string> reference_command(const PythonTorch& python, const std::string& script,
                                           const DdpSettings& settings, int threads_per_rank,
                                           const std::string& json_path) {
  std::ostringstream bucket;
  bucket << settings.bucket_cap_mb;
  std::string world_sizes;
  for (const int size : settings.world_sizes) {
    world_sizes += (world_sizes.empty() ? "" : ",") + std::to_string(size);
  }
  std::vector<std::string> command = {python.python,     script,
                                      "--models",        join(settings.models, ","),
                                      "--batch-size",    std::to_string(settings.batch_size),
                                      "--image-size",    std::to_string(settings.image_size),
                                      "--bucket-cap-mb", bucket.str(),
                                      "--warmup",        std::to_string(settings.warmup),
                                      "--iterations",    std::to_string(settings.iterations),
                                      "--world-sizes",   world_sizes,
                                      "--threads",       std::to_string(threads_per_rank),
                                      "--quiet"};
  if (settings.device == "cuda") {
    for (const char* arg : {"--device", "cuda", "--backend", "nccl"}) command.push_back(arg);
  }
  if (settings.interleave) command.push_back("--interleave");
  if (settings.gradient_as_bucket_view) command.push_back("--gradient-as-bucket-view");
  if (!json_path.empty()) {
    command.push_back("--json");
    command.push_back(json_path);
  }
  return command;
}

namespace {

// Where a rank's reference process finds the others.
struct ReferenceRank {
  int rank = 0;
  int world_size = 1;
  std::string master_addr;
  int master_port = 0;
  int threads = 1;  // OMP_NUM_THREADS, as the gradwire rank's own
};

// Starts `command` as this rank's reference process and waits for it (its stderr goes to ours);
// its exit code.
int run_reference_rank(const std::vector<std::string>& command, const ReferenceRank& rank) {
  launch::LaunchOptions options;
  // One process on this "node": RANK = node_rank, WORLD_SIZE = nnodes.
  options.nproc_per_node = 1;
  options.nnodes = rank.world_size;
  options.node_rank = rank.rank;
  options.master_addr = rank.master_addr;
  options.master_port = rank.master_port;
  options.command = command;
  options.prefix_output = false;
  options.threads_per_worker = rank.threads;
  options.extra_env["OMP_NUM_THREADS"] = std::to_string(rank.threads);
  return launch::run_workers(options).exit_code();
}

}  // namespace

ReferencePlan plan_reference(Communicator& world, const DdpSettings& settings) {
  ReferencePlan plan;
  const std::optional<ReferenceRunner> found =
      find_reference(ddp_reference_needs(settings), plan.why_not);
  plan.run = host_allreduce(world, at::full({1}, found ? 1 : 0, at::kLong), ReduceOp::kMin)
                 .item<std::int64_t>() == 1;
  if (plan.run) {
    plan.python = found->python;
    plan.script = found->script;
  } else if (plan.why_not.empty()) {
    plan.why_not = "another rank cannot run Python with torch";
  }
  return plan;
}

bool run_reference_once(Communicator& world, const std::string& master_addr,
                        const ReferencePlan& plan, const DdpSettings& settings,
                        int threads_per_rank, nlohmann::json& document) {
  at::Tensor port = at::zeros({1}, at::kLong);
  if (world.rank() == 0) port.fill_(launch::pick_free_port(""));
  port = host_broadcast(world, port, 0);
  const std::string json_path =
      "/tmp/gradwire-bench-ddp-reference-" + std::to_string(getpid()) + ".json";
  ReferenceRank rank;
  rank.rank = world.rank();
  rank.world_size = world.size();
  rank.master_addr = master_addr;
  rank.master_port = static_cast<int>(port.item<std::int64_t>());
  rank.threads = threads_per_rank;
  const auto command = reference_command(plan.python, plan.script, settings, threads_per_rank,
                                         world.rank() == 0 ? json_path : "");
  const at::Tensor failed = host_allreduce(
      world, at::full({1}, run_reference_rank(command, rank) != 0 ? 1 : 0, at::kLong),
      ReduceOp::kMax);
  const bool succeeded = failed.item<std::int64_t>() == 0;
  if (succeeded && world.rank() == 0) document = read_json_file(json_path);
  std::remove(json_path.c_str());
  return succeeded;
}

}  // namespace gradwire::bench
