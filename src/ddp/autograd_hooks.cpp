#include "autograd_hooks.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_set>

namespace gradwire::ddp {

using torch::autograd::Node;
using torch::autograd::variable_list;

GradReadyHooks::GradReadyHooks(const std::vector<at::Tensor>& params,
                               std::function<void(size_t)> on_ready) {
  accumulators_.reserve(params.size());
  keys_.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params[i]);
    auto hook = std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [on_ready, i](const variable_list& outputs, const variable_list& /*inputs*/) {
          on_ready(i);
          return outputs;
        });
    keys_.push_back(accumulator->add_post_hook(std::move(hook)));
    accumulators_.push_back(std::move(accumulator));
  }
}

GradReadyHooks::~GradReadyHooks() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(keys_[i]);
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
  std::vector<bool> reachable(accumulators_.size());
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    reachable[i] = seen.count(accumulators_[i].get()) > 0;
  }
  return reachable;
}

void at_backward_end(std::function<void()> fn) {
  torch::autograd::Engine::get_default_engine().queue_callback(std::move(fn));
}

}  // namespace gradwire::ddp
