// `gradwire-bench ddp`'s sweep on every rank (ddp_sweep.h): the baseline, the DDP world sizes
// for each backend and comm hook, the reference, the gathered samples and the result files.
#include "cases/ddp_sweep.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>

#include "cases/backend_worlds.h"
#include "cases/collectives_settings.h"
#include "cases/ddp_reference.h"
#include "cases/ddp_report.h"
#include "cases/ddp_results.h"
#include "cases/ddp_settings.h"
#include "cases/ddp_trace.h"
#include "cases/ddp_training.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"
#include "gradwire/common/version.h"
#include "harness/alternation.h"
#include "harness/hardware.h"
#include "harness/memory.h"
#include "harness/ranks.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/table.h"
#include "harness/timing.h"
#include "report/html_report.h"

namespace gradwire::bench {

// The reference's JSON next to --json: "out.json" -> "out.pytorch.json".
std::string reference_json_path(const std::string& json_path) {
  const auto dot = json_path.rfind('.');
  const auto slash = json_path.rfind('/');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_extension ? json_path.substr(0, dot) : json_path) + ".pytorch.json";
}

namespace {

void progress(const std::string& line) { std::cerr << "gradwire-bench ddp: " << line << std::endl; }

std::string milliseconds(double seconds) { return format_fixed(seconds * 1e3, 1) + " ms"; }

// The communicator of ranks 0..size-1 (the world itself when it has that size). Members only.
std::shared_ptr<Communicator> first_ranks(const std::shared_ptr<Communicator>& world, int size) {
  if (size == world->size()) return world;
  std::vector<int> ranks(static_cast<std::size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  return world->split(ranks);
}

std::string stats_line(const ddp::DdpStats& stats) {
  return "forward " + milliseconds(stats.forward_s) + ", backward " +
         milliseconds(stats.backward_s) + ", communication " + milliseconds(stats.communication_s) +
         " (" + milliseconds(stats.overlapped_s) + " overlapped, " + milliseconds(stats.exposed_s) +
         " exposed), " + std::to_string(stats.buckets.size()) +
         (stats.buckets.size() == 1 ? " bucket" : " buckets");
}

class DdpSweep {
 public:
  DdpSweep(RankContext& context, const DdpSettings& settings, std::vector<std::string> argv,
           std::optional<std::chrono::milliseconds> timeout)
      : context_(context),
        settings_(settings),
        argv_(std::move(argv)),
        timeout_(timeout),
        world_(context.world.communicator()),
        rank_(world_->rank()),
        ranks_per_node_(context.world.info().local_world_size) {}

  int run() {
    if (reports()) progress(describe_ddp_settings(settings_, context_.threads_per_rank));
    worlds_ = join_backend_worlds(context_, settings_.backends, timeout_);
    pause_timeline();
    const ReferencePlan reference = plan();
    if (reports()) print_header(reference);
    AlternatingRuns<std::vector<DdpModelResult>> runs;
    runs.repeats = settings_.repeat;
    runs.ours = [&](int repeat) {
      repeat_ = repeat;
      std::vector<DdpModelResult> results;
      for (const auto& model : settings_.models) results.push_back(sweep_model(model));
      return results;
    };
    if (reference.run) {
      runs.reference = [&](int, nlohmann::json& document) {
        return run_reference(reference, document);
      };
      runs.reference_result = [](const nlohmann::json& document) {
        return parse_ddp_document(document, "the PyTorch reference").results;
      };
    }
    if (reports()) runs.progress = progress;
    DdpRepeats repeats;
    if (!run_alternating(runs, repeats)) return reports() ? 1 : 0;
    if (!reports()) return 0;

    const std::vector<DdpModelResult> results = pool_repeats(repeats.ours);
    if (settings_.repeat > 1) print_pooled(results);
    nlohmann::json& reference_document = repeats.reference_document;
    if (reference.run) {
      reference_document["benchmark_results"] =
          to_json(pool_repeats(repeats.reference), ranks_per_node_);
      reference_document["repeat"] = settings_.repeat;
      const std::string title = "reference: PyTorch " + reference.python.torch_version +
                                " DistributedDataParallel, same settings";
      print_ddp_comparison(std::cout, results,
                           parse_ddp_document(reference_document, "the PyTorch reference"),
                           ranks_per_node_, title, repeats);
    }
    const nlohmann::json whole = document(results, reference_document);
    if (!settings_.json_path.empty() && reference.run) {
      const std::string path = reference_json_path(settings_.json_path);
      write_json_file(path, reference_document);
      progress("wrote " + path);
    }
    write_result_files(settings_.json_path, settings_.html_path, whole, progress);
    return 0;
  }

 private:
  // Rows appear on stdout as they are measured, unless the sweep repeats: then stdout gets the
  // pooled tables at the end and each repeat's rows are progress on stderr.
  std::ostream& rows() const { return repeat_output(settings_.repeat); }

  void print_pooled(const std::vector<DdpModelResult>& results) const {
    std::cout << "\n(all " << settings_.repeat << " repeats pooled)\n";
    for (const auto& result : results) {
      std::cout << "\n"
                << ddp_benchmark_title(result.model, result.batch_size) << "\n\n"
                << ddp_table_header() << "\n";
      for (const auto& round : result.rounds) {
        std::cout << ddp_row(round, round_label(round, ranks_per_node_), result.batch_size) << "\n";
      }
    }
    std::cout << std::flush;
  }

  bool reports() const { return rank_ == 0; }

  // --trace: the timeline gradwire::init started (GRADWIRE_TIMELINE, which the launching
  // gradwire-bench set) stops here, keeping its file and measured clock offset, and records again
  // only for the traced configuration's first measured repeat (traced_round).
  void pause_timeline() {
    if (settings_.trace_dir.empty() || !timeline::running()) return;
    trace_process_file_ = timeline::current_path();
    trace_clock_offset_ns_ = timeline::clock_offset_ns();
    timeline::stop();
  }

  bool traced_round(const std::string& model, bool first_variant, int size) const {
    return !trace_process_file_.empty() && repeat_ == 1 && first_variant &&
           model == settings_.models.front() && size == settings_.world_sizes.back();
  }

  // Several backends or hooks: rounds are labelled with theirs.
  bool labels_variants() const {
    return settings_.backends.size() * settings_.comm_hooks.size() > 1;
  }

  // "gloo,shm": the backends as their communicators name them.
  std::string backends_text() const {
    std::vector<std::string> names;
    for (const auto& world : worlds_) names.push_back(world.communicator->backend());
    return join_backends(names);
  }

  TrainingSetup setup_for(const std::string& model) const {
    TrainingSetup setup;
    setup.model = model;
    setup.image_size = settings_.image_size;
    setup.batch_size = settings_.batch_size;
    setup.warmup = settings_.warmup;
    setup.iterations = settings_.iterations;
    setup.bucket_cap_mb = settings_.bucket_cap_mb;
    setup.gradient_as_bucket_view = settings_.gradient_as_bucket_view;
    setup.shared_buckets = settings_.shared_buckets;
    setup.comm_hook = settings_.comm_hooks.front();
    setup.device = settings_.device;
    return setup;
  }

  ReferencePlan plan() {
    if (!settings_.reference_pytorch) return {};
    ReferencePlan plan = plan_reference(*world_, settings_);
    if (!plan.run && reports()) progress("--reference pytorch skipped: " + plan.why_not);
    return plan;
  }

  void print_header(const ReferencePlan& reference) {
    hardware_ = describe_hardware();
    hardware_.cores = context_.machine_cores;  // the machine's, not this bound rank's
    DdpHeader header;
    header.gradwire_version = version();
    header.torch_version = torch_description();
    header.backend = backends_text();
    header.bucket_cap_mb = settings_.bucket_cap_mb;
    header.first_bucket_mb = *benchmark_ddp_options(setup_for("")).first_bucket_mb;
    header.ranks = world_->size();
    header.ranks_per_node = ranks_per_node_;
    header.threads_per_rank = context_.threads_per_rank;
    header.image_size = settings_.image_size;
    header.warmup = settings_.warmup;
    header.iterations = settings_.iterations;
    if (settings_.reference_pytorch) header.reference = reference_line(reference);
    header.memory = describe_memory_policy();
    header.hardware = hardware_;
    print_ddp_header(std::cout, header);
  }

  DdpModelResult sweep_model(const std::string& model) {
    const TrainingSetup setup = setup_for(model);
    DdpModelResult result{model, settings_.batch_size, {}};
    if (reports()) {
      rows() << "\n"
             << ddp_benchmark_title(model, settings_.batch_size) << "\n\n"
             << ddp_table_header() << std::endl;
    }
    // The baseline: rank 0 alone, without DDP; with --interleave, DDP on 1 rank alongside it.
    std::optional<DdpRound> paired;
    std::string paired_stats;
    if (rank_ == 0) {
      const Stopwatch clock;
      DdpRound round;
      round.ddp = false;
      round.ranks = {0};
      if (interleaves()) {
        progress(model + ", no ddp and DDP on 1 rank, alternating: " + iterations_text());
        auto [baseline, one] = train_and_time_interleaved(setup, first_ranks(world_, 1), 0);
        round.measurements = baseline.seconds;
        paired = ddp_round({0}, one.seconds, one.stats);
        paired_stats = stats_line(one.stats) + " (measured with the baseline)";
      } else {
        progress(model + ", no ddp: " + iterations_text());
        round.measurements = train_and_time(setup, nullptr, 0).seconds;
      }
      finish_round(result, std::move(round), clock.seconds(), "");
    }
    world_->barrier()->wait();
    if (settings_.side_by_side) measure_side_by_side(result, setup);
    bool first = true;  // the interleaved 1-rank round is the first backend's with the first hook
    for (const auto& world : worlds_) {
      for (const auto& hook : settings_.comm_hooks) {
        sweep_world_sizes(result, setup, world.communicator, hook, first, paired, paired_stats);
        first = false;
      }
    }
    return result;
  }

  // --side-by-side: every rank of the largest world size trains without DDP at the same time; the
  // round keeps the slowest rank's measurements.
  void measure_side_by_side(DdpModelResult& result, const TrainingSetup& setup) {
    const int size = settings_.world_sizes.back();
    if (size < 2) return;
    if (rank_ < size) {
      const Stopwatch clock;
      if (reports()) {
        progress(result.model + ", no ddp on " + std::to_string(size) +
                 " ranks at once: " + iterations_text());
      }
      const std::shared_ptr<Communicator> group = first_ranks(world_, size);
      group->barrier()->wait();
      const TrainingMeasurement measurement =
          train_and_time(setup, nullptr, static_cast<std::uint64_t>(rank_));
      DdpRound round;
      round.ddp = false;
      round.ranks.resize(static_cast<std::size_t>(size));
      std::iota(round.ranks.begin(), round.ranks.end(), 0);
      round.measurements =
          slowest_rank_measurements(gather_samples(*group, measurement.seconds), size);
      if (reports()) finish_round(result, std::move(round), clock.seconds(), "");
    }
    world_->barrier()->wait();
  }

  // DDP over each world size on `communicator` (a backend's world) with comm hook `hook`.
  void sweep_world_sizes(DdpModelResult& result, TrainingSetup setup,
                         const std::shared_ptr<Communicator>& communicator, const std::string& hook,
                         bool first, std::optional<DdpRound>& paired,
                         const std::string& paired_stats) {
    setup.comm_hook = hook;
    const std::string backend = communicator->backend();
    const std::string variant = backend + (hook == "allreduce" ? "" : "+" + hook);
    auto label = [&](DdpRound& round) {
      if (!labels_variants()) return;
      round.backend = backend;
      round.comm_hook = hook;
    };
    for (const int size : settings_.world_sizes) {
      if (interleaves() && size == 1 && first) {
        // Measured with the baseline, on rank 0.
        if (paired) {
          label(*paired);
          finish_round(result, std::move(*paired), 0.0, paired_stats);
          paired.reset();
        }
      } else if (rank_ < size) {
        const Stopwatch clock;
        if (reports())
          progress(result.model + ", DDP on " + std::to_string(size) +
                   (size == 1 ? " rank" : " ranks") +
                   (labels_variants() ? " (" + variant + ")" : "") + ": " + iterations_text());
        const std::shared_ptr<Communicator> group = first_ranks(communicator, size);
        const bool traced = traced_round(result.model, first, size);
        if (traced) {
          // The file is truncated: this rank's trace holds this round only.
          timeline::start(trace_process_file_, "rank " + std::to_string(rank_));
          timeline::set_clock_offset({trace_clock_offset_ns_, 0}, "this rank's offset at init");
        }
        const TrainingMeasurement measurement =
            train_and_time(setup, group, static_cast<std::uint64_t>(rank_));
        if (traced) timeline::stop();
        std::vector<int> ranks(static_cast<std::size_t>(size));
        std::iota(ranks.begin(), ranks.end(), 0);
        DdpRound round =
            ddp_round(ranks, gather_samples(*group, measurement.seconds), measurement.stats);
        // Every rank alternates its timeline or none does (one environment): collective.
        if (!measurement.timeline_recorded.empty()) {
          round.timeline_recorded = gather_samples(*group, measurement.timeline_recorded);
        }
        label(round);
        if (reports())
          finish_round(result, std::move(round), clock.seconds(), stats_line(measurement.stats));
      }
      world_->barrier()->wait();
    }
  }

  // --interleave applies when DDP on 1 rank is among the configurations.
  bool interleaves() const {
    const auto& sizes = settings_.world_sizes;
    return settings_.interleave && std::find(sizes.begin(), sizes.end(), 1) != sizes.end();
  }

  static DdpRound ddp_round(std::vector<int> ranks, std::vector<double> measurements,
                            const ddp::DdpStats& stats) {
    DdpRound round;
    round.ranks = std::move(ranks);
    round.measurements = std::move(measurements);
    round.ddp_stats = to_json(stats);
    return round;
  }

  std::string iterations_text() const {
    return std::to_string(settings_.warmup) + " warm-up + " + std::to_string(settings_.iterations) +
           " timed iterations";
  }

  // `seconds`: how long the round took, for the progress line.
  void finish_round(DdpModelResult& result, DdpRound round, double seconds,
                    const std::string& stats) {
    rows() << ddp_row(round, round_label(round, ranks_per_node_), result.batch_size) << std::endl;
    progress(result.model + ", " + round_label(round, ranks_per_node_) + ": done in " +
             format_fixed(seconds, 1) + " s" +
             (stats.empty() ? "" : "; rank 0 per iteration: " + stats));
    AlternatedSteps alternated;
    alternated.add(round.measurements, round.timeline_recorded);
    if (alternated.comparable()) {
      progress(result.model + ", " + round_label(round, ranks_per_node_) + ": " +
               alternated.line("iteration"));
    }
    result.rounds.push_back(std::move(round));
  }

  // What the header says about the reference.
  std::string reference_line(const ReferencePlan& plan) const {
    if (!plan.run) return "skipped: " + plan.why_not;
    return "PyTorch " + plan.python.torch_version + " torch.nn.parallel.DistributedDataParallel (" +
           plan.python.python + " " + plan.script + "), same settings, " +
           reference_order(settings_.repeat);
  }

  // Runs the reference on every rank (collective). Returns false when it failed on any rank; on
  // rank 0, `document` receives what the reference wrote.
  bool run_reference(const ReferencePlan& plan, nlohmann::json& document) {
    if (reports()) {
      progress("running the PyTorch reference: " + plan.python.python + " " + plan.script);
    }
    if (run_reference_once(*world_, context_.world.info().master_addr, plan, settings_,
                           context_.threads_per_rank, document)) {
      return true;
    }
    if (reports()) progress("the PyTorch reference failed (see its messages above)");
    return false;
  }

  nlohmann::json document(const std::vector<DdpModelResult>& results,
                          const nlohmann::json& reference) const {
    nlohmann::json document = make_document("ddp", run_metadata(context_, argv_));
    document["implementation"] = "gradwire";
    // PyTorch benchmark.py's fields, same meaning.
    document["pytorch_version"] = torch_version();
    document["cuda_version"] = torch_cuda_version().empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(torch_cuda_version());
    document["distributed_backend"] = backends_text();
    const double bucket = settings_.bucket_cap_mb;
    document["bucket_size"] = bucket == static_cast<double>(static_cast<std::int64_t>(bucket))
                                  ? nlohmann::json(static_cast<std::int64_t>(bucket))
                                  : nlohmann::json(bucket);
    // gradwire's.
    document["gradwire_version"] = version();
    document["torch_version"] = torch_version();
    document["preset"] = settings_.preset;
    document["device"] = settings_.device;
    document["image_size"] = settings_.image_size;
    document["threads_per_rank"] = context_.threads_per_rank;
    document["bound_cpus"] = context_.bound_cpus;  // rank 0's; empty: not bound
    document["world_size"] = world_->size();
    document["ranks_per_node"] = ranks_per_node_;
    document["warmup"] = settings_.warmup;
    document["iterations"] = settings_.iterations;
    document["repeat"] = settings_.repeat;
    document["interleave"] = settings_.interleave;
    document["gradient_as_bucket_view"] = settings_.gradient_as_bucket_view;
    document["shared_buckets"] = settings_.shared_buckets;
    document["backends"] = settings_.backends;
    document["comm_hooks"] = settings_.comm_hooks;
    document["hardware"] = to_json(hardware_);
    document["benchmark_results"] = to_json(results, ranks_per_node_);
    if (!reference.is_null()) document["reference"] = reference;
    return document;
  }

  RankContext& context_;
  const DdpSettings& settings_;
  std::vector<std::string> argv_;
  std::optional<std::chrono::milliseconds> timeout_;
  std::vector<BackendWorld> worlds_;  // one per backend, the run's own world first
  std::shared_ptr<Communicator> world_;
  int rank_;
  int ranks_per_node_;
  HardwareInfo hardware_;
  int repeat_ = 0;                  // the repeat being measured, from 1
  std::string trace_process_file_;  // --trace: this rank's timeline file; empty: no trace
  std::int64_t trace_clock_offset_ns_ = 0;
};

}  // namespace

int run_ddp_sweep(RankContext& context, const DdpSettings& settings, std::vector<std::string> argv,
                  std::optional<std::chrono::milliseconds> timeout) {
  return DdpSweep(context, settings, std::move(argv), timeout).run();
}

}  // namespace gradwire::bench
