#include "comm/core/slurm_env.h"

#include <cctype>
#include <cstdlib>

#include "gradwire/common/error.h"

namespace gradwire::slurm {

std::string first_host(const std::string& nodelist) {
  // The first entry ends at the first comma outside brackets.
  size_t depth = 0, end = 0;
  for (; end < nodelist.size(); ++end) {
    char c = nodelist[end];
    if (c == '[')
      ++depth;
    else if (c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (c == ',' && depth == 0)
      break;
  }
  std::string entry = nodelist.substr(0, end);
  auto open = entry.find('[');
  if (entry.empty() || depth != 0 || (open != std::string::npos && entry.back() != ']')) {
    throw ConfigError("gradwire: cannot read Slurm host list '" + nodelist +
                      "'; set MASTER_ADDR to the first host of the job");
  }
  if (open == std::string::npos) return entry;
  // "prefix[03-05,7]suffix" is not used by Slurm; take the first range's start.
  std::string ranges = entry.substr(open + 1, entry.size() - open - 2);
  std::string first = ranges.substr(0, ranges.find_first_of(",-"));
  if (first.empty()) {
    throw ConfigError("gradwire: cannot read Slurm host list '" + nodelist +
                      "'; set MASTER_ADDR to the first host of the job");
  }
  return entry.substr(0, open) + first;
}

std::optional<long> tasks_on_node(const std::string& tasks_per_node, long node_index) {
  // Entries are "N" or "N(xK)", comma separated.
  long seen = 0;
  size_t pos = 0;
  auto malformed = [&]() {
    return ConfigError("gradwire: cannot read SLURM_TASKS_PER_NODE='" + tasks_per_node + "'");
  };
  while (pos < tasks_per_node.size()) {
    char* end = nullptr;
    long count = std::strtol(tasks_per_node.c_str() + pos, &end, 10);
    size_t next = end - tasks_per_node.c_str();
    if (next == pos) throw malformed();
    long repeat = 1;
    if (next < tasks_per_node.size() && tasks_per_node[next] == '(') {
      if (tasks_per_node.compare(next, 2, "(x") != 0) throw malformed();
      repeat = std::strtol(tasks_per_node.c_str() + next + 2, &end, 10);
      next = end - tasks_per_node.c_str();
      if (next >= tasks_per_node.size() || tasks_per_node[next] != ')') throw malformed();
      ++next;
    }
    if (node_index < seen + repeat) return count;
    seen += repeat;
    if (next < tasks_per_node.size() && tasks_per_node[next] != ',') throw malformed();
    pos = next + 1;
  }
  return std::nullopt;
}

std::optional<long> local_world_size(const EnvMap& env) {
  if (auto n = env.get_int("SLURM_NTASKS_PER_NODE")) return n;
  auto tasks = env.get("SLURM_TASKS_PER_NODE");
  auto node = env.get_int("SLURM_NODEID");
  if (tasks && node) return tasks_on_node(*tasks, *node);
  return std::nullopt;
}

int default_port(long job_id) { return static_cast<int>(20000 + (job_id % 20000)); }

}  // namespace gradwire::slurm
