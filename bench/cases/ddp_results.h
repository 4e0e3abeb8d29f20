// The results of `gradwire-bench ddp` as data, and their JSON: PyTorch's DDP benchmark schema
// (benchmarks/distributed/ddp/benchmark.py: pytorch_version, cuda_version, distributed_backend,
// bucket_size, benchmark_results[{model, batch_size, result[{ranks, measurements}]}]) plus
// gradwire's own fields, so that either tool's files can be read and compared (diff.h).
// Pure; docs/benchmarks.md has the schema.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cases/trainer_results.h"
#include "harness/rows.h"

namespace gradwire::bench {

// One configuration of one model: the "no ddp" baseline, DDP over `ranks`, or (--side-by-side)
// plain training on every rank of `ranks` at the same time.
struct DdpRound {
  bool ddp = true;         // false: plain training, in one process or in each of `ranks` at once
  std::vector<int> ranks;  // the ranks that trained: {0}, {0, 1}, ...
  // Seconds per iteration: DDP, every rank's (rank 0's first); plain training on several ranks,
  // the slowest rank's (slowest_rank_measurements).
  std::vector<double> measurements;
  // With an alternating timeline (GRADWIRE_TIMELINE_ALTERNATE_MS), one per measurement: 1 the
  // timeline recorded that iteration throughout, 0 not at all, -1 neither (AlternationProbe).
  // Empty otherwise. Written with the round's "timeline_alternating" figures.
  std::vector<double> timeline_recorded;
  nlohmann::json ddp_stats;  // rank 0's DdpStats (gradwire only); null when absent
  // Set when a run measured several backends or comm hooks (--backend gloo,shm): the DDP round's
  // communicator backend and comm hook. Empty: the only one of its run (the document's
  // distributed_backend), the baseline, or a file that does not say.
  std::string backend;
  std::string comm_hook;
  int world_size() const { return static_cast<int>(ranks.size()); }
  // "shm", "shm+bf16", "gloo", or "" when neither is set.
  std::string variant() const;
};

struct DdpModelResult {
  std::string model;
  std::int64_t batch_size = 0;   // per rank
  std::vector<DdpRound> rounds;  // "no ddp" first, then increasing world sizes
};

// A whole result file: the fields besides benchmark_results (as read), and the results.
struct DdpReport {
  nlohmann::json fields = nlohmann::json::object();
  std::vector<DdpModelResult> results;
  // Who wrote it: "gradwire", "pytorch" (bench/reference/ddp_reference.py) or "pytorch
  // benchmark.py" (upstream's own script, recognised by the absence of schema_version).
  std::string implementation;
};

// Pure: the row label of a round, as upstream prints it: "no ddp", or "<machines>M/<ranks>R"
// where ranks_per_node ranks share a machine ("1M/2R", "2M/8R"), followed by the round's
// variant when set ("1M/2R shm", "1M/2R gloo+bf16"), or by "no ddp" for plain training on
// several ranks at once ("1M/2R no ddp").
std::string round_label(const DdpRound& round, int ranks_per_node);

// Pure: of `samples`, every rank's measurements in turn (equal counts, as gather_samples returns
// them), those of the rank with the highest median. Throws InvalidArgument when the samples do
// not divide among `ranks`.
std::vector<double> slowest_rank_measurements(const std::vector<double>& samples, int ranks);

// Pure: the results of several repeats of the same sweep as one: every configuration's
// measurements concatenated in repeat order. ddp_stats: the *_s averages weighted by iterations,
// "iterations" summed, other fields from the last repeat. Throws InvalidArgument when the repeats
// did not measure the same models and configurations.
std::vector<DdpModelResult> pool_repeats(const std::vector<std::vector<DdpModelResult>>& repeats);

// The JSON of the results alone (benchmark_results).
nlohmann::json to_json(const std::vector<DdpModelResult>& results, int ranks_per_node);

// Pure: reads a document written by gradwire-bench ddp, by bench/reference/ddp_reference.py or by
// PyTorch's benchmark.py. In upstream files the first round of each model is the "no ddp"
// baseline (upstream marks it by position only). Throws InvalidArgument naming `source` when the
// document is another benchmark's, has another schema_version, or lacks a required field.
DdpReport parse_ddp_document(const nlohmann::json& document, const std::string& source);

// Reads and parses a file; throws gradwire::Error naming the path when it cannot be read.
DdpReport read_ddp_file(const std::string& path);

// Pure: a round as a side of the training cases' results (trainer_results.h) named
// `implementation`: a DDP round's measurements shared equally among its ranks (rank 0's first, as
// gathered; one trainer when they do not divide), a plain one's as one trainer; every step
// `batch_size` examples.
TrainerResults round_side(const DdpRound& round, std::int64_t batch_size,
                          const std::string& implementation);

// Pure: the results of `report` and of the document it embeds under "reference" as the generic
// rows (harness/rows.h) that `report` draws: per model and round, its seconds per iteration
// labelled implementation (the reference's "(reference)" when both name one), model ("resnet50,
// batch size 32": a chart each), configuration ("ddp", "ddp shm+bf16", "no ddp") and ranks (the
// world size, the x axis; absent for the one-rank "no ddp" baseline, drawn as a line). Throws
// parse_ddp_document's errors for a malformed embedded reference.
RowSet ddp_rows(const DdpReport& report, const std::string& source);

}  // namespace gradwire::bench
