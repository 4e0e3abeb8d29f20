// How `gradwire-bench ps` prints and stores its results: the header block; per side (gradwire's
// parameter servers, the DDP and local comparisons, the PyTorch reference) reference 003's Pass
// lines, the per-trainer table of trainer_report.h (sec/iter and images/s), the phase split and
// the bytes moved; the comparisons (PS / allreduce, PS / local, gradwire / PyTorch) and the JSON
// document. Pure formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/ps_results.h"
#include "cases/parity.h"
#include "cases/ps_settings.h"
#include "harness/hardware.h"
#include "harness/report.h"

namespace gradwire::bench {

struct PsHeader {
  PsSettings settings;
  PsThreads threads;
  std::string reference;  // a line about the PyTorch reference; empty: not asked for
  HardwareInfo hardware;
  // What the first repeat used: per server, trainer 0's transport (cases/ps_transports.h); the
  // DDP comparison's communicator backend (empty: no DDP comparison).
  std::vector<std::string> transports;
  std::string ddp_backend;
};
void print_ps_header(std::ostream& out, const PsHeader& header);

// One line about the blocks (ps_training.h's layout JSON): "dense layout: 62 tensors, 11181642
// parameters in 70 blocks on 2 servers (44.7 MiB, 22.4 MiB), rows of 1024 (0.3% padding), 13
// push and 13 pull messages per step".
std::string describe_ps_layout(const nlohmann::json& layout);

// A side's Pass lines (pass_figures of settings.iterations), its table, its phase split (the
// phases it records) and, when it counts them, its bytes per iteration and per second, each under
// `title`.
void print_ps_side(std::ostream& out, const TrainerResults& side, const PsSettings& settings,
                   const std::string& title);

// A ratio of the All rows of two sides: over the repeats pooled, and per repeat.
struct RatioFigures {
  double pooled = 0;
  std::vector<double> by_repeat;
};
// The comparisons the run has (each nullopt when it was not run):
//  ddp_seconds:    PS p50 sec/iter over DDP's (above 1: the parameter servers are slower)
//  ddp_images:     PS p50 images/s over DDP's
//  local_images:   the PS job's p50 images/s over one local process's
//  pytorch_images: gradwire's p50 images/s over PyTorch's
struct PsComparison {
  std::optional<RatioFigures> ddp_seconds;
  std::optional<RatioFigures> ddp_images;
  std::optional<RatioFigures> local_images;
  std::optional<RatioFigures> pytorch_images;
};
// Pure: from every repeat's runs and the reference's (empty: none).
PsComparison compare_ps(const std::vector<PsRun>& runs,
                        const std::vector<TrainerResults>& reference);

// The comparisons of the pooled sides: both All rows and the ratios; `pytorch` is the reference's
// title ("PyTorch 1.13.0a0 RPC parameter servers").
void print_ps_comparisons(std::ostream& out, const PsRun& pooled,
                          const std::optional<TrainerResults>& reference,
                          const PsComparison& comparison, const std::string& pytorch);

// How the plain step's lines name it (cases/parity.h): "plain step (no ps: the model in one
// process, batch 8)", its difference being in "the gradwire/pytorch ratios above" rather than in
// "the parameter servers".
PlainStepNames ps_plain_step_names(const PsSettings& settings);

// What the JSON document holds besides the settings.
struct PsDocumentInputs {
  RunMetadata metadata;
  PsSettings settings;
  PsThreads threads;
  PsRun pooled;                             // every side's repeats pooled
  nlohmann::json layout;                    // trainer 0's (ps_training.h); null: unknown
  std::optional<nlohmann::json> reference;  // the reference's document, pooled trainers
  PsComparison comparison;
  std::optional<PlainStepParity> plain_step;  // both sides' plain steps; with a reference only
  // Per repeat: trainer 0's transport per server, and the DDP comparison's backend (empty without
  // it), as the runs reported them.
  std::vector<std::vector<std::string>> transports;
  std::vector<std::string> ddp_backends;
};
// {"schema_version", "benchmark": "ps", "metadata", "implementation": "gradwire", "settings",
//  "layout", "transport" (summarize_transports), "transports" (per repeat, per server),
//  "trainers", "passes", "summary": {"all"}, "compare": {"ddp" (with its "backend"), "local"},
//  "reference", "comparison", "plain_step" (plain_step_json, when given), "rows"}
// (docs/benchmarks.md); the rows are sec/iter by
// implementation and trainer.
nlohmann::json ps_document(const PsDocumentInputs& inputs);

}  // namespace gradwire::bench
