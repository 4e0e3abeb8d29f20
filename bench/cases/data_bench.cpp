// `gradwire-bench data`: records/s and MB/s of gradwire's RecordIO loader (ShardedRecordReader)
// over Fashion-MNIST and a generated file set, on 1 and 2 ranks, static and dynamic partitions,
// uncompressed and zstd, each against the raw read of the same files from the page cache
// (docs/benchmarks.md). Needs gradwire_data (GRADWIRE_BENCH_WITH_DATA).
//
// Every rank count runs inside one job of the largest count (the other ranks wait in the
// barriers), so the sweep starts its processes once. Rank 0 writes the file sets into a scratch
// directory and shares its path; each measurement is a series of epochs, each begun by a barrier
// and timed on every rank, the slowest rank's time counting.
#include <ATen/ATen.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "cases/data_bench_files.h"
#include "cases/data_bench_report.h"
#include "cases/data_bench_settings.h"
#include "gradwire/common/error.h"
#include "gradwire/data/sharded_reader.h"
#include "gradwire/data/store_counter.h"
#include "harness/case.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/timing.h"
#include "subcommand.h"

#ifndef GRADWIRE_BENCH_FASHION_MNIST_DIR
#define GRADWIRE_BENCH_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace gradwire::bench {

namespace {

namespace fs = std::filesystem;
// Each add() of the dynamic partition's counter is one store round trip bounded by this.
constexpr std::chrono::seconds kCounterTimeout{60};
// Rank counts a sweep may ask for when this process is not already part of a job.
constexpr int kMaxLocalRanks = 64;

void progress(const std::string& line) {
  std::cerr << "gradwire-bench data: " << line << std::endl;
}

// `text` on rank 0, received by every rank.
std::string broadcast_string(Communicator& communicator, const std::string& text) {
  at::Tensor length = at::full({1}, static_cast<std::int64_t>(text.size()), at::kLong);
  communicator.broadcast(length, 0)->wait();
  at::Tensor bytes = at::zeros({length.item<std::int64_t>()}, at::kByte);
  if (communicator.rank() == 0) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  communicator.broadcast(bytes, 0)->wait();
  return std::string(static_cast<const char*>(bytes.data_ptr()),
                     static_cast<std::size_t>(bytes.numel()));
}

// The scratch directory: --scratch (kept), or a fresh temporary one that rank 0 removes.
class ScratchDirectory {
 public:
  ScratchDirectory(Communicator& communicator, const std::optional<std::string>& chosen) {
    std::string path;
    if (communicator.rank() == 0) {
      if (chosen) {
        path = *chosen;
      } else {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern =
            (fs::path(tmp && *tmp ? tmp : "/tmp") / "gradwire-bench-data-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
          throw InvalidArgument("cannot create a scratch directory like " + pattern +
                                ": set TMPDIR or pass --scratch DIR");
        }
        path = pattern;
        remove_ = true;
      }
    }
    path_ = broadcast_string(communicator, path);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    if (remove_) fs::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool remove_ = false;
};

struct PreparedSet {
  DataSetReport report;
  std::vector<std::string> files;
  std::vector<std::uint64_t> sizes;
};

// Rank 0 writes the sets (other ranks wait in the broadcast that follows), then every rank lists
// and describes them and reads them once, so that they are in the page cache.
std::vector<PreparedSet> prepare_sets(Communicator& communicator, const DataSettings& settings,
                                      const std::string& scratch) {
  struct Planned {
    std::string name, compression, directory;
  };
  std::vector<Planned> plan;
  for (const auto& set : settings.sets) {
    if (set.source == DataSource::kDirectory) {
      plan.push_back({set.name, "as-is", set.directory});
      continue;
    }
    for (const auto& compression : settings.compressions) {
      const std::string directory = (fs::path(scratch) / (set.name + "-" + compression)).string();
      plan.push_back({set.name, compression, directory});
      if (communicator.rank() != 0) continue;
      const auto codec = *data::parse_compression(compression);
      const Stopwatch clock;
      fs::remove_all(directory);
      if (set.source == DataSource::kGenerated) {
        write_generated_set(directory, settings.generated, codec);
      } else {
        convert_fashion_mnist(GRADWIRE_BENCH_FASHION_MNIST_DIR, directory,
                              settings.fashion_mnist_files,
                              settings.fashion_mnist_records_per_chunk, codec);
      }
      progress("wrote " + set.name + " (" + compression + ") in " + directory + " in " +
               std::to_string(clock.seconds()).substr(0, 5) + " s");
    }
  }
  broadcast_string(communicator, "written");  // the files exist from here on

  std::vector<PreparedSet> prepared;
  for (const auto& planned : plan) {
    PreparedSet set;
    set.files = list_record_files(planned.directory);
    set.sizes = file_sizes(set.files);
    set.report.name = planned.name;
    set.report.files = set.files.size();
    set.report.facts = describe_file_set(set.files);
    set.report.compression =
        planned.compression == "as-is" ? set.report.facts.compression : planned.compression;
    read_raw(set.files, raw_read_share(set.sizes, 0, 1));  // into the page cache
    prepared.push_back(std::move(set));
  }
  return prepared;
}

// One epoch over the world: the slowest rank's seconds and the sums of the counts.
struct EpochTotals {
  double seconds = 0;
  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  std::uint64_t file_bytes = 0;
};

EpochTotals combine(Communicator& communicator, const EpochTotals& mine) {
  at::Tensor seconds = at::full({1}, mine.seconds, at::kDouble);
  communicator.allreduce(seconds, ReduceOp::kMax)->wait();
  at::Tensor counts = at::tensor(
      {static_cast<std::int64_t>(mine.records), static_cast<std::int64_t>(mine.record_bytes),
       static_cast<std::int64_t>(mine.file_bytes)},
      at::kLong);
  communicator.allreduce(counts, ReduceOp::kSum)->wait();
  const auto* sums = counts.data_ptr<std::int64_t>();
  return {seconds.item<double>(), static_cast<std::uint64_t>(sums[0]),
          static_cast<std::uint64_t>(sums[1]), static_cast<std::uint64_t>(sums[2])};
}

class DataSweep {
 public:
  DataSweep(RankContext& context, const DataSettings& settings,
            const std::vector<std::string>& argv)
      : context_(context), settings_(settings), argv_(argv) {}

