// `gradwire-bench ps`'s table entry (training_case.h): dense parameter-server training
// (reference 003: parameters cut into blocks on the servers, trainers pushing gradients and
// pulling values, the pulls overlapped with the forward pass) measured with
// gradwire::ps::DenseModel, optionally beside gradwire DDP on the same trainers (job "ddp"), one
// process without distribution (job "local") and the same algorithm in PyTorch
// (bench/reference/ps_reference.py: whole parameters on the servers, averaged and stepped there).
// A step is one iteration; reference 003's Pass lines group them. Pure but for the bodies given.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cases/ps_settings.h"
#include "cases/training_case.h"

namespace gradwire::bench {

// The phases of an iteration, in loop order (seconds):
//  forward:      the model and the loss, less the time its forward pre-hooks waited for pulls
//  backward:     loss.backward(); the gradient hooks copy and push each message as it completes
//  push_wait:    DenseModel::step() waiting for the servers to accept the pushes (Client::flush)
//  server_apply: step()'s Client::step: the servers' barrier and optimizer (sync), DenseStats's
//                server_step_s
//  pull_wait:    waiting for pulled blocks, in step() and in the forward pre-hooks
//  comm:         the reference's only: its push, the servers' step and the pull
// What none covers ("other"): zero_grad, the rest of step() (unpushed messages, sending the
// pulls) and, in the summation role, the trainer's own optimizer. The comparisons record forward
// and backward.
const std::vector<std::string>& ps_phases();
// The byte counts of an iteration (DenseStats: row data and ids): "pushed", "pulled".
const std::vector<std::string>& ps_byte_names();

const TrainingFormat& ps_format();

// The header block: the settings and what the run used (trainer 0's transports, the DDP
// comparison's backend, from the first repeat).
void print_ps_header(std::ostream& out, const PsSettings& settings, const RunUsed& used);

// One line about the blocks (ps_training.h's layout JSON): "dense layout: 62 tensors, 11181642
// parameters in 70 blocks on 2 servers (44.7 MiB, 22.4 MiB), rows of 1024 (0.3% padding), 13
// push and 13 pull messages per step".
std::string describe_ps_layout(const nlohmann::json& layout);

// Pure: the reference's command line without --json: interpreter, script and the settings' flags.
std::vector<std::string> ps_reference_command(const PythonTorch& python, const std::string& script,
                                              const PsSettings& settings);

// The entry, with `body` training one trainer of a job ("ps", "ddp" or "local") and `plain`
// timing the plain step on `threads` (ps_training.h).
using PsBody = std::function<TrainerOutcome(RankContext& context, const PsSettings& settings,
                                            const TrainingJob& job)>;
using PsPlainStep = std::function<PlainStep(const PsSettings& settings, int threads)>;
TrainingCase<PsSettings> ps_case(PsBody body, PsPlainStep plain);

}  // namespace gradwire::bench
