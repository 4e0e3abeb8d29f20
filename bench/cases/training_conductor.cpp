// The generic conductor and trainers of the training cases (training_case.h).
#include <iostream>

#include "cases/ddp_training.h"
#include "cases/ps_transports.h"
#include "cases/trainer_report.h"
#include "cases/training_case.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"
#include "harness/ranks.h"
#include "harness/repeats.h"
#include "harness/traces.h"
#include "harness/trainer_jobs.h"
#include "report/html_report.h"

namespace gradwire::bench {

namespace {

int count_addresses(const std::string& list) {
  if (list.empty()) return 0;
  int count = 1;
  for (const char c : list) count += c == ',' ? 1 : 0;
  return count;
}

const TrainingJob& job_of_kind(const TrainingPlan& plan, const std::string& kind) {
  for (const auto& job : plan.jobs) {
    if (job.kind == kind) return job;
  }
  throw ConfigError("this run has no trainer job \"" + kind + "\"");
}

std::string repeat_suffix(int repeat, int repeats) {
  return repeats > 1 ? " (repeat " + std::to_string(repeat) + " of " + std::to_string(repeats) + ")"
                     : "";
}

void progress(const TrainingFormat& format, const std::string& line) {
  std::cerr << "gradwire-bench " << format.name << ": " << line << std::endl;
}

// The document of `inputs` with the plan's settings, to --json and --html.
void write_document(const TrainingFormat& format, const TrainingPlan& plan,
                    TrainingDocumentInputs inputs) {
  inputs.settings = plan.settings;
  inputs.steps_per_pass = plan.steps_per_pass;
  write_result_files(plan.json_path, plan.html_path, training_document(format, inputs),
                     [&](const std::string& line) { progress(format, line); });
}

// Every job's sides of one run under their titles, the run's line (describe_run) first.
void print_run(std::ostream& out, const TrainingFormat& format, const TrainingPlan& plan,
               const std::vector<JobResult>& run, const std::string& suffix) {
  if (plan.describe_run && !run.empty()) out << "\n" << plan.describe_run(run.front()) << "\n";
  for (std::size_t j = 0; j < run.size(); ++j) {
    print_side(out, run[j].results, plan.jobs[j].title + suffix, format, plan.steps_per_pass);
  }
}

// Trainers of `job`: train, gather to trainer 0, which hands the results to the conductor in
// `result_file`, or (in a launcher's job, no file) prints them and writes the document.
int run_trainers(const TrainingFormat& format, const TrainingPlan& plan, const TrainingJob& job,
                 int repeat, const std::string& result_file, bool worker,
                 const std::vector<std::string>& argv) {
  RankOptions ranks;
  ranks.worker = worker;
  ranks.ranks = job.trainers;
  ranks.backend = job.backend;
  ranks.threads_per_rank = job.threads;
  ranks.bind_cores = false;  // the trainers share the cores with the servers
  return run_on_ranks(ranks, argv, [&](RankContext& context) {
    TrainerOutcome mine = plan.train(context, job, repeat);
    JobResult result;
    // Every trainer alternates its timeline or none does (one environment).
    const bool alternated = !mine.samples.timeline_recorded.empty();
    result.results =
        gather_trainer_samples(context.communicator, mine.samples,
                               {job.phases, job.byte_names, alternated}, job.implementation);
    if (!context.reports()) return 0;
    result.facts = std::move(mine);
    result.facts.samples = {};
    if (!result_file.empty()) {
      write_json_file(result_file, to_json(result, format.step_names()));
      return 0;
    }
    RunUsed used{plan.jobs, {result}, "", describe_hardware()};
    plan.print_header(std::cout, used);
    print_run(std::cout, format, plan, {result}, "");
    TrainingDocumentInputs inputs;
    inputs.metadata = run_metadata(context, argv);
    if (!result.facts.backend.empty()) inputs.metadata.backend = result.facts.backend;
    inputs.jobs = {job};
    inputs.sides = {result.results};
    inputs.repeats = {{result}};
    write_document(format, plan, inputs);
    return 0;
  });
}

class Conductor {
 public:
  Conductor(const TrainingFormat& format, const TrainingPlan& plan, std::vector<std::string> argv)
      : format_(format), plan_(plan), argv_(std::move(argv)), repeats_(plan.jobs.size()) {}

