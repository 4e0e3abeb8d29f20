// --nproc-per-node as torchrun takes it (launcher.h, resolve_nproc_per_node).
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"

namespace gradwire::launch {
namespace {

// The devices CUDA_VISIBLE_DEVICES names: a comma-separated list, cut at the first invalid entry
// as the CUDA runtime does ("-1" or an empty value: none).
int visible_in(const std::string& list) {
  int count = 0;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string entry = list.substr(start, end - start);
    if (entry.empty() || entry[0] == '-') break;
    ++count;
    start = end + 1;
  }
  return count;
}

bool is_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

int visible_gpu_count(const EnvMap& env, int driver_gpus) {
  const std::optional<std::string> visible = env.get("CUDA_VISIBLE_DEVICES");
  if (!visible) return driver_gpus;
  return std::min(visible_in(*visible), driver_gpus);
}

int resolve_nproc_per_node(const std::string& text, const EnvMap& env, int driver_gpus,
                           int cpus) {
  if (is_number(text)) return std::stoi(text);
  const int gpus = visible_gpu_count(env, driver_gpus);
  if (text == "gpu") {
    if (gpus == 0) {
      throw InvalidArgument(
          "--nproc-per-node gpu: no GPU is visible (the NVIDIA driver lists " +
          std::to_string(driver_gpus) + ", CUDA_VISIBLE_DEVICES is " +
          env.get("CUDA_VISIBLE_DEVICES").value_or("unset") + ")");
    }
    return gpus;
  }
  if (text == "cpu") return cpus;
  if (text == "auto") return gpus > 0 ? gpus : cpus;
  throw InvalidArgument("--nproc-per-node takes a number, gpu, cpu or auto, not '" +
                        text + "'");
}

int driver_gpu_count() {
  DIR* dir = opendir("/proc/driver/nvidia/gpus");
  if (dir == nullptr) return 0;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

}  // namespace gradwire::launch