  int run(const std::optional<std::string>& scratch_flag, const std::string& json_path) {
    Communicator& communicator = context_.communicator;
    if (communicator.size() < data_world_size(settings_)) {
      throw ConfigError("gradwire-bench data needs " + std::to_string(data_world_size(settings_)) +
                        " ranks for --rank-counts but the job has " +
                        std::to_string(communicator.size()));
    }
    RunMetadata metadata = run_metadata(context_, argv_);
    if (reports()) print_data_header(std::cout, metadata, settings_);
    const ScratchDirectory scratch(communicator, scratch_flag);
    const std::vector<PreparedSet> sets = prepare_sets(communicator, settings_, scratch.path());
    if (std::find(settings_.partitions.begin(), settings_.partitions.end(), "dynamic") !=
        settings_.partitions.end()) {
      counter_ = data::connect_store_counter(context_.world.info(), kCounterTimeout);
    }

    const std::vector<DataCase> cases = data_cases(settings_);
    std::vector<std::vector<double>> seconds(cases.size());
    std::vector<EpochTotals> totals(cases.size());
    std::vector<std::int64_t> wrong(cases.size(), 0);
    for (int repeat = 0; repeat < settings_.repeat; ++repeat) {
      for (std::size_t c = 0; c < cases.size(); ++c) {
        const PreparedSet& set = find_set(sets, cases[c]);
        if (reports()) {
          progress("sweep " + std::to_string(repeat + 1) + "/" + std::to_string(settings_.repeat) +
                   ": " + cases[c].set + " " + set.report.compression + " " +
                   std::to_string(cases[c].ranks) + " rank(s) " + cases[c].mode);
        }
        const std::string queue =
            "gradwire-bench/data/" + std::to_string(c) + "/" + std::to_string(repeat);
        measure(cases[c], set, queue, seconds[c], totals[c], wrong[c]);
      }
    }
    communicator.barrier()->wait();  // nobody reads the scratch files any more
    if (!reports()) return 0;

    std::vector<DataRow> rows;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      DataCase what = cases[c];
      what.compression = find_set(sets, what).report.compression;
      rows.push_back(make_data_row(what, totals[c].file_bytes, totals[c].records,
                                   totals[c].record_bytes, seconds[c], wrong[c]));
    }
    attach_raw_ratios(rows);
    std::vector<DataSetReport> reports_of_sets;
    for (const auto& set : sets) reports_of_sets.push_back(set.report);
    print_data_table(std::cout, reports_of_sets, rows);
    if (!json_path.empty()) {
      write_json_file(json_path, data_document(metadata, settings_, reports_of_sets, rows));
      progress("wrote " + json_path);
    }
    std::int64_t total_wrong = 0;
    for (const auto w : wrong) total_wrong += w;
    if (total_wrong > 0) {
      progress(std::to_string(total_wrong) +
               " epochs delivered the wrong number of records or bytes: the loader is broken");
      return 1;
    }
    return 0;
  }

