// A training benchmark as one table entry: its options, the jobs of trainer processes a repeat
// runs, the trainer body, its PyTorch reference script and its columns. The generic conductor
// (run_training) owns the rest: starting the trainers (and parameter servers) of each job per
// repeat, gathering their samples, the reference and the plain-step parity, the repeats, the
// tables (trainer_report.h), the JSON document (training_document) and its HTML page; `report`,
// `diff` and the charts read that document without knowing the case. Adding a training case is a
// TrainingCase entry plus its trainer body; hybrid_case.cpp and ps_case.cpp are examples.
//
// Processes. Run directly, gradwire-bench is the conductor: per repeat it runs each job of the plan
// (harness/trainer_jobs.h: its trainers are copies of this program marked kWorkerFlag plus the
// hidden kTrainingJobFlag, kTrainingResultFlag and kTrainingRepeatFlag), then the reference. The
// trainers run the case's body, gather their samples to trainer 0, which leaves them in a file
// for the conductor. A case with `runs_in_job` may also run as the ranks of a job gradwire-run
// --servers S started: the ranks are the first job's trainers, and trainer 0 prints and writes
// the results. A case with its own `run` (ddp) gets the table's options, resolve and reference
// places, and measures on its ranks itself.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/parity.h"
#include "cases/trainer_results.h"
#include "harness/case.h"
#include "harness/hardware.h"
#include "harness/options.h"
#include "harness/python.h"
#include "harness/table.h"
#include "subcommand.h"

namespace gradwire::bench {

// What the generic tables, documents and charts need to know of a case (no settings).
struct TrainingFormat {
  std::string name;         // the subcommand and the document's "benchmark": "hybrid"
  std::string description;  // its line of --help
  std::string title;        // the header's title: "hybrid (DDP + parameter servers)"
  std::string step;         // what a sample times: "epoch" ("epoch_seconds", "examples_per_epoch")
  RateColumns columns;      // the tables' time and rate cells; time_header names the step's time
  // Every phase a side may record, in the order the phase split and the charts show them.
  std::vector<std::string> phases;
  std::string reference_script;  // "hybrid_reference.py", in bench/reference/ and installed
  bool runs_in_job = false;      // also as the ranks of a job gradwire-run --servers started

