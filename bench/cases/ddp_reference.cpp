#include "cases/ddp_reference.h"

#include <fstream>
#include <sstream>

#include "gradwire/launch/launcher.h"
#include "harness/command.h"

namespace gradwire::bench {

namespace {

bool readable(const std::string& path) { return !path.empty() && std::ifstream(path).good(); }

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace

std::vector<std::string> python_candidates(const std::string& preferred) {
  if (!preferred.empty()) return {preferred};
  return {"python3", "/usr/bin/python3"};
}

std::optional<PythonTorch> find_python_with_torch(const std::string& preferred,
                                                  std::string& why_not) {
  std::vector<std::string> tried;
  for (const auto& python : python_candidates(preferred)) {
    const CommandOutput probe =
        run_command({python, "-c", "import torch, sys; sys.stdout.write(torch.__version__)"});
    if (probe.succeeded()) return PythonTorch{python, trim(probe.output)};
    tried.push_back(python + (probe.started ? " (cannot import torch)" : " (not found)"));
  }
  why_not = "no Python interpreter with torch: tried " + join(tried, ", ") +
            "; install PyTorch (Debian: apt-get install python3-torch) or pass --python";
  return std::nullopt;
}

std::optional<std::string> find_reference_script(const std::string& preferred,
                                                 std::string& why_not) {
  if (!preferred.empty()) {
    if (readable(preferred)) return preferred;
    why_not = "reference script " + preferred + " cannot be read";
    return std::nullopt;
  }
  for (const std::string candidate : {std::string(GRADWIRE_BENCH_SOURCE_REFERENCE),
                                      std::string(GRADWIRE_BENCH_INSTALLED_REFERENCE)}) {
    if (readable(candidate)) return candidate;
  }
  why_not = "ddp_reference.py is neither at " + std::string(GRADWIRE_BENCH_SOURCE_REFERENCE) +
            " nor at " + GRADWIRE_BENCH_INSTALLED_REFERENCE + ": pass --reference-script";
  return std::nullopt;
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
  if (settings.interleave) command.push_back("--interleave");
  if (!json_path.empty()) {
    command.push_back("--json");
    command.push_back(json_path);
  }
  return command;
}

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

}  // namespace gradwire::bench
