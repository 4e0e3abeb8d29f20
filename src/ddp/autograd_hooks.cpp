#include "autograd_hooks.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_set>

namespace gradwire::ddp {

using torch::autograd::Node;
using torch::autograd::variable_list;

// std::shared_ptr<Node> in libtorch 1.13, c10::intrusive_ptr<Node> in 2.x.
using NodeHandle =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

struct GradReadyHooks::Accumulators {
  std::vector<NodeHandle> nodes;
};

GradReadyHooks::GradReadyHooks(const std::vector<at::Tensor>& params,
                               std::function<void(size_t)> on_ready)
    : accumulators_(std::make_unique<Accumulators>()) {
  auto& accumulators = accumulators_->nodes;
  accumulators.reserve(params.size());
  keys_.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params[i]);
    auto hook = std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [on_ready, i](const variable_list& outputs, const variable_list& /*inputs*/) {
          on_ready(i);
          return outputs;
        });
    keys_.push_back(accumulator->add_post_hook(std::move(hook)));
    accumulators.push_back(std::move(accumulator));
  }
}

GradReadyHooks::~GradReadyHooks() {
  const auto& accumulators = accumulators_->nodes;
  for (size_t i = 0; i < accumulators.size(); ++i) accumulators[i]->del_post_hook(keys_[i]);
}

std::vector<bool> GradReadyHooks::reachable_from(const std::vector<at::Tensor>& outputs) const {
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  auto visit = [&](Node* node) {
    if (node && seen.insert(node).second) stack.push_back(node);
  };
  for (const auto& output : outputs) {
    if (!output.defined() || !output.requires_grad()) continue;
    if (output.grad_fn()) {
      visit(output.grad_fn().get());
    } else {
      // A leaf output: its own accumulator is what backward reaches.
      visit(torch::autograd::impl::try_get_grad_accumulator(output).get());
    }
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& edge : node->next_edges()) visit(edge.function.get());
  }
  const auto& accumulators = accumulators_->nodes;
  std::vector<bool> reachable(accumulators.size());
  for (size_t i = 0; i < accumulators.size(); ++i) {
    reachable[i] = seen.count(accumulators[i].get()) > 0;
  }
  return reachable;
}

void at_backward_end(std::function<void()> fn) {
  torch::autograd::Engine::get_default_engine().queue_callback(std::move(fn));
}

}  // namespace gradwire::ddp
