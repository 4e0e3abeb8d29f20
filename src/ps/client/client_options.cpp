// ClientOptions filled from the environment (resolve() in include/gradwire/ps/client.h): the
// servers, the token, the trainer's rank and count, the job's attempt, the step timeout and the
// TLS roots. Pure: reads only the EnvMap (and the token file it names).
#include <sstream>

#include "gradwire/common/error.h"
#include "gradwire/common/host_identity.h"
#include "gradwire/common/launcher_env.h"
#include "gradwire/common/settings.h"
#include "gradwire/ps/client.h"
#include "rpc/auth.h"

namespace gradwire::ps {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> split_addresses(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

ClientOptions resolve(const ClientOptions& options, const EnvMap& env) {
  ClientOptions resolved = options;
  if (!resolved.servers) {
    resolved.servers = split_addresses(env.get(settings::kPsAddrs.name).value_or(""));
  }
  if (resolved.servers->empty()) {
    throw ConfigError(
        "gradwire: no parameter servers: ClientOptions::servers is empty and GRADWIRE_PS_ADDRS "
        "is unset. Start the job with gradwire-run --servers S, or list the servers' "
        "HOST:PORT addresses in GRADWIRE_PS_ADDRS (comma-separated).");
  }
  resolved.token = rpc::load_token(options.token.value_or(""), options.token_file, env);
  if (!resolved.rank || !resolved.world_size) {
    // The one launcher detector comm uses too: torchrun, mpirun, an srun step, else 0 of 1.
    const LauncherRank launcher = launcher_rank(env);
    if (!resolved.rank) resolved.rank = launcher.rank;
    if (!resolved.world_size) resolved.world_size = launcher.world_size;
  }
  if (!resolved.attempt) {
    for (const char* variable : {"TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"}) {
      if (const std::optional<std::string> text = env.get(variable)) {
        const int64_t count = env.get_int(variable).value_or(0);
        if (count < 0) {
          throw ConfigError("gradwire: " + std::string(variable) + "='" + *text +
                            "' is not a restart count (need an integer >= 0)");
        }
        resolved.attempt = count;
        break;
      }
    }
    if (!resolved.attempt) resolved.attempt = 0;
  }
  if (!resolved.step_timeout) {
    resolved.step_timeout = settings::timeout(env);
  }
  if (!resolved.tls_root_cert_file) {
    resolved.tls_root_cert_file = env.get(settings::kTlsRoots.name).value_or("");
  }
  if (!resolved.shared_memory) {
    const std::optional<std::string> text = env.get(settings::kPsSharedMemory.name);
    if (text && *text != "0" && *text != "1") {
      throw ConfigError("gradwire: GRADWIRE_PS_SHARED_MEMORY='" + *text +
                        "' (need 0 or 1: whether trainers share memory with the servers on "
                        "their host)");
    }
    resolved.shared_memory = !text || *text == "1";
  }
  if (!resolved.elastic) resolved.elastic = env.get(settings::kElasticId.name).has_value();
  if (!resolved.host_identity) resolved.host_identity = local_host_identity(env);
  return resolved;
}

}  // namespace gradwire::ps
