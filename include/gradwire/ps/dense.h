// Dense parameter-server training (docs/ps.md "Dense parameters"): a model's parameters live on
// the parameter servers as blocks, trainers push gradients while backward runs and pull the new
// values before the next forward (reference 003, Paddle's distributed training; BytePS's
// summation role).
//
//   auto client = gradwire::ps::connect();                 // GRADWIRE_PS_ADDRS, token, rank
//   gradwire::ps::DenseModel dense(client, model);           // any torch::nn::Module
//   for (...) {
//     torch::Tensor loss = loss_fn(model->forward(x), y);
//     loss.backward();                                       // hooks push gradient blocks
//     dense.step();                                          // servers step; new values pulled
//   }
//
// Two roles:
//  kOptimizer: the servers run the optimizer (DenseOptions::optimizer: SGD with momentum, Adagrad,
//              Adam) on their blocks; step() pulls the new parameters.
//  kSum:       the servers only reduce the gradients; step() pulls the reduced gradients into each
//              parameter's grad(), and the trainer runs any torch::optim optimizer itself.
// In sync mode both equal one-process training on the concatenated batch.
//
// A module on a CUDA device works as one on the CPU: gradients come to the host through pinned
// buffers (the hook waits for its own copy, on the current stream), and pulled values (or reduced
// gradients) go to the device through pinned buffers asynchronously on the current stream of the
// thread that takes them (step(), or the forward pre-hook), ahead of the forward that uses them.
// Parameters are contiguous float32, on the CPU or a CUDA device.
//
// Thread safety: one training thread drives a DenseModel (as a model). Gradient hooks run on
// autograd's thread during backward; the forward pre-hook on the thread running forward.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/ps/client.h"
#include "gradwire/ps/dense_layout.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {

enum class DenseRole { kOptimizer, kSum };
const char* to_string(DenseRole role);

struct DenseOptions {
  // The table holding the blocks on every server ([A-Za-z0-9_.-]{1,64}); one per model.
  std::string table = "dense";
  DenseRole role = DenseRole::kOptimizer;
  // kOptimizer: the servers' optimizer (gradwire/ps/table.h), PyTorch's arithmetic.
  OptimizerConfig optimizer;
  // kSync (default) or kAsync (pushes applied as they arrive; kOptimizer only).
  UpdateMode mode = UpdateMode::kSync;
  // kAsync: bounded staleness K. 0: step() never waits for the other trainers; K >= 1: a trainer's
  // step() returns only once every trainer finished at least its step - K (stale synchronous
  // parallel: nobody runs more than K steps ahead of the slowest). Sync is K = 0 in that sense.
  int staleness = 0;
  // Blocks, placement, row width and message sizes (gradwire/ps/dense_layout.h).
  DenseLayoutOptions layout;
  // Forward pre-hooks installed on the model (forward_pre_hook(), e.g. through
  // gradwire::models::set_forward_pre_hook): step() returns once the pulls are sent, and each
  // layer waits for its own blocks when its forward starts. false: step() waits for every pull.
  bool overlap_forward = false;
  // How pushed gradients and pulled values travel: at::kFloat (exact), at::kHalf or
  // at::kBFloat16 (half the bytes; the servers keep and compute in float32, values are rounded
  // once per transfer). The first values trainer 0 writes always travel in float32.
  at::ScalarType wire = at::kFloat;
  // Keep a log of pushes, arrivals and layer waits (events()), for tests of the overlap.
  bool record_events = false;
  // A restarted trainer's own checkpoint step (docs/ps.md "Restarts"): the constructor calls
  // Client::resume(*resume_step) (every table the client created) before it pulls the values.
  std::optional<int64_t> resume_step;
};

// What a DenseModel did so far (seconds and bytes summed over steps).
struct DenseStats {
  int64_t steps = 0;
  int64_t bytes_pushed = 0;  // row data (in the wire type) and ids sent by pushes
  int64_t bytes_pulled = 0;  // row data (in the wire type) and ids received by pulls
  double push_wait_s = 0;    // step(): waiting for the servers to accept the pushes
  double server_step_s = 0;  // step(): the servers' barrier and optimizer (sync)
  double pull_wait_s = 0;    // waiting for pulled blocks (in step() or the forward hooks)
};

// One entry of DenseModel::events().
struct DenseEvent {
  enum class Kind {
    kGradient,  // a parameter's gradient reached its hook (index: the parameter)
    kPush,      // a push message was sent (index: the message)
    kPullSent,  // a pull message was sent (index: the message)
    kArrived,   // a pull message's rows were in place (index: the message)
    kLayer,     // a forward pre-hook ran for a layer (index: its first parameter, -1: none)
  };
  Kind kind;
  int index = 0;
};

class DenseModel {
 public:
  // Lays the module's parameters out in blocks over the client's servers, creates the table (or
  // finds it, restored from a checkpoint), has trainer 0 write its parameters to a new table and
  // pulls the servers' values into every trainer's module, and registers gradient hooks. Blocks.
  // InvalidArgument for bad options or a module without parameters.
  DenseModel(std::shared_ptr<Client> client, std::shared_ptr<torch::nn::Module> module,
             DenseOptions options = {});
  template <typename Impl>
  DenseModel(std::shared_ptr<Client> client, torch::nn::ModuleHolder<Impl> module,
             DenseOptions options = {})
      : DenseModel(std::move(client), module.ptr(), std::move(options)) {}
  ~DenseModel();
  DenseModel(const DenseModel&) = delete;
  DenseModel& operator=(const DenseModel&) = delete;

  // After loss.backward(): sends the gradient messages still unsent (a parameter without a
  // gradient this step pushes zeros), ends the step on the servers (Client::step: all tables of
  // the client), then kOptimizer: pulls the new values (waits for them unless overlap_forward);
  // kSum: pulls the reduced gradients into grad() (the caller's optimizer steps next). Throws
  // the client's errors (a dead server is named), InvalidArgument when overlap_forward is on and
  // the last forward ran a layer whose parameters had not arrived (a layer without the hook).
  void step();

  // The forward pre-hook for models that call one per layer (gradwire::models::ForwardPreHook):
  // waits for the pull messages holding the layer's parameters (recursively) and copies them in.
  std::function<void(const torch::nn::Module&)> forward_pre_hook();
  // Waits for every pull in flight and copies it in (step() does it without overlap_forward).
  void wait_for_parameters();

  const DenseLayout& layout() const;
  // The block layout as a table (parameter names, blocks, servers, rows; per-server totals).
  std::string describe_layout() const;
  DenseStats stats() const;
  std::vector<DenseEvent> events() const;
  void clear_events();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace gradwire::ps
