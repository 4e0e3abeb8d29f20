// The only file of gradwire that uses libtorch's autograd internals (torch/csrc/autograd: gradient
// accumulators, post hooks, the engine's end-of-backward callback), and so the adapter for them:
// the calls are the same in libtorch 1.13 and 2.x, but 2.x holds a Node by c10::intrusive_ptr where
// 1.13 holds it by std::shared_ptr, which the .cpp takes from the calls' own types.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gradwire::ddp {

// Calls on_ready(i) each time autograd has accumulated a gradient into params[i].grad (after
// accumulation, on the thread running that part of backward). The hooks are removed on
// destruction. Parameters must require grad.
class GradReadyHooks {
 public:
  GradReadyHooks(const std::vector<at::Tensor>& params, std::function<void(size_t)> on_ready);
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

  // For each parameter, whether its gradient accumulator can be reached from the autograd graph
  // of `outputs` (i.e. whether backward from them can produce its gradient).
  std::vector<bool> reachable_from(const std::vector<at::Tensor>& outputs) const;

 private:
  struct Accumulators;  // the parameters' gradient accumulators, held by libtorch's own pointer type
  std::unique_ptr<Accumulators> accumulators_;
  std::vector<uintptr_t> keys_;
};

// Runs fn once when the backward pass now running ends, before backward() returns. Must be called
// from inside a backward pass (e.g. from an on_ready callback). An exception thrown by fn is
// rethrown by backward().
void at_backward_end(std::function<void()> fn);

}  // namespace gradwire::ddp
