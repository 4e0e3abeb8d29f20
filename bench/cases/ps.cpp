// `gradwire-bench ps`: dense parameter-server training (reference 003: parameters cut into blocks
// on the servers, trainers pushing gradients and pulling values, the pulls overlapped with the
// forward pass) measured with gradwire::ps::DenseModel, optionally beside gradwire DDP on the same
// trainers, one process without distribution, and the same algorithm in PyTorch
// (ps_reference.h).
//
// Processes. This process is the conductor: per repeat it starts S parameter servers
// (gradwire-ps-server, found next to this program) and T trainer copies of itself
// (run_trainer_job, harness/trainer_jobs.h); then, with --compare, T DDP trainers and one local
// process; then, with --reference pytorch, the reference. The trainers gather their measurements
// to trainer 0, which hands them over in a file; the conductor prints every side's Pass lines,
// tables, phases and bytes, the comparisons, and writes the JSON and HTML. Started under a
// launcher (RANK set) without being one of our trainers it refuses to run.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "cases/ddp_training.h"
#include "cases/parity.h"
#include "cases/ps_reference.h"
#include "cases/ps_report.h"
#include "cases/ps_results.h"
#include "cases/ps_settings.h"
#include "cases/ps_training.h"
#include "cases/ps_transports.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "harness/hardware.h"
#include "harness/ranks.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/trainer_jobs.h"
#include "report/html_report.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

// The hidden options through which the conductor starts its trainers: which run they belong to
// (ps, ddp or local), where trainer 0 leaves the results, and the repeat.
constexpr const char* kJobFlag = "--ps-job";
constexpr const char* kResultFileFlag = "--ps-result-file";
constexpr const char* kRepeatIndexFlag = "--ps-repeat-index";

void progress(const std::string& line) { std::cerr << "gradwire-bench ps: " << line << std::endl; }

struct State {
  OptionTable<PsSettings> options = ps_options();
  RankOptions ranks;
  std::string job;          // set in the trainers the conductor starts
  std::string result_file;  // likewise
  int repeat_index = 1;
};

// The implementation each run's results are named after.
std::string implementation_of(const std::string& job) {
  if (job == "ddp") return "gradwire-ddp";
  if (job == "local") return "local";
  return "gradwire";
}

// A trainer of one of the conductor's runs: train, gather, and trainer 0 writes the file.
int run_trainer(RankContext& context, const PsSettings& settings, const State& state) {
  Communicator& communicator = context.communicator;
  nlohmann::json document;
  if (state.job == "ps") {
    const PsTrainerOutcome outcome = train_ps(settings, communicator.rank(), communicator.size());
    const TrainerResults all = gather_trainer_samples(
        communicator, outcome.samples, {ps_phases(), ps_byte_names()}, implementation_of("ps"));
    document = {{"layout", outcome.layout},
                {"layout_text", outcome.layout_text},
                {"transports", outcome.transports},
                {"trainers", trainers_to_json(all, ps_step_names())}};
  } else {
    const auto ddp = state.job == "ddp" ? context.world.communicator() : nullptr;
    const TrainerSamples mine = train_ps_comparison(settings, ddp, communicator.rank());
    const TrainerResults all =
        gather_trainer_samples(communicator, mine, {{"forward", "backward"}, {}}, "");
    document = {{"trainers", trainers_to_json(all, ps_step_names())}};
    if (ddp) document["backend"] = ddp->backend();  // what "auto" became
  }
  document["implementation"] = implementation_of(state.job);
  if (context.reports()) write_json_file(state.result_file, document);
  return 0;
}

class Conductor {
 public:
  Conductor(PsSettings settings, std::vector<std::string> argv)
      : settings_(std::move(settings)),
        argv_(std::move(argv)),
        threads_(ps_thread_counts(settings_, available_cores())) {}

