// `gradwire-bench hybrid`: PyTorch's DDP + RPC benchmark's DDP + parameter-server training
// (PyTorch's benchmark_ddp_rpc.py) measured with gradwire, optionally side by side with the same
// algorithm in PyTorch (hybrid_reference.h).
//
// Processes. Run directly, this process is the conductor: per repeat it starts S parameter
// servers (gradwire-ps-server, found next to this program) and T trainer copies of itself with
// gradwire::launch::run_workers (LaunchOptions::servers), then, with --reference pytorch, the
// reference; it prints the header, the reference's tables and the comparison, and writes the
// JSON and HTML. The trainers train (hybrid_training.h), gather their measurements to trainer 0,
// which prints gradwire's table and phase split and hands them to the conductor in a file. Under
// gradwire-run --servers S the trainers are the job's ranks and trainer 0 also writes the JSON.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "cases/ddp_training.h"
#include "cases/hybrid_reference.h"
#include "cases/hybrid_report.h"
#include "cases/hybrid_results.h"
#include "cases/hybrid_settings.h"
#include "cases/hybrid_training.h"
#include "cases/parity.h"
#include "cases/ps_transports.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/version.h"
#include "harness/hardware.h"
#include "harness/ranks.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/trainer_jobs.h"
#include "report/html_report.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

// The hidden option through which the conductor tells trainer 0 where to leave the results.
constexpr const char* kResultFileFlag = "--hybrid-result-file";
constexpr const char* kRepeatIndexFlag = "--hybrid-repeat-index";
// Intra-op threads of every trainer (PyTorch's benchmark: one per process), and of the plain step.
constexpr int kTrainerThreads = 1;

void progress(const std::string& line) {
  std::cerr << "gradwire-bench hybrid: " << line << std::endl;
}

struct State {
  OptionTable<HybridSettings> options = hybrid_options();
  RankOptions ranks;
  std::string result_file;  // set in trainers started by the conductor
  int repeat_index = 1;
};

int count_addresses(const std::string& list) {
  if (list.empty()) return 0;
  int count = 1;
  for (const char c : list) count += c == ',' ? 1 : 0;
  return count;
}

void write_outputs(const HybridSettings& settings, const nlohmann::json& document) {
  write_result_files(settings.json_path, settings.html_path, document, progress);
}

// A trainer: train, gather to trainer 0, which prints and hands over (or writes) the results.
int run_trainer(RankContext& context, const HybridSettings& settings, const State& state,
                const std::vector<std::string>& argv) {
  const std::shared_ptr<Communicator> communicator = context.world.communicator();
  std::vector<std::string> transports;
  const HybridTrainerResult mine =
      train_hybrid(settings, communicator, state.repeat_index, &transports);
  const HybridResult all =
      gather_trainer_samples(*communicator, mine, {hybrid_phases(), {}}, "gradwire");
  if (!context.reports()) return 0;
  std::ostream& out = repeat_output(settings.repeat);
  // Chosen as DDP's backend is: shared memory where the servers are on this host.
  out << "gradwire: trainer 0's parameter-server calls: " << describe_transports(transports)
      << ", DDP over " << communicator->backend() << "\n";
  const std::string suffix = settings.repeat > 1
                                 ? " (repeat " + std::to_string(state.repeat_index) + " of " +
                                       std::to_string(settings.repeat) + ")"
                                 : "";
  print_hybrid_table(out, all, "gradwire: DDP + parameter servers" + suffix);
  print_hybrid_phases(out, all, "gradwire: where an epoch goes (mean ms per epoch)" + suffix);
  if (!state.result_file.empty()) {
    nlohmann::json document = {{"implementation", "gradwire"},
                               {"backend", communicator->backend()},
                               {"transports", transports},
                               {"trainers", trainers_to_json(all, hybrid_step_names())}};
    write_json_file(state.result_file, document);
    return 0;
  }
  HybridDocumentInputs inputs;
  inputs.metadata = run_metadata(context, argv);  // the communicator's backend
  inputs.settings = settings;
  inputs.gradwire = all;
  inputs.transports = {transports};
  write_outputs(settings, hybrid_document(inputs));
  return 0;
}

