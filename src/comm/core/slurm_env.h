// Pure helpers for Slurm's environment formats.
#pragma once

#include <optional>
#include <string>

#include "gradwire/common/env.h"

namespace gradwire::slurm {

// The first host of a Slurm host list: "node[03-05,7],gpu1" -> "node03"; "a,b" -> "a".
// Throws ConfigError on a malformed list.
std::string first_host(const std::string& nodelist);

// Expands "2(x3),1" into the task count of node `node_index` (here: 2 for 0..2, 1 for 3).
// nullopt when the index is beyond the list; ConfigError when malformed.
std::optional<long> tasks_on_node(const std::string& tasks_per_node, long node_index);

// Local world size from SLURM_NTASKS_PER_NODE, else SLURM_TASKS_PER_NODE + SLURM_NODEID.
std::optional<long> local_world_size(const EnvMap& env);

// The rendezvous port used when MASTER_PORT is unset: 20000 + job_id % 20000.
int default_port(long job_id);

}  // namespace gradwire::slurm