  int run() {
    if (plan_.reference_pytorch) {
      const ReferenceRunner reference =
          require_reference({plan_.python, "torch.distributed.rpc",
                             training_script_places(format_, plan_.reference_script)});
      python_ = reference.python;
      script_ = reference.script;
      reference_line_ = "PyTorch " + python_.torch_version + " " + plan_.reference_what + " (" +
                        python_.python + " " + script_ + "), " + reference_order(plan_.repeat);
    }
    progress(plan_.summary);
    AlternatingRuns<std::vector<TrainerResults>> runs;
    runs.repeats = plan_.repeat;
    runs.ours = [&](int repeat) { return run_ours(repeat); };
    if (plan_.reference_pytorch) {
      runs.reference = [&](int, nlohmann::json& document) {  // throws when it fails
        progress("running the PyTorch reference: " + python_.python + " " + script_);
        document = run_reference_command(plan_.reference_command(python_, script_), format_.name);
        add_reference_plain_step(plain_, document, "the PyTorch reference");
        return true;
      };
      runs.reference_result = [&](const nlohmann::json& document) {
        TrainerResults theirs =
            parse_trainer_results(document, "the PyTorch reference", format_.step_names());
        print_side(repeat_output(plan_.repeat), theirs, reference_title(), format_,
                   plan_.steps_per_pass);
        return std::vector<TrainerResults>{theirs};
      };
    }
    runs.progress = [this](const std::string& line) { progress(line); };
    Repeats<std::vector<TrainerResults>> repeats;
    run_alternating(runs, repeats);
    return finish(repeats);
  }

 private:
  void progress(const std::string& line) const { bench::progress(format_, line); }

  // "hybrid-gradwire-2x8": the case, the job's implementation, trainers x servers (as the
  // benchmark's "2 x 8" says: --trainers 2 --servers 8).
  std::string traced_job_name(const TrainingJob& job) const {
    return format_.name + "-" + job.implementation + "-" + std::to_string(job.trainers) +
           (job.servers > 0 ? "x" + std::to_string(job.servers) : std::string());
  }

  std::string reference_title() const {
    return "reference: PyTorch " + python_.torch_version + " " + plan_.reference_title;
  }