class Conductor {
 public:
  Conductor(HybridSettings settings, std::vector<std::string> argv)
      : settings_(std::move(settings)), argv_(std::move(argv)) {}

  int run() {
    std::string reference_line;
    if (settings_.reference_pytorch) {
      const ReferenceRunner reference = require_reference(hybrid_reference_needs(settings_));
      python_ = reference.python;
      script_ = reference.script;
      reference_line = "PyTorch " + python_.torch_version +
                       " RPC (TensorPipe) + distributed autograd + DistributedOptimizer (" +
                       python_.python + " " + script_ + "), same batches, " +
                       reference_order(settings_.repeat);
    }
    progress(describe_hybrid_settings(settings_));
    print_hybrid_header(std::cout, settings_, reference_line, describe_hardware());

    AlternatingRuns<HybridResult> runs;
    runs.repeats = settings_.repeat;
    runs.ours = [&](int repeat) { return run_gradwire(repeat); };
    if (settings_.reference_pytorch) {
      runs.reference = [&](int, nlohmann::json& document) {  // throws when it fails
        progress("running the PyTorch reference: " + python_.python + " " + script_);
        document = run_hybrid_reference(python_, script_, settings_);
        add_reference_plain_step(plain_, document, "the PyTorch reference");
        return true;
      };
      runs.reference_result = [&](const nlohmann::json& document) {
        HybridResult theirs = parse_hybrid_result(document, "the PyTorch reference");
        std::ostream& out = repeat_output(settings_.repeat);
        print_hybrid_table(out, theirs,
                           "reference: PyTorch " + python_.torch_version + " RPC + DDP");
        print_hybrid_phases(out, theirs, "reference: where an epoch goes (mean ms per epoch)");
        return theirs;
      };
    }
    runs.progress = progress;
    Repeats<HybridResult> repeats;
    run_alternating(runs, repeats);

    const HybridResult pooled = pool_trainer_repeats(repeats.ours);
    if (settings_.repeat > 1) {
      std::cout << "\n(all " << settings_.repeat << " repeats pooled)\n";
      print_hybrid_table(std::cout, pooled, "gradwire: DDP + parameter servers");
      print_hybrid_phases(std::cout, pooled, "gradwire: where an epoch goes (mean ms per epoch)");
    }
    HybridDocumentInputs inputs;
    // The dense part's backend as trainer 0's communicator reported it, every repeat.
    inputs.metadata = conductor_metadata(summarize_values(backends_), settings_.trainers, 1, argv_);
    inputs.transports = transports_;
    inputs.settings = settings_;
    inputs.gradwire = pooled;
    if (!repeats.reference_document.is_null()) {
      const HybridResult reference = pool_trainer_repeats(repeats.reference);
      if (settings_.repeat > 1) {
        print_hybrid_table(std::cout, reference, "reference: PyTorch RPC + DDP");
        print_hybrid_phases(std::cout, reference, "reference: where an epoch goes");
      }
      inputs.ratio_by_repeat = p50_ratio_by_repeat(repeats.ours, repeats.reference);
      repeats.reference_document["trainers"] = trainers_to_json(reference, hybrid_step_names());
      repeats.reference_document["repeat"] = settings_.repeat;
      if (plain_.reference) repeats.reference_document["plain_step"] = to_json(*plain_.reference);
      inputs.reference = repeats.reference_document;
      print_hybrid_comparison(std::cout, pooled, reference,
                              "gradwire against PyTorch " + python_.torch_version +
                                  " (RPC, dist autograd, DistributedOptimizer), same batches",
                              inputs.ratio_by_repeat);
      print_plain_step_parity(std::cout, plain_, hybrid_plain_step_names(settings_));
      inputs.plain_step = plain_;
    }
    write_outputs(settings_, hybrid_document(inputs));
    return 0;
  }