  int run() {
    std::string reference_line;
    if (settings_.reference_pytorch) {
      const ReferenceRunner reference = require_reference(ps_reference_needs(settings_));
      python_ = reference.python;
      script_ = reference.script;
      reference_line = pytorch_title() + ": whole parameters on the servers (balanced by bytes), " +
                       "averaged and stepped there (" + python_.python + " " + script_ + "), " +
                       reference_order(settings_.repeat);
    }
    progress(describe_ps_settings(settings_));
    // Printed after the first repeat's jobs (run_ours), which tell how the calls travelled.
    header_ = PsHeader{settings_, threads_, reference_line, describe_hardware(), {}, {}};

    AlternatingRuns<PsRun> runs;
    runs.repeats = settings_.repeat;
    runs.ours = [&](int repeat) { return run_ours(repeat); };
    if (settings_.reference_pytorch) {
      runs.reference = [&](int, nlohmann::json& document) {  // throws when it fails
        progress("running the PyTorch reference: " + python_.python + " " + script_);
        document = run_ps_reference(python_, script_, settings_);
        add_reference_plain_step(plain_, document, "the PyTorch reference");
        return true;
      };
      runs.reference_result = [&](const nlohmann::json& document) {
        TrainerResults theirs =
            parse_trainer_results(document, "the PyTorch reference", ps_step_names());
        print_ps_side(repeat_output(settings_.repeat), theirs, settings_,
                      "reference: " + pytorch_title());
        return PsRun{theirs, std::nullopt, std::nullopt};  // the reference is a ps run alone
      };
    }
    runs.progress = progress;
    Repeats<PsRun> repeats;
    run_alternating(runs, repeats);

    const PsRun pooled = pool_ps_runs(repeats.ours);
    std::vector<TrainerResults> reference_repeats;
    for (const auto& run : repeats.reference) reference_repeats.push_back(run.ps);
    std::optional<TrainerResults> reference;
    if (!reference_repeats.empty()) reference = pool_trainer_repeats(reference_repeats);
    if (settings_.repeat > 1) {
      std::cout << "\n(all " << settings_.repeat << " repeats pooled)\n";
      print_run(std::cout, pooled, "");
      if (reference)
        print_ps_side(std::cout, *reference, settings_, "reference: " + pytorch_title());
    }
    PsDocumentInputs inputs;
    inputs.comparison = compare_ps(repeats.ours, reference_repeats);
    print_ps_comparisons(std::cout, pooled, reference, inputs.comparison, pytorch_title());
    if (settings_.reference_pytorch) {
      print_plain_step_parity(std::cout, plain_, ps_plain_step_names(settings_));
      inputs.plain_step = plain_;
    }
    // The parameter-server calls' transport as trainer 0's client reported it, every repeat.
    inputs.metadata = conductor_metadata(summarize_transports(transports_), settings_.trainers,
                                         threads_.ps, argv_);
    inputs.transports = transports_;
    inputs.ddp_backends = ddp_backends_;
    inputs.settings = settings_;
    inputs.threads = threads_;
    inputs.pooled = pooled;
    inputs.layout = layout_;
    if (reference) {
      repeats.reference_document["trainers"] = trainers_to_json(*reference, ps_step_names());
      repeats.reference_document["repeat"] = settings_.repeat;
      if (plain_.reference) repeats.reference_document["plain_step"] = to_json(*plain_.reference);
      inputs.reference = repeats.reference_document;
    }
    write_result_files(settings_.json_path, settings_.html_path, ps_document(inputs), progress);
    return 0;
  }

 private:
  std::string pytorch_title() const {
    return "PyTorch " + python_.torch_version + " RPC (TensorPipe) parameter servers";
  }

  std::string suffix(int repeat) const {
    return settings_.repeat > 1 ? " (repeat " + std::to_string(repeat) + " of " +
                                      std::to_string(settings_.repeat) + ")"
                                : "";
  }

  void print_run(std::ostream& out, const PsRun& run, const std::string& suffix) const {
    out << "\n" << describe_ps_layout(layout_) << "\n";
    print_ps_side(out, run.ps, settings_, "gradwire: dense parameter servers" + suffix);
    if (run.ddp) print_ps_side(out, *run.ddp, settings_, "gradwire DDP (allreduce)" + suffix);
    if (run.local) {
      print_ps_side(out, *run.local, settings_, "one process without distribution" + suffix);
    }
  }

  TrainerResults run_job(const std::string& kind, int trainers, int servers, int threads,
                         int repeat) {
    TrainerJob job;
    job.argv = argv_;
    job.flags = {kJobFlag, kind, kRepeatIndexFlag, std::to_string(repeat)};
    job.result_flag = kResultFileFlag;
    job.name = "ps-" + kind;
    job.trainers = trainers;
    job.threads = threads;
    job.servers = servers;
    job.server_arguments = {"--threads", std::to_string(threads)};
    const nlohmann::json document = run_trainer_job(job, repeat);
    if (kind == "ps") {
      transports_.push_back(document.value("transports", std::vector<std::string>()));
    }
    if (kind == "ddp") ddp_backends_.push_back(document.value("backend", std::string("unknown")));
    if (kind == "ps" && layout_.is_null()) {
      layout_ = document.value("layout", nlohmann::json());
      if (settings_.print_layout)
        std::cout << "\n" << document.value("layout_text", "") << std::flush;
    }
    return parse_trainer_results(document, "trainer 0's results", ps_step_names());
  }