  std::vector<TrainerResults> run_ours(int repeat) {
    const TrainingJob& own = plan_.jobs.front();
    if (plan_.reference_pytorch && plan_.time_plain_step) {
      // Compute parity (cases/parity.h): before the jobs, with the machine to ourselves, on as
      // many threads as each of our trainers.
      progress("timing the plain step (" + plan_.plain_names.what + "): " + plan_.plain_counts);
      add_gradwire_plain_step(plain_, plan_.time_plain_step(own.threads));
    }
    std::vector<JobResult> run;
    for (std::size_t j = 0; j < plan_.jobs.size(); ++j) {
      const TrainingJob& job = plan_.jobs[j];
      progress("starting " +
               (job.servers > 0 ? std::to_string(job.servers) + " servers and " : std::string()) +
               std::to_string(job.trainers) + (job.trainers == 1 ? " trainer" : " trainers") +
               (j == 0 ? "" : " for " + job.title));
      TrainerJob launch;
      launch.argv = argv_;
      launch.flags = {kTrainingJobFlag, job.kind, kTrainingRepeatFlag, std::to_string(repeat)};
      launch.result_flag = kTrainingResultFlag;
      launch.name = format_.name + "-" + job.kind;
      launch.trainers = job.trainers;
      launch.threads = job.threads;
      launch.servers = job.servers;
      launch.server_processes = job.server_processes;
      launch.server_arguments = {"--threads", std::to_string(job.server_threads)};
      // --trace: the first measured repeat of each job records its timeline; the others run
      // with the timeline off.
      const std::string trace_name = traced_job_name(job);
      if (repeat == 1 && !plan_.trace_dir.empty()) {
        launch.timeline = trace_file(plan_.trace_dir, trace_name);
      }
      run.push_back(parse_job_result(run_trainer_job(launch, repeat), "trainer 0's results",
                                     format_.step_names()));
      repeats_[j].push_back(run.back());
      if (!launch.timeline.empty()) {
        traces_.push_back(read_trace_entry(trace_name, launch.timeline, repeat));
        progress("wrote the trace " + launch.timeline);
      }
    }
    if (repeat == 1) {
      plan_.print_header(std::cout, {plan_.jobs, run, reference_line_, describe_hardware()});
      if (!run.front().facts.text.empty())
        std::cout << "\n" << run.front().facts.text << std::flush;
    }
    print_run(repeat_output(plan_.repeat), format_, plan_, run,
              repeat_suffix(repeat, plan_.repeat));
    std::vector<TrainerResults> results;
    for (const auto& job : run) results.push_back(job.results);
    return results;
  }

  int finish(Repeats<std::vector<TrainerResults>>& repeats) {
    TrainingDocumentInputs inputs;
    inputs.jobs = plan_.jobs;
    inputs.repeats = repeats_;
    for (std::size_t j = 0; j < plan_.jobs.size(); ++j) {
      std::vector<TrainerResults> side;
      for (const auto& run : repeats.ours) side.push_back(run.at(j));
      inputs.sides.push_back(pool_trainer_repeats(side));
    }
    for (const auto& run : repeats.reference) inputs.reference_repeats.push_back(run.front());
    std::optional<TrainerResults> reference;
    if (!inputs.reference_repeats.empty()) {
      reference = pool_trainer_repeats(inputs.reference_repeats);
    }
    if (plan_.repeat > 1) {
      std::cout << "\n(all " << plan_.repeat << " repeats pooled)\n";
      std::vector<JobResult> pooled;
      for (std::size_t j = 0; j < plan_.jobs.size(); ++j) {
        pooled.push_back({inputs.sides[j], repeats_[j].front().facts});
      }
      print_run(std::cout, format_, plan_, pooled, "");
      if (reference)
        print_side(std::cout, *reference, reference_title(), format_, plan_.steps_per_pass);
    }
    // Each comparison and the reference against the case's own side.
    const TrainerResults& own = inputs.sides.front();
    const TrainingJob& own_job = plan_.jobs.front();
    for (std::size_t j = 1; j < plan_.jobs.size(); ++j) {
      print_trainer_comparison(std::cout, own, inputs.sides[j],
                               own_job.title + " against " + plan_.jobs[j].title,
                               p50_ratio_by_repeat(repeats_of(0), repeats_of(j)), format_.columns,
                               {own.implementation, inputs.sides[j].implementation});
    }
    if (reference) {
      print_trainer_comparison(
          std::cout, own, *reference,
          own_job.title + " against PyTorch " + python_.torch_version + " " + plan_.reference_title,
          p50_ratio_by_repeat(repeats_of(0), inputs.reference_repeats), format_.columns,
          {own.implementation, reference->implementation});
      print_plain_step_parity(std::cout, plain_, plan_.plain_names);
      repeats.reference_document["trainers"] = trainers_to_json(*reference, format_.step_names());
      repeats.reference_document["repeat"] = plan_.repeat;
      if (plain_.reference) repeats.reference_document["plain_step"] = to_json(*plain_.reference);
      inputs.reference = repeats.reference_document;
      inputs.plain_step = plain_;
      inputs.plain_names = plan_.plain_names;
    }
    print_trace_entries(std::cout, traces_);
    inputs.traces = traces_;
    std::vector<std::string> backends;
    for (const auto& run : repeats_.front()) backends.push_back(run.facts.backend);
    inputs.metadata =
        conductor_metadata(summarize_values(backends), own_job.trainers, own_job.threads, argv_);
    write_document(format_, plan_, inputs);
    return 0;
  }

