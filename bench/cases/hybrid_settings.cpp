#include "cases/hybrid_settings.h"

#include <sstream>

#include "cases/training_case.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {

OptionTable<HybridSettings> hybrid_options() {
  using Settings = HybridSettings;
  OptionTable<Settings> options({"default", "quick"},
                                "settings preset (quick: 2 trainers, 20 epochs)");
  options
      .preset_value("--trainers", &Settings::trainers, {{"quick", 2}}, "trainer processes",
                    positive_number)
      .preset_value("--servers", &Settings::servers, {}, "parameter servers", positive_number)
      .preset_value("--rows", &Settings::rows, {}, "embedding rows", positive_number)
      .preset_value("--dim", &Settings::dim, {}, "embedding columns per server", positive_number)
      .preset_value("--epochs", &Settings::epochs, {{"quick", 20}}, "measured epochs",
                    positive_number)
      .preset_value("--warmup", &Settings::warmup, {{"quick", 2}}, "warm-up epochs",
                    non_negative_number)
      .preset_value("--batches", &Settings::batches, {}, "batches per epoch", positive_number)
      .preset_value("--seed", &Settings::seed, {}, "seed of the batches and the initial weights")
      .option<std::string>(
          "--mode", "server updates: async (on arrival) or sync",
          [](Settings& s, const std::string& mode) {
            s.mode = mode == "sync" ? HybridMode::kSync : HybridMode::kAsync;
          },
          [](CLI::Option& option) {
            option.check(CLI::IsMember({"async", "sync"}))->capture_default_str();
          },
          "async")
      .preset_value("--server-threads", &Settings::server_threads, {},
                    "intra-op threads per server", positive_number)
      .preset_value("--server-processes", &Settings::server_processes, {},
                    "processes hosting the servers (0: gradwire-run's rule, one per server unless "
                    "trainers + servers exceed the cores)",
                    non_negative_number)
      .switch_flag("--defer-pushes", &Settings::defer_pushes,
                   "pushes travel with the next call to their server (the step, in sync mode) "
                   "instead of at once, and no flush() after backward")
      .option<std::string>(
          "--backend",
          "the trainers' communicator backend for DDP: auto (shm when the bench starts the "
          "trainers, all on this host; inside a job the library's choice), gloo, shm or "
          "hierarchical",
          [](Settings& s, const std::string& backend) { s.backend = backend; },
          [](CLI::Option& option) {
            option.check(CLI::IsMember({"gloo", "shm"}))->capture_default_str();
          },
          "auto");
  add_training_flags(options, "the algorithm with PyTorch RPC", "gradwire and the reference",
                     "hybrid_reference.py");
  return options;
}

const char* to_string(HybridMode mode) { return mode == HybridMode::kSync ? "sync" : "async"; }

HybridSettings resolve_hybrid_settings(const OptionTable<HybridSettings>& options,
                                       std::optional<HybridJob> job) {
  HybridSettings settings = options.resolve();
  // Trainers the bench starts itself share this host, where "auto" means shm.
  if (settings.backend == "auto" && !job) settings.backend = "shm";
  if (job) {
    if ((options.given("--trainers") && settings.trainers != job->trainers) ||
        (options.given("--servers") && settings.servers != job->servers)) {
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
  return settings;
}

std::string describe_hybrid_settings(const HybridSettings& settings) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": " << counted(settings.trainers, "trainer") << " x "
       << counted(settings.servers, "server") << ", " << settings.rows << " rows x " << settings.dim
       << " per server (" << settings.embedding_width() << " wide), " << settings.warmup
       << " warm-up + " << settings.epochs << " epochs of " << settings.batches << " batches, seed "
       << settings.seed << ", " << to_string(settings.mode) << " updates, " << settings.backend
       << " allreduce" << (settings.reference_pytorch ? ", reference pytorch" : "");
  if (settings.server_processes > 0) {
    text << ", servers in " << settings.server_processes
         << (settings.server_processes == 1 ? " process" : " processes");
  }
  if (settings.defer_pushes) text << ", deferred pushes";
  if (settings.repeat > 1) text << ", " << settings.repeat << " repeats";
  return text.str();
}

}  // namespace gradwire::bench
