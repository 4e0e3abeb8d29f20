#include "cases/hybrid_settings.h"

#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {

namespace {

HybridMode mode_named(const std::string& name) {
  if (name == "async") return HybridMode::kAsync;
  if (name == "sync") return HybridMode::kSync;
  throw InvalidArgument("unknown mode '" + name + "': use async or sync");
}

}  // namespace

const OptionTable<HybridFlags, HybridSettings>& hybrid_options() {
  using Flags = HybridFlags;
  using Settings = HybridSettings;
  static const auto table = [] {
    OptionTable<Flags, Settings> options({"default", "quick"},
                                         "settings preset (quick: 2 trainers, 20 epochs)");
    options
        .preset_value("--trainers", &Flags::trainers, &Settings::trainers, {{"quick", 2}},
                      "trainer processes", positive_number)
        .preset_value("--servers", &Flags::servers, &Settings::servers, {}, "parameter servers",
                      positive_number)
        .preset_value("--rows", &Flags::rows, &Settings::rows, {}, "embedding rows",
                      positive_number)
        .preset_value("--dim", &Flags::dim, &Settings::dim, {}, "embedding columns per server",
                      positive_number)
        .preset_value("--epochs", &Flags::epochs, &Settings::epochs, {{"quick", 20}},
                      "measured epochs", positive_number)
        .preset_value("--warmup", &Flags::warmup, &Settings::warmup, {{"quick", 2}},
                      "warm-up epochs", non_negative_number)
        .preset_value("--batches", &Flags::batches, &Settings::batches, {}, "batches per epoch",
                      positive_number)
        .preset_value("--seed", &Flags::seed, &Settings::seed, {},
                      "seed of the batches and the initial weights")
        .option("--mode", &Flags::mode, "server updates: async (on arrival) or sync",
                [](CLI::Option& option) {
                  option.check(CLI::IsMember({"async", "sync"}))->capture_default_str();
                })
        .preset_value("--server-threads", &Flags::server_threads, &Settings::server_threads, {},
                      "intra-op threads per server", positive_number)
        .option("--json", &Flags::json_path, "write the results to this JSON file")
        .option("--html", &Flags::html_path, "draw the results into this HTML page")
        .option("--reference", &Flags::reference,
                "also run the algorithm with PyTorch RPC (bench/reference/hybrid_reference.py)",
                [](CLI::Option& option) { option.check(CLI::IsMember({"pytorch"})); })
        .preset_value("--repeat", &Flags::repeat, &Settings::repeat, {},
                      "run gradwire and the reference alternately this many times and pool",
                      positive_number)
        .option("--python", &Flags::python,
                "Python with torch for --reference [python3, then /usr/bin/python3]")
        .option("--reference-script", &Flags::reference_script,
                "path of hybrid_reference.py [the source tree's, then the installed copy]")
        .option("--backend", &Flags::backend,
                "the trainers' communicator backend for DDP: auto (shm when the bench starts the "
                "trainers, all on this host; inside a job the library's choice), gloo, shm or "
                "hierarchical",
                [](CLI::Option& option) {
                  option.check(CLI::IsMember({"gloo", "shm"}))->capture_default_str();
                });
    return options;
  }();
  return table;
}

const char* to_string(HybridMode mode) { return mode == HybridMode::kSync ? "sync" : "async"; }

HybridSettings resolve_hybrid_settings(const HybridFlags& flags, std::optional<HybridJob> job) {
  HybridSettings settings = hybrid_options().resolve(flags);
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