  std::vector<TrainerResults> repeats_of(std::size_t job) const {
    std::vector<TrainerResults> results;
    for (const auto& run : repeats_[job]) results.push_back(run.results);
    return results;
  }

  const TrainingFormat& format_;
  const TrainingPlan& plan_;
  std::vector<std::string> argv_;
  PythonTorch python_;
  std::string script_;
  std::string reference_line_;
  PlainStepParity plain_;  // --reference pytorch: both sides' plain steps, repeats pooled
  std::vector<std::vector<JobResult>> repeats_;      // per job, per repeat
  nlohmann::json traces_ = nlohmann::json::array();  // --trace: harness/traces.h's entries
};

}  // namespace

void add_training_worker_flags(CLI::App& command, TrainingWorker& worker) {
  command.add_flag(kWorkerFlag, worker.worker, "")->group("");
  command.add_option(kTrainingJobFlag, worker.job, "")->group("");
  command.add_option(kTrainingResultFlag, worker.result_file, "")->group("");
  command.add_option(kTrainingRepeatFlag, worker.repeat, "")->group("");
}

ScriptPlaces training_script_places(const TrainingFormat& format, const std::string& preferred) {
  return {preferred,
          std::string(GRADWIRE_BENCH_REFERENCE_SOURCE_DIR) + "/" + format.reference_script,
          std::string(GRADWIRE_BENCH_REFERENCE_INSTALLED_DIR) + "/" + format.reference_script};
}

std::optional<JobShape> launcher_job_shape() {
  const EnvMap env = EnvMap::from_process();
  if (!in_launcher_environment(env)) return std::nullopt;
  return JobShape{resolve_world({}, env).world_size,
                  count_addresses(env.get(gradwire::settings::kPsAddrs.name).value_or(""))};
}

std::optional<JobShape> training_job_shape(const TrainingFormat& format,
                                           const TrainingWorker& worker) {
  if (worker.worker) {
    if (worker.job.empty() || worker.result_file.empty()) {
      throw ConfigError(std::string(kWorkerFlag) + " is only for the trainers gradwire-bench " +
                        format.name + " starts itself; run without it");
    }
    return std::nullopt;
  }
  const std::optional<JobShape> job = launcher_job_shape();
  if (!job) return std::nullopt;
  if (!format.runs_in_job) {
    throw ConfigError("gradwire-bench " + format.name +
                      " starts its own servers and trainers: run it directly, not under "
                      "gradwire-run or another launcher");
  }
  if (job->servers == 0) {
    throw ConfigError("gradwire-bench " + format.name +
                      " runs in a job here (RANK/WORLD_SIZE are set) but GRADWIRE_PS_ADDRS is "
                      "not: start it with gradwire-run --servers S, or run it directly and it "
                      "starts its own servers and trainers");
  }
  return job;
}

int run_training(const TrainingFormat& format, const TrainingPlan& plan,
                 const TrainingWorker& worker, bool in_job, const std::vector<std::string>& argv) {
  if (worker.worker) {
    return run_trainers(format, plan, job_of_kind(plan, worker.job), worker.repeat,
                        worker.result_file, true, argv);
  }
  prepare_output_files({plan.json_path, plan.html_path});
  if (!plan.trace_dir.empty() && !in_job) prepare_trace_dir(plan.trace_dir);
  if (in_job) return run_trainers(format, plan, plan.jobs.front(), 1, "", false, argv);
  return Conductor(format, plan, argv).run();
}

}  // namespace gradwire::bench
