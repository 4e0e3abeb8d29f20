#include "cases/hybrid_settings.h"

#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {

namespace {

HybridSettings preset_named(const std::string& name) {
  HybridSettings settings;
  settings.preset = name;
  if (name == "default") return settings;
  if (name == "quick") {
    settings.trainers = 2;
    settings.epochs = 20;
    settings.warmup = 2;
    return settings;
  }
  throw InvalidArgument("unknown preset '" + name + "': use default or quick");
}

HybridMode mode_named(const std::string& name) {
  if (name == "async") return HybridMode::kAsync;
  if (name == "sync") return HybridMode::kSync;
  throw InvalidArgument("unknown mode '" + name + "': use async or sync");
}

}  // namespace

const std::vector<std::string>& hybrid_presets() {
  static const std::vector<std::string> kPresets = {"default", "quick"};
  return kPresets;
}

const char* to_string(HybridMode mode) { return mode == HybridMode::kSync ? "sync" : "async"; }

HybridSettings resolve_hybrid_settings(const HybridFlags& flags, std::optional<HybridJob> job) {
  HybridSettings settings = preset_named(flags.preset);
  if (flags.trainers) settings.trainers = *flags.trainers;
  if (flags.servers) settings.servers = *flags.servers;
  if (flags.rows) settings.rows = *flags.rows;
  if (flags.dim) settings.dim = *flags.dim;
  if (flags.epochs) settings.epochs = *flags.epochs;
  if (flags.warmup) settings.warmup = *flags.warmup;
  if (flags.batches) settings.batches = *flags.batches;
  if (flags.seed) settings.seed = *flags.seed;
  if (flags.repeat) settings.repeat = *flags.repeat;
  if (flags.server_threads) settings.server_threads = *flags.server_threads;
  settings.mode = mode_named(flags.mode);
  if (flags.backend != "auto" && flags.backend != "gloo" && flags.backend != "shm" &&
      flags.backend != "hierarchical") {
    throw InvalidArgument("unknown backend '" + flags.backend +
                          "': use auto, gloo, shm or hierarchical");
  }
  // Trainers the bench starts itself share this host, where "auto" means shm.
  settings.backend = flags.backend == "auto" && !job ? "shm" : flags.backend;
  if (!flags.reference.empty() && flags.reference != "pytorch") {
    throw InvalidArgument("unknown reference '" + flags.reference + "': use pytorch");
  }
  settings.reference_pytorch = flags.reference == "pytorch";

  if (job) {
    if ((flags.trainers && *flags.trainers != job->trainers) ||
        (flags.servers && *flags.servers != job->servers)) {
      throw InvalidArgument("this job has " + std::to_string(job->trainers) + " trainers and " +
                            std::to_string(job->servers) +
                            " servers (WORLD_SIZE, GRADWIRE_PS_ADDRS) but --trainers/--servers "
                            "ask for others: drop them or start the job with matching counts");
    }
    if (settings.reference_pytorch || settings.repeat > 1) {
      throw InvalidArgument(
          "--reference and --repeat need gradwire-bench to start its own servers and trainers: "
          "run gradwire-bench hybrid directly, not under gradwire-run");
    }
    settings.trainers = job->trainers;
    settings.servers = job->servers;
  }
  if (settings.trainers < 1 || settings.servers < 1 || settings.rows < 1 || settings.dim < 1 ||
      settings.epochs < 1 || settings.batches < 1 || settings.repeat < 1 ||
      settings.server_threads < 1 || settings.warmup < 0) {
    throw InvalidArgument(
        "trainers, servers, rows, dim, epochs, batches, repeats and server threads must be "
        "positive and warm-up non-negative");
  }
  settings.json_path = flags.json_path;
  settings.html_path = flags.html_path;
  settings.python = flags.python;
  settings.reference_script = flags.reference_script;
  return settings;
}

std::string describe_hybrid_settings(const HybridSettings& settings) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": " << settings.trainers
       << (settings.trainers == 1 ? " trainer x " : " trainers x ") << settings.servers
       << (settings.servers == 1 ? " server, " : " servers, ") << settings.rows << " rows x "
       << settings.dim << " per server (" << settings.embedding_width() << " wide), "
       << settings.warmup << " warm-up + " << settings.epochs << " epochs of " << settings.batches
       << " batches, seed " << settings.seed << ", " << to_string(settings.mode) << " updates, "
       << settings.backend << " allreduce"
       << (settings.reference_pytorch ? ", reference pytorch" : "");
  if (settings.repeat > 1) text << ", " << settings.repeat << " repeats";
  return text.str();
}

}  // namespace gradwire::bench
