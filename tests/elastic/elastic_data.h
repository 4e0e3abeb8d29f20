// The elastic tests' job, shared by the worker, the one-process reference and the checks.
#pragma once

#include <torch/torch.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gradwire/data/distributed_sampler.h"

namespace gradwire::elastic_test {

inline constexpr double kLearningRate = 0.05;
inline constexpr double kMomentum = 0.9;

struct Data {
  torch::Tensor x;  // [240, 8] float64
  torch::Tensor y;  // [240, 1]
};

inline Data make_data() {
  torch::manual_seed(11);
  Data data;
  data.x = torch::randn({240, 8}, torch::kDouble);
  const auto truth = torch::linspace(-1, 1, 8, torch::kDouble).reshape({8, 1});
  data.y = data.x.matmul(truth) + 0.1 * torch::randn({240, 1}, torch::kDouble);
  return data;
}

inline torch::nn::Linear make_model() {
  torch::manual_seed(5);
  torch::nn::Linear model(8, 1);
  model->to(torch::kDouble);
  return model;
}

inline data::DistributedSamplerOptions sampler_options() {
  data::DistributedSamplerOptions options;
  options.seed = 3;
  return options;
}

struct JobOutput {
  int exit_code = -1;
  std::string text;
  std::map<int64_t, int> world_at_step;  // the last report of each step wins (rollbacks redo)
  std::vector<double> final_parameters;
};

// Reads the worker's "elastic-test:" lines from `output.text`.
inline void parse_job_output(JobOutput& output) {
  const std::regex step(R"(elastic-test: step (\d+) world (\d+))");
  const std::regex final_line(R"(elastic-test: final(.*))");
  std::istringstream lines(output.text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, step)) {
      output.world_at_step[std::stoll(match[1])] = std::stoi(match[2]);
    } else if (std::regex_search(line, match, final_line)) {
      std::istringstream values(match[1].str());
      output.final_parameters.clear();
      for (double value; values >> value;) output.final_parameters.push_back(value);
    }
  }
}

// One process: each step trains on the batches every live rank would take, concatenated.
inline std::vector<double> reference(const std::map<int64_t, int>& world_at_step, int64_t batch) {
  const elastic_test::Data data = elastic_test::make_data();
  auto model = elastic_test::make_model();
  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(elastic_test::kLearningRate).momentum(elastic_test::kMomentum));
  std::vector<data::DistributedSampler> samplers;
  for (const auto& [step, world] : world_at_step) {
    if (static_cast<int>(samplers.size()) != world) {
      std::vector<data::DistributedSampler> next;
      for (int rank = 0; rank < world; ++rank) {
        next.emplace_back(data.x.size(0), elastic_test::sampler_options());
        if (!samplers.empty()) {
          torch::serialize::OutputArchive saved;
          samplers.front().save(saved);
          std::ostringstream bytes;
          saved.save_to(bytes);
          torch::serialize::InputArchive loaded;
          std::istringstream in(bytes.str());
          loaded.load_from(in);
          next.back().load(loaded);
        }
        next.back().reshard(rank, world);
      }
      samplers = std::move(next);
    }
    std::vector<int64_t> indices;
    for (auto& sampler : samplers) {
      auto taken = sampler.next(static_cast<size_t>(batch));
      indices.insert(indices.end(), taken->begin(), taken->end());
    }
    const auto index = torch::tensor(indices);
    optimizer.zero_grad();
    torch::mse_loss(model->forward(data.x.index_select(0, index)), data.y.index_select(0, index))
        .backward();
    optimizer.step();
  }
  std::vector<double> values;
  for (const auto& parameter : model->parameters()) {
    auto flat = parameter.detach().flatten();
    for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(flat[i].item<double>());
  }
  return values;
}

}  // namespace gradwire::elastic_test
