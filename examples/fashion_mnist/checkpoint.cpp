#include "checkpoint.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"

namespace fashion_mnist {
namespace {

namespace fs = std::filesystem;
constexpr char kStepPrefix[] = "step-";
constexpr char kCompleteMarker[] = "COMPLETE";

std::string step_dir_name(int64_t global_step) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s%010lld", kStepPrefix, static_cast<long long>(global_step));
  return name;
}

std::string rank_file_name(int rank) { return "rank-" + std::to_string(rank) + ".pt"; }

// Step directories in `dir` by step, each with whether it is complete.
std::vector<std::pair<int64_t, bool>> list_steps(const std::string& dir) {
  std::vector<std::pair<int64_t, bool>> steps;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kStepPrefix, 0) != 0 || !entry.is_directory()) continue;
    char* end = nullptr;
    const long long step = std::strtoll(name.c_str() + std::strlen(kStepPrefix), &end, 10);
    if (*end != '\0') continue;
    steps.emplace_back(step, fs::exists(entry.path() / kCompleteMarker));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

torch::Tensor rng_state() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_rng_state(const torch::Tensor& state) {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

void save_rank_checkpoint(const std::string& dir, const CheckpointState& state,
                          torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  const fs::path step_dir = fs::path(dir) / step_dir_name(state.position.global_step);
  std::error_code error;
  fs::create_directories(step_dir, error);
  if (error) {
    throw gradwire::Error("checkpoint: cannot create " + step_dir.string() + ": " +
                          error.message());
  }
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  const TrainingPosition& position = state.position;
  archive.write(
      "position",
      torch::tensor({position.epoch, position.step_in_epoch, position.global_step,
                     static_cast<int64_t>(position.reader.epoch),
                     static_cast<int64_t>(position.reader.chunks_done),
                     static_cast<int64_t>(position.reader.records_done),
                     static_cast<int64_t>(state.world_size), static_cast<int64_t>(state.rank)},
                    torch::kInt64));
  if (state.schedule) {
    const LrSchedule& schedule = *state.schedule;
    archive.write("lr_schedule",
                  torch::tensor({static_cast<double>(schedule.kind), schedule.base_lr,
                                 static_cast<double>(schedule.steps_per_epoch),
                                 static_cast<double>(schedule.total_steps),
                                 static_cast<double>(schedule.step_epochs), schedule.gamma},
                                torch::kFloat64));
  }
  archive.write("rng", rng_state());
  std::ostringstream bytes;
  archive.save_to(bytes);
  gradwire::write_file_atomically((step_dir / rank_file_name(state.rank)).string(), bytes.str(),
                                  "checkpoint");
}

void mark_checkpoint_complete(const std::string& dir, int64_t global_step, int world_size) {
  const fs::path step_dir = fs::path(dir) / step_dir_name(global_step);
  gradwire::write_file_atomically((step_dir / kCompleteMarker).string(),
                                  "world_size " + std::to_string(world_size) + "\n", "checkpoint");
  // Keep this checkpoint and the newest complete one before it; remove the rest.
  bool kept_previous = false;
  const auto steps = list_steps(dir);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const auto [step, complete] = *it;
    if (step >= global_step) continue;
    if (complete && !kept_previous) {
      kept_previous = true;
      continue;
    }
    std::error_code ignored;  // a leftover directory costs disk space, not correctness
    fs::remove_all(fs::path(dir) / step_dir_name(step), ignored);
  }
}

std::optional<std::string> newest_complete_checkpoint(const std::string& dir) {
  const auto steps = list_steps(dir);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (it->second) return (fs::path(dir) / step_dir_name(it->first)).string();
  }
  return std::nullopt;
}

CheckpointState load_rank_checkpoint(const std::string& step_dir, int world_size, int rank,
                                     torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  const std::string path = (fs::path(step_dir) / rank_file_name(rank)).string();
  if (!fs::exists(path)) {
    throw gradwire::InvalidArgument("checkpoint: " + path +
                                    " is missing; was it written by a job with fewer ranks?");
  }
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  torch::serialize::InputArchive model_archive;
  archive.read("model", model_archive);
  model.load(model_archive);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  optimizer.load(optimizer_archive);
  torch::Tensor values;
  archive.read("position", values);
  torch::Tensor rng;
  archive.read("rng", rng);
  const auto* v = values.data_ptr<int64_t>();
  CheckpointState state;
  state.position.epoch = v[0];
  state.position.step_in_epoch = v[1];
  state.position.global_step = v[2];
  state.position.reader.epoch = static_cast<uint64_t>(v[3]);
  state.position.reader.chunks_done = static_cast<uint64_t>(v[4]);
  state.position.reader.records_done = static_cast<uint64_t>(v[5]);
  state.world_size = static_cast<int>(v[6]);
  state.rank = static_cast<int>(v[7]);
  if (state.world_size != world_size || state.rank != rank) {
    throw gradwire::InvalidArgument(
        "checkpoint: " + path + " was written by rank " + std::to_string(state.rank) + " of " +
        std::to_string(state.world_size) + ", this is rank " + std::to_string(rank) + " of " +
        std::to_string(world_size) + "; resume with the same number of ranks");
  }
  torch::Tensor schedule_values;
  if (archive.try_read("lr_schedule", schedule_values)) {
    const auto* s = schedule_values.data_ptr<double>();
    const int kind = static_cast<int>(s[0]);
    if (schedule_values.numel() != 6 || kind < 0 || kind > 2) {
      throw gradwire::InvalidArgument("checkpoint: " + path +
                                      " holds an unknown learning-rate schedule; was it written by "
                                      "another version of example-fashion-mnist?");
    }
    LrSchedule schedule;
    schedule.kind = static_cast<LrScheduleKind>(kind);
    schedule.base_lr = s[1];
    schedule.steps_per_epoch = static_cast<int64_t>(s[2]);
    schedule.total_steps = static_cast<int64_t>(s[3]);
    schedule.step_epochs = static_cast<int64_t>(s[4]);
    schedule.gamma = s[5];
    state.schedule = schedule;
  }
  set_rng_state(rng);
  return state;
}

}  // namespace fashion_mnist