 private:
  HybridResult run_gradwire(int repeat) {
    if (settings_.reference_pytorch) {
      // Compute parity (cases/parity.h): before the job, with the machine to ourselves, on as
      // many threads as each trainer.
      progress("timing the plain step (" + hybrid_plain_step_names(settings_).what +
               "): " + std::to_string(kHybridPlainWarmup) + " + " +
               std::to_string(kHybridPlainEpochs) + " epochs");
      add_gradwire_plain_step(plain_, time_hybrid_plain_step(settings_, kTrainerThreads));
    }
    TrainerJob job;
    job.argv = argv_;
    job.flags = {kRepeatIndexFlag, std::to_string(repeat)};
    job.result_flag = kResultFileFlag;
    job.name = "hybrid";
    job.trainers = settings_.trainers;
    job.servers = settings_.servers;
    job.server_processes = settings_.server_processes;
    // gradwire-ps-server with our intra-op threads.
    job.server_arguments = {"--threads", std::to_string(settings_.server_threads)};
    progress("starting " + std::to_string(settings_.servers) + " servers and " +
             std::to_string(settings_.trainers) + " trainers");
    const nlohmann::json document = run_trainer_job(job, repeat);
    backends_.push_back(document.value("backend", std::string("unknown")));
    transports_.push_back(document.value("transports", std::vector<std::string>()));
    return parse_hybrid_result(document, "trainer 0's results");
  }

  HybridSettings settings_;
  std::vector<std::string> argv_;
  PythonTorch python_;
  std::string script_;
  PlainStepParity plain_;  // --reference pytorch: both sides' plain steps, repeats pooled
  std::vector<std::string> backends_;                 // per repeat, trainer 0's communicator's
  std::vector<std::vector<std::string>> transports_;  // per repeat, trainer 0's per server
};

}  // namespace

Subcommand hybrid_subcommand() {
  return {"hybrid",
          "DDP + parameter servers: PyTorch's DDP + RPC benchmark (remote embedding bags, DDP "
          "dense part), per-trainer sec/epoch and ex/sec, optionally against PyTorch RPC",
          [](CLI::App& command) -> SubcommandRun {
            auto state = std::make_shared<State>();
            state->options.attach(command);
            add_worker_flag(command, state->ranks);
            command.add_option(kResultFileFlag, state->result_file, "")->group("");
            command.add_option(kRepeatIndexFlag, state->repeat_index, "")->group("");
            return [state](const std::vector<std::string>& argv) {
              if (!state->ranks.worker && state->result_file.empty()) {
                const HybridSettings given = state->options.resolve();  // before the job's checks
                prepare_output_files({given.json_path, given.html_path});
              }
              const EnvMap env = EnvMap::from_process();
              if (!in_launcher_environment(env)) {
                if (state->ranks.worker) {
                  throw ConfigError(std::string(kWorkerFlag) +
                                    " is only for the trainers gradwire-bench "
                                    "starts itself; run without it");
                }
                return Conductor(resolve_hybrid_settings(state->options, std::nullopt), argv).run();
              }
              std::optional<HybridJob> job;
              if (!state->ranks.worker) {
                const int servers = count_addresses(env.get("GRADWIRE_PS_ADDRS").value_or(""));
                if (servers == 0) {
                  throw ConfigError(
                      "gradwire-bench hybrid runs in a job here (RANK/WORLD_SIZE are set) but "
                      "GRADWIRE_PS_ADDRS is not: start it with gradwire-run --servers S, or run it "
                      "directly and it starts its own servers and trainers");
                }
                job = HybridJob{resolve_world({}, env).world_size, servers};
              }
              const HybridSettings settings = resolve_hybrid_settings(state->options, job);
              RankOptions ranks = state->ranks;
              ranks.ranks = settings.trainers;
              ranks.backend = settings.backend;
              ranks.threads_per_rank = kTrainerThreads;
              // Trainers share the cores with the servers (more processes than cores), as in
              // PyTorch's reference run: none is bound.
              ranks.bind_cores = false;
              return run_on_ranks(ranks, argv, [&](RankContext& context) {
                return run_trainer(context, settings, *state, argv);
              });
            };
          }};
}

}  // namespace gradwire::bench