  PsRun run_ours(int repeat) {
    if (settings_.reference_pytorch) {
      // Compute parity (cases/parity.h): before the jobs, with the machine to ourselves, on as
      // many threads as each parameter-server trainer.
      progress("timing the plain step (" + ps_plain_step_names(settings_).what + "): " +
               std::to_string(kPsPlainWarmup) + " + " + std::to_string(kPsPlainIterations) +
               " iterations");
      add_gradwire_plain_step(plain_, time_ps_plain_step(settings_, threads_.ps));
    }
    PsRun run;
    progress("starting " + std::to_string(settings_.servers) + " servers and " +
             std::to_string(settings_.trainers) + " trainers");
    run.ps = run_job("ps", settings_.trainers, settings_.servers, threads_.ps, repeat);
    if (settings_.compares("ddp")) {
      progress("starting " + std::to_string(settings_.trainers) + " trainers for gradwire DDP");
      run.ddp = run_job("ddp", settings_.trainers, 0, threads_.ddp, repeat);
    }
    if (settings_.compares("local")) {
      progress("starting one process without distribution");
      run.local = run_job("local", 1, 0, threads_.local, repeat);
    }
    if (repeat == 1) {
      header_.transports = transports_.front();
      if (!ddp_backends_.empty()) header_.ddp_backend = ddp_backends_.front();
      print_ps_header(std::cout, header_);
    }
    print_run(repeat_output(settings_.repeat), run, suffix(repeat));
    return run;
  }

  PsSettings settings_;
  std::vector<std::string> argv_;
  PsThreads threads_;
  nlohmann::json layout_;  // trainer 0's, from the first run
  PythonTorch python_;
  std::string script_;
  PlainStepParity plain_;  // --reference pytorch: both sides' plain steps, repeats pooled
  PsHeader header_;        // printed once the first repeat's jobs have run
  std::vector<std::vector<std::string>> transports_;  // per repeat, trainer 0's per server
  std::vector<std::string> ddp_backends_;             // per repeat, the DDP comparison's
};

}  // namespace

Subcommand ps_subcommand() {
  return {
      "ps",
      "dense parameter-server training (reference 003): per-pass imgs/s, per-trainer "
      "sec/iter, phases and bytes, optionally against gradwire DDP, one process and PyTorch RPC",
      [](CLI::App& command) -> SubcommandRun {
        auto state = std::make_shared<State>();
        state->options.attach(command);
        add_worker_flag(command, state->ranks);
        command.add_option(kJobFlag, state->job, "")
            ->group("")
            ->check(CLI::IsMember({"ps", "ddp", "local"}));
        command.add_option(kResultFileFlag, state->result_file, "")->group("");
        command.add_option(kRepeatIndexFlag, state->repeat_index, "")->group("");
        return [state](const std::vector<std::string>& argv) {
          const PsSettings settings = resolve_ps_settings(state->options);
          if (!state->ranks.worker) {
            if (in_launcher_environment(EnvMap::from_process())) {
              throw ConfigError(
                  "gradwire-bench ps starts its own servers and trainers: run it directly, "
                  "not under gradwire-run or another launcher");
            }
            prepare_output_files({settings.json_path, settings.html_path});
            return Conductor(settings, argv).run();
          }
          if (state->job.empty() || state->result_file.empty()) {
            throw ConfigError(std::string(kWorkerFlag) +
                              " is only for the trainers gradwire-bench ps starts itself; "
                              "run without it");
          }
          const PsThreads threads = ps_thread_counts(settings, available_cores());
          RankOptions ranks = state->ranks;
          ranks.backend = state->job == "ddp" ? "auto" : "gloo";
          ranks.threads_per_rank = state->job == "ps"    ? threads.ps
                                   : state->job == "ddp" ? threads.ddp
                                                         : threads.local;
          ranks.bind_cores = false;  // trainers share the cores with the servers
          return run_on_ranks(ranks, argv, [&](RankContext& context) {
            return run_trainer(context, settings, *state);
          });
        };
      }};
}

}  // namespace gradwire::bench