  StepNames step_names() const { return {name, step}; }
  // "epoch", "iter": the step as the phase split's first column names it (from the time header).
  std::string step_short() const;
};

// One run of trainer processes a repeat makes: the case's own training (the first job of a plan)
// or a comparison (ps: gradwire DDP, one local process). Each is a side of the results.
struct TrainingJob {
  std::string kind;            // the hidden flag's value and the result file's name: "ps", "ddp"
  std::string implementation;  // the side's name in tables, JSON and charts: "gradwire-ddp"
  std::string title;           // above its tables: "gradwire DDP (allreduce)"
  int trainers = 1;
  int servers = 0;               // parameter servers started first (gradwire-ps-server)
  int server_processes = 0;      // LaunchOptions::server_processes; 0: the launcher's rule
  int server_threads = 1;        // the servers' intra-op threads
  int threads = 1;               // each trainer's intra-op threads
  std::string backend = "gloo";  // the trainers' communicator
  // What its trainers record, in the order they are gathered.
  std::vector<std::string> phases;
  std::vector<std::string> byte_names;
};

// What a trainer's body returns: its samples and what it used (trainer 0's are kept).
struct TrainerOutcome {
  TrainerSamples samples;
  std::string backend;                  // what its communication went over; empty: nothing
  std::vector<std::string> transports;  // per server (cases/ps_transports.h); empty: no servers
  nlohmann::json details;               // the case's own facts (ps: the dense layout); null: none
  std::string text;                     // printed once, after the first repeat's header
};

// What one job measured in one repeat: every trainer's samples, and trainer 0's facts.
struct JobResult {
  TrainerResults results;
  TrainerOutcome facts;  // facts.samples unused
};

// What the header sees: the jobs and what each did in the first repeat, the reference's line
// (empty: not asked for) and the machine.
struct RunUsed {
  std::vector<TrainingJob> jobs;
  std::vector<JobResult> first;
  std::string reference;
  HardwareInfo hardware;
};

// The generic conductor's view of one resolved command line.
struct TrainingPlan {
  // The settings every training case has.
  int repeat = 1;
  bool reference_pytorch = false;
  std::string json_path;
  std::string html_path;
  std::string trace_dir;         // --trace: the first repeat's jobs record their timelines here
  std::string python;            // --python
  std::string reference_script;  // --reference-script
  std::string summary;           // the progress line describing the settings
  nlohmann::json settings;       // the document's "settings"
  // The jobs of every repeat, in order; the first is the case's own training, which the
  // comparisons and the reference are measured against.
  std::vector<TrainingJob> jobs;
  int steps_per_pass = 0;  // > 0: reference 003's Pass lines, over this many steps each
  // The header block, printed once the first repeat's jobs have run.
  std::function<void(std::ostream& out, const RunUsed& used)> print_header;
  // A line above each run's tables from its own job's result (ps: the dense layout); null: none.
  std::function<std::string(const JobResult& own)> describe_run;
  // The trainer body: trains one trainer of `job` and returns what it measured. Blocks;
  // collective over context's communicator, whose ranks are the job's trainers.
  std::function<TrainerOutcome(RankContext& context, const TrainingJob& job, int repeat)> train;
  // --reference pytorch: its command line without --json (interpreter and script first), what
  // the header says it is ("RPC + DDP, same batches") and its tables' title after "PyTorch X ".
  std::function<std::vector<std::string>(const PythonTorch& python, const std::string& script)>
      reference_command;
  std::string reference_what;
  std::string reference_title;
  // The plain step of compute parity (cases/parity.h), timed by the conductor with `threads`;
  // called with --reference pytorch only.
  PlainStepNames plain_names;
  std::string plain_counts;  // "3 + 20 epochs", for the progress line
  std::function<PlainStep(int threads)> time_plain_step;
};

// A training case: the table entry. `resolve` gets the job's shape when it runs as the ranks of
// a launcher's job (nullopt: run directly, or a trainer the conductor started) and throws
// ConfigError or InvalidArgument for settings it refuses.
struct JobShape {
  int trainers = 1;
  int servers = 0;  // GRADWIRE_PS_ADDRS' addresses
};
template <class Settings>
struct TrainingCase {
  TrainingFormat format;
  std::function<OptionTable<Settings>()> options;
  std::function<Settings(const OptionTable<Settings>& options, std::optional<JobShape> job)>
      resolve;
  // The conductor's plan of the resolved settings.
  std::function<TrainingPlan(const Settings& settings)> plan;
  // Instead of `plan`: a case whose ranks are one job that measures everything itself (ddp sweeps
  // its world sizes on subgroups of the ranks and keeps PyTorch's benchmark.py format), with the
  // rank flags it takes (harness/case.h).
  std::function<void(CLI::App& command, RankOptions& ranks)> rank_flags;
  std::function<int(const Settings& settings, RankOptions ranks,
                    const std::vector<std::string>& argv)>
      run;
};

// The hidden flags of the trainers the conductor starts.
inline constexpr const char* kTrainingJobFlag = "--training-job";
inline constexpr const char* kTrainingResultFlag = "--training-result-file";
inline constexpr const char* kTrainingRepeatFlag = "--training-repeat-index";
struct TrainingWorker {
  bool worker = false;  // kWorkerFlag
  std::string job;
  std::string result_file;
  int repeat = 1;
};
// Adds kWorkerFlag and the three hidden flags above.
void add_training_worker_flags(CLI::App& command, TrainingWorker& worker);

// Where the case's reference script may be (harness/python.h): `preferred` (--reference-script),
// else bench/reference/ in the source tree, else where it is installed.
ScriptPlaces training_script_places(const TrainingFormat& format, const std::string& preferred);

// The launcher's job this process is a rank of (torchrun/gradwire-run, mpirun, srun), if any.
std::optional<JobShape> launcher_job_shape();

// How this process takes part: nullopt as the conductor or one of its trainers, else the shape of
// the launcher's job it is a rank of. Throws ConfigError when the case does not run in jobs or the
// job has no servers (GRADWIRE_PS_ADDRS), or for a worker flag without the hidden ones.
std::optional<JobShape> training_job_shape(const TrainingFormat& format,
                                           const TrainingWorker& worker);

// Runs the case as conductor, trainer or job rank; returns the exit code.
int run_training(const TrainingFormat& format, const TrainingPlan& plan,
                 const TrainingWorker& worker, bool in_job, const std::vector<std::string>& argv);

// The flags every training case has, added to `options` of a Settings with json_path, html_path,
// trace_dir, reference_pytorch, repeat, python and reference_script: --json, --html, --trace
// (docs/benchmarks.md, "--trace"), --reference pytorch
// (`reference`: what it also runs), --repeat (`repeat`: what runs that many times) and --python
// and --reference-script (`script`, the reference's file name).
template <class Settings>
void add_training_flags(OptionTable<Settings>& options, const std::string& reference,
                        const std::string& repeat, const std::string& script) {
  options.option("--json", &Settings::json_path, "write the results to this JSON file")
      .option("--html", &Settings::html_path, "draw the results into this HTML page")
      .option("--trace", &Settings::trace_dir,
              "write the timeline of the first measured repeat to this folder, one merged trace "
              "per job, and summarize it per rank in the results")
      .template option<std::string>(
          "--reference", "also run " + reference + " (bench/reference/" + script + ")",
          [](Settings& s, const std::string& name) { s.reference_pytorch = name == "pytorch"; },
          [](CLI::Option& option) { option.check(CLI::IsMember({"pytorch"})); })
      .preset_value("--repeat", &Settings::repeat, {},
                    "run " + repeat + " this many times, alternating, and pool", positive_number)
      .option("--python", &Settings::python,
              "Python with torch for --reference [$VIRTUAL_ENV, the project's .venv, python3, "
              "then /usr/bin/python3]")
      .option("--reference-script", &Settings::reference_script,
              "path of " + script + " [the source tree's, then the installed copy]");
}

// A plan with the settings every training case has.
template <class Settings>
TrainingPlan training_plan(const Settings& settings) {
  TrainingPlan plan;
  plan.repeat = settings.repeat;
  plan.reference_pytorch = settings.reference_pytorch;
  plan.json_path = settings.json_path;
  plan.html_path = settings.html_path;
  plan.trace_dir = settings.trace_dir;
  plan.python = settings.python;
  plan.reference_script = settings.reference_script;
  return plan;
}

// The subcommand of `entry`.
template <class Settings>
Subcommand training_subcommand(TrainingCase<Settings> entry) {
  const std::string name = entry.format.name;
  const std::string description = entry.format.description;
  if (entry.run) {
    return case_subcommand<Settings>(
        name, description, entry.options, entry.rank_flags,
        [entry](const OptionTable<Settings>& options, const RankOptions& ranks,
                const std::vector<std::string>& argv) {
          return entry.run(entry.resolve(options, launcher_job_shape()), ranks, argv);
        });
  }
  return {name, description, [entry](CLI::App& command) -> SubcommandRun {
            const OptionTable<Settings> options = entry.options();  // copies share the values
            auto worker = std::make_shared<TrainingWorker>();
            options.attach(command);
            add_training_worker_flags(command, *worker);
            return [entry, options, worker](const std::vector<std::string>& argv) {
              const std::optional<JobShape> job = training_job_shape(entry.format, *worker);
              const TrainingPlan plan = entry.plan(entry.resolve(options, job));
              return run_training(entry.format, plan, *worker, job.has_value(), argv);
            };
          }};
}

}  // namespace gradwire::bench
