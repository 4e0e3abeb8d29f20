#include <torch/serialize.h>
#include <torch/types.h>

#include <sstream>

#include "binding.h"
#include "gradwire/common/error.h"
#include "gradwire/elastic/elastic.h"

namespace gradwire::elastic {

State::State() = default;
State::~State() = default;

void State::add_part(Part part) {
  for (const Part& existing : parts_) {
    if (existing.name == part.name) {
      throw InvalidArgument("gradwire elastic: State already holds an object named '" + part.name +
                            "'");
    }
  }
  if (part.name.empty() || part.name.find('.') != std::string::npos) {
    throw InvalidArgument("gradwire elastic: State names must be non-empty and without '.': '" +
                          part.name + "'");
  }
  parts_.push_back(std::move(part));
}

std::string State::serialize() const {
  torch::serialize::OutputArchive archive;
  for (const Part& part : parts_) {
    torch::serialize::OutputArchive sub;
    part.save(sub);
    archive.write("part_" + part.name, sub);
  }
  torch::serialize::OutputArchive values;
  for (const auto& [name, value] : values_) {
    values.write(name, torch::tensor(value, torch::kInt64), /*is_buffer=*/true);
  }
  archive.write("values", values);
  archive.write("commits", torch::tensor(commits_, torch::kInt64), /*is_buffer=*/true);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void State::deserialize(const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  for (const Part& part : parts_) {
    torch::serialize::InputArchive sub;
    if (!archive.try_read("part_" + part.name, sub)) {
      throw InvalidArgument("gradwire elastic: the state received has no '" + part.name +
                            "': every worker must add() the same objects");
    }
    part.load(sub);
  }
  torch::serialize::InputArchive values;
  archive.read("values", values);
  for (const std::string& name : values.keys()) {
    torch::Tensor value;
    values.read(name, value, /*is_buffer=*/true);
    values_[name] = value.item<int64_t>();
  }
  torch::Tensor commits;
  archive.read("commits", commits, /*is_buffer=*/true);
  commits_ = commits.item<int64_t>();
}

void State::reshard(int rank, int world_size, int64_t generation) {
  for (const Part& part : parts_) {
    if (part.reshard) part.reshard(rank, world_size, generation);
  }
}

void State::commit() {
  if (binding_ != nullptr) {
    for (const Part& part : parts_) {
      if (part.prepare_commit) part.prepare_commit(*binding_->communicator);
    }
  }
  ++commits_;
  committed_ = serialize();
  if (binding_ == nullptr) return;
  // Rank 0 asks the store; one small allreduce tells every member at the same commit.
  Communicator& communicator = *binding_->communicator;
  const bool waiting =
      communicator.rank() == 0 && binding_->membership->joiners_waiting(binding_->generation);
  at::Tensor flag = torch::tensor(static_cast<int64_t>(waiting), torch::kInt64);
  communicator.allreduce(flag)->wait();
  if (flag.item<int64_t>() > 0) throw detail::MembershipChange{};
}

void State::restore() {
  if (committed_.empty()) return;
  deserialize(committed_);
}

void State::sync(Communicator& communicator, int root, int64_t generation) {
  std::string bytes;
  if (communicator.rank() == root) bytes = committed_.empty() ? serialize() : committed_;
  at::Tensor size = torch::tensor(static_cast<int64_t>(bytes.size()), torch::kInt64);
  communicator.broadcast(size, root)->wait();
  at::Tensor buffer = torch::empty({size.item<int64_t>()}, torch::kUInt8);
  if (communicator.rank() == root) std::memcpy(buffer.data_ptr(), bytes.data(), bytes.size());
  communicator.broadcast(buffer, root)->wait();
  bytes.assign(static_cast<const char*>(buffer.data_ptr()), static_cast<size_t>(buffer.numel()));
  deserialize(bytes);
  committed_ = std::move(bytes);
  reshard(communicator.rank(), communicator.size(), generation);
}

}  // namespace gradwire::elastic