 private:
  bool reports() const { return context_.reports(); }

  static const PreparedSet& find_set(const std::vector<PreparedSet>& sets, const DataCase& what) {
    for (const auto& set : sets) {
      if (set.report.name == what.set &&
          (what.compression == "as-is" || set.report.compression == what.compression)) {
        return set;
      }
    }
    throw InvalidArgument("no prepared file set " + what.set + " (" + what.compression + ")");
  }

  // warmup + epochs epochs of one case; appends the timed ones' seconds and counts the wrong ones.
  void measure(const DataCase& what, const PreparedSet& set, const std::string& queue,
               std::vector<double>& seconds, EpochTotals& last, std::int64_t& wrong) {
    Communicator& communicator = context_.communicator;
    const int rank = communicator.rank();
    const bool member = rank < what.ranks;
    const bool raw = what.mode == "raw" || what.mode == "raw+crc";
    std::vector<ByteRange> ranges;
    std::unique_ptr<data::ShardedRecordReader> reader;
    if (member && raw) ranges = raw_read_share(set.sizes, rank, what.ranks);
    if (member && !raw) {
      data::ShardedReaderOptions options;
      options.rank = rank;
      options.world_size = what.ranks;
      options.partition = *data::parse_partition(what.mode);
      options.counter = counter_;
      options.queue_name = queue;
      options.prefetch_chunks = static_cast<std::size_t>(settings_.prefetch);
      reader = std::make_unique<data::ShardedRecordReader>(set.files, options);
    }
    std::uint64_t touched = 0;
    for (int epoch = 0; epoch < settings_.warmup + settings_.epochs; ++epoch) {
      communicator.barrier()->wait();
      EpochTotals mine;
      const Stopwatch clock;
      if (member && raw) {
        const RawRead read = read_raw(set.files, ranges, what.mode == "raw+crc");
        mine.file_bytes = read.bytes;
        touched += read.crc;
      }
      if (reader) {
        reader->start_epoch(static_cast<std::uint64_t>(epoch));
        while (auto record = reader->next_record()) {
          ++mine.records;
          mine.record_bytes += record->size();
          if (!record->empty()) touched += static_cast<unsigned char>(record->front());
        }
      }
      mine.seconds = clock.seconds();
      EpochTotals epoch_totals = combine(communicator, mine);
      if (!raw) epoch_totals.file_bytes = set.report.facts.file_bytes;  // whole files, all ranks
      const bool right = raw ? epoch_totals.file_bytes == set.report.facts.file_bytes
                             : epoch_totals.records == set.report.facts.records;
      if (epoch < settings_.warmup) continue;
      seconds.push_back(epoch_totals.seconds);
      last = epoch_totals;
      if (!right) ++wrong;
    }
    sink_ += touched;
  }

  RankContext& context_;
  const DataSettings& settings_;
  const std::vector<std::string>& argv_;
  std::shared_ptr<data::SharedCounter> counter_;
  // Keeps the consumer's reads of the records from being optimised away.
  volatile std::uint64_t sink_ = 0;
};

}  // namespace

Subcommand data_subcommand() {
  return case_subcommand<DataSettings>(
      "data",
      "RecordIO loader records/s and MB/s (1 and 2 ranks, static and dynamic, zstd or not) "
      "against raw reads of the same files",
      data_options, add_worker_flag,
      [](const auto& options, RankOptions ranks, const std::vector<std::string>& argv) {
        const EnvMap env = EnvMap::from_process();
        const int max_ranks =
            in_launcher_environment(env) ? resolve_world({}, env).world_size : kMaxLocalRanks;
        const DataSettings settings = resolve_data_settings(options, max_ranks);
        if (!ranks.worker) prepare_output_files({settings.json_path});
        ranks.ranks = data_world_size(settings);
        ranks.threads_per_rank = 1;  // the loader's own threads are what is measured
        ranks.bind_cores = false;    // ... on every core, as a training job's loader runs
        return run_on_ranks(ranks, argv, [&](RankContext& context) {
          return DataSweep(context, settings, argv).run(settings.scratch_dir, settings.json_path);
        });
      });
}

}  // namespace gradwire::bench
