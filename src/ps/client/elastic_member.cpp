#include "gradwire/ps/elastic_member.h"

#include <torch/types.h>

#include <optional>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::ps {

ElasticMember::ElasticMember(std::shared_ptr<Client> client) : client_(std::move(client)) {
  GRADWIRE_CHECK(client_ != nullptr);
}

int64_t ElasticMember::sync_step() const {
  std::optional<int64_t> step;
  std::string first;
  for (const std::string& name : client_->table_names()) {
    if (client_->table(name).mode != UpdateMode::kSync) continue;
    const int64_t count = client_->step_count(name);
    if (step && *step != count) {
      throw InvalidArgument("gradwire: the sync tables of an elastic job must step together: '" +
                            first + "' is at step " + std::to_string(*step) + ", '" + name +
                            "' at " + std::to_string(count));
    }
    step = count;
    if (first.empty()) first = name;
  }
  return step.value_or(0);
}

void ElasticMember::save(torch::serialize::OutputArchive& archive) const {
  archive.write("step", torch::tensor(sync_step(), torch::kInt64), /*is_buffer=*/true);
}

void ElasticMember::load(torch::serialize::InputArchive& archive) {
  torch::Tensor step;
  archive.read("step", step, /*is_buffer=*/true);
  step_ = step.item<int64_t>();
}

void ElasticMember::reshard(int rank, int world_size, int64_t generation) {
  client_->regroup(step_, rank, world_size, generation);
}

}  // namespace gradwire::ps
