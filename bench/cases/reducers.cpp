// `gradwire-bench reducers`: the compare_ddp study. For each bucket size, trains the same model
// with DistributedDataParallel under each ReductionSchedule (overlapped with backward, or every
// bucket reduced after backward, asynchronously or one at a time) and compares forward and
// backward latency. Every rank's samples are gathered to rank 0, which prints and writes them.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>

#include "cases/ddp_report.h"
#include "cases/ddp_training.h"
#include "cases/reducers_report.h"
#include "cases/reducers_settings.h"
#include "gradwire/common/version.h"
#include "harness/case.h"
#include "harness/hardware.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/table.h"
#include "harness/timing.h"
#include "report/html_report.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

void reducers_progress(const std::string& line) {
  std::cerr << "gradwire-bench reducers: " << line << std::endl;
}

std::vector<double> to_milliseconds(std::vector<double> seconds) {
  for (double& value : seconds) value *= 1e3;
  return seconds;
}

class ReducersStudy {
 public:
  ReducersStudy(RankContext& context, const ReducersSettings& settings,
                std::vector<std::string> argv)
      : context_(context), settings_(settings), argv_(std::move(argv)) {}

  int run() {
    Communicator& comm = context_.communicator;
    if (context_.reports()) {
      reducers_progress(
          describe_reducers_settings(settings_, comm.size(), context_.threads_per_rank));
      print_header();
    }
    std::vector<BucketSizeResult> results;
    for (const double size : settings_.bucket_sizes_mb) {
      BucketSizeResult result{size, {}};
      for (const auto reducer : settings_.reducers)
        result.reducers.push_back(measure(size, reducer));
      if (context_.reports()) std::cout << "\n" << reducers_summary(result) << std::flush;
      results.push_back(std::move(result));
    }
    if (!context_.reports()) return 0;
    std::cout << "\n" << reducers_overview(results) << std::flush;
    const nlohmann::json whole = document(results);
    write_result_files(settings_.json_path, settings_.html_path, whole, progress);
    return 0;
  }

 private:
  ReducerMeasurement measure(double bucket_size_mb, ddp::ReductionSchedule reducer) {
    Communicator& comm = context_.communicator;
    TrainingSetup setup;
    setup.model = settings_.model;
    setup.image_size = settings_.image_size;
    setup.batch_size = settings_.batch_size;
    setup.warmup = settings_.warmup;
    setup.iterations = settings_.iterations;
    setup.bucket_cap_mb = bucket_size_mb;
    setup.schedule = reducer;
    const Stopwatch clock;
    const TrainingMeasurement measurement = train_and_time(setup, context_.world.communicator(),
                                                           static_cast<std::uint64_t>(comm.rank()));
    ReducerMeasurement out;
    out.reducer = reducer;
    out.buckets = measurement.stats.buckets.size();
    out.forward_ms = to_milliseconds(gather_samples(comm, measurement.forward_seconds));
    out.backward_ms = to_milliseconds(gather_samples(comm, measurement.backward_seconds));
    if (context_.reports()) {
      reducers_progress(format_fixed(bucket_size_mb, 1) + " MiB, " + ddp::to_string(reducer) +
                        ": " + std::to_string(out.buckets) + " buckets, done in " +
                        format_fixed(clock.seconds(), 1) + " s");
    }
    return out;
  }

  void print_header() {
    hardware_ = describe_hardware();
    hardware_.cores = context_.machine_cores;  // the machine's, not this bound rank's
    print_suite_title(std::cout, "reducers", 41, version(), torch_description());
    std::cout << "* Distributed backend: " << context_.communicator.backend() << "\n"
              << "* Model: " << settings_.model << ", batch " << settings_.batch_size
              << " per rank, " << settings_.image_size << "x" << settings_.image_size
              << " for the ResNets; random data; cross-entropy; SGD\n"
              << "* Ranks: " << context_.communicator.size()
              << ", threads per rank: " << context_.threads_per_rank << "\n"
              << "* Iterations: " << settings_.warmup << " warm-up + " << settings_.iterations
              << " timed per rank and configuration; statistics over every rank's iterations\n"
              << "* forward: the wrapped model and the loss; backward: loss.backward(), "
                 "including the reduction\n"
              << "* Reducers: overlapped = DDP reduces a bucket as soon as it is full, while "
                 "backward runs; async = every bucket reduced after backward, all launched then "
                 "waited; sync = after backward, one bucket at a time\n\n";
    print_hardware_block(std::cout, hardware_, context_.threads_per_rank);
  }

  nlohmann::json document(const std::vector<BucketSizeResult>& results) const {
    nlohmann::json doc = make_document("reducers", run_metadata(context_, argv_));
    std::vector<std::string> reducer_names;
    for (const auto reducer : settings_.reducers)
      reducer_names.emplace_back(ddp::to_string(reducer));
    doc["settings"] = {{"preset", settings_.preset},
                       {"model", settings_.model},
                       {"batch_size", settings_.batch_size},
                       {"image_size", settings_.image_size},
                       {"world_size", context_.communicator.size()},
                       {"threads_per_rank", context_.threads_per_rank},
                       {"warmup", settings_.warmup},
                       {"iterations", settings_.iterations},
                       {"bucket_sizes_mb", settings_.bucket_sizes_mb},
                       {"reducers", reducer_names}};
    doc["hardware"] = to_json(hardware_);
    doc["results"] = reducers_results_json(results);
    doc["rows"] = to_json(reducers_rows(results));
    return doc;
  }

  RankContext& context_;
  const ReducersSettings& settings_;
  std::vector<std::string> argv_;
  HardwareInfo hardware_;
};

}  // namespace

Subcommand reducers_subcommand() {
  return case_subcommand<ReducersSettings>(
      "reducers",
      "DDP forward/backward latency over bucket sizes: overlapped reduction against reducing "
      "after backward, async and sync (PyTorch's compare_ddp.py)",
      reducers_options,
      [](CLI::App& command, RankOptions& ranks) {
        ranks.bind_cores = false;  // as ddp: training, with a progress thread beside compute
        add_rank_options(command, ranks);
      },
      [](const auto& options, RankOptions ranks, const std::vector<std::string>& argv) {
        const ReducersSettings settings = options.resolve();
        if (!ranks.worker) prepare_output_files({settings.json_path, settings.html_path});
        if (!ranks.timeout) ranks.timeout = kTrainingTimeout;
        return run_on_ranks(ranks, argv, [&](RankContext& context) {
          return ReducersStudy(context, settings, argv).run();
        });
      });
}

}  // namespace gradwire::bench
