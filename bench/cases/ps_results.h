// The measurements of `gradwire-bench ps` (gradwire's dense parameter-server training, its
// comparisons and the PyTorch reference, all in trainer_results.h's shape, a step being one
// iteration), the per-pass figures of reference 003's lines ("Pass = 0, Elapsed = 41, Training
// performance = 146.812973 imgs/s"), bytes moved, and the pooling of repeats. Pure.
//
// JSON of one side (docs/benchmarks.md): {"implementation": "gradwire", "trainers": [{"trainer": 0,
//   "iteration_seconds": [...], "examples_per_iteration": [...], "phase_seconds": {"forward":
//   [...], "backward": [...], "push_wait": [...], "server_apply": [...], "pull_wait": [...]},
//   "bytes": {"pushed": [...], "pulled": [...]}}, ...]}; one entry per measured iteration, pass
// after pass. The DDP comparison records forward and backward, the reference forward, backward and
// comm.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cases/trainer_results.h"

namespace gradwire::bench {

// The phases of an iteration, in loop order (seconds):
//  forward:      the model and the loss, less the time its forward pre-hooks waited for pulls
//  backward:     loss.backward(); the gradient hooks copy and push each message as it completes
//  push_wait:    DenseModel::step() waiting for the servers to accept the pushes (Client::flush)
//  server_apply: step()'s Client::step: the servers' barrier and optimizer (sync), DenseStats's
//                server_step_s
//  pull_wait:    waiting for pulled blocks, in step() and in the forward pre-hooks
// What none covers ("other"): zero_grad, the rest of step() (unpushed messages, sending the
// pulls) and, in the summation role, the trainer's own optimizer.
// The reference's: forward, backward and comm (its push, the servers' step and the pull).
const std::vector<std::string>& ps_phases();
// Every phase any side of the case records, in the order the tables and charts show them.
const std::vector<std::string>& ps_all_phases();
// The byte counts of an iteration (DenseStats: row data and ids): "pushed", "pulled".
const std::vector<std::string>& ps_byte_names();

// The JSON keys of an iteration: "iteration_seconds", "examples_per_iteration".
const StepNames& ps_step_names();

// The phases of ps_all_phases() that some trainer of `result` records.
std::vector<std::string> recorded_phases(const TrainerResults& result);

// One pass of `iterations` iterations of the whole job: its wall time (the slowest trainer's sum
// of its iterations) and its images (every trainer's).
struct PassFigures {
  int pass = 0;
  double elapsed_s = 0;
  double images = 0;
  double images_per_second() const { return elapsed_s > 0 ? images / elapsed_s : 0.0; }
};
// Every complete pass of `result` (trainers that measured fewer iterations end the list). Throws
// InvalidArgument when iterations < 1.
std::vector<PassFigures> pass_figures(const TrainerResults& result, int iterations);
// Reference 003's line: "Pass = 0, Elapsed = 2.41, Training performance = 146.812973 imgs/s"
// (elapsed in seconds with two decimals: our passes are short).
std::string pass_line(const PassFigures& pass);

// Bytes of one trainer (or of all, summed): per iteration and per second of its iterations.
struct ByteRates {
  double pushed_per_iteration = 0;
  double pulled_per_iteration = 0;
  double pushed_per_second = 0;
  double pulled_per_second = 0;
};
ByteRates byte_rates(const TrainerSamples& trainer);
// The job's: the trainers' rates summed.
ByteRates total_byte_rates(const TrainerResults& result);

// What one repeat measured: the parameter-server run and the comparisons asked for.
struct PsRun {
  TrainerResults ps;
  std::optional<TrainerResults> ddp;    // --compare ddp: gradwire DDP, same model and trainers
  std::optional<TrainerResults> local;  // --compare local: one process, no distribution
};
// Each side's repeats pooled (pool_trainer_repeats).
PsRun pool_ps_runs(const std::vector<PsRun>& runs);

// Pure: p50 sec/iter of the All row of `ours` over that of `theirs` (0 when either is empty):
// above 1, ours is slower.
double p50_seconds_ratio(const TrainerResults& ours, const TrainerResults& theirs);

}  // namespace gradwire::bench
