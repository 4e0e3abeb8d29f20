// Data calls packed into batches (batch_plan.h).
#include "batch_plan.h"

#include <utility>

namespace gradwire::ps {
namespace {

// A part's bytes inside the batch: its own, plus its field's tag and length.
int64_t framed(const google::protobuf::Message& part) {
  return static_cast<int64_t>(part.ByteSizeLong()) + 16;
}

// An answer part's framing besides its rows: the message, tensor, dtype and shape fields.
constexpr int64_t kAnswerPartBytes = 64;

}  // namespace

BatchPlan::BatchPlan(std::function<BatchLimits(int server)> limits) : limits_(std::move(limits)) {}

bool BatchPlan::split() const {
  for (const Batch& batch : batches_) {
    if (!batch.last) return true;
  }
  return false;
}

size_t BatchPlan::batch_for(int server, int64_t request_bytes, int64_t answer_bytes) {
  const auto open = open_.find(server);
  if (open != open_.end()) {
    Batch& batch = batches_[open->second];
    const BatchLimits limits = limits_(server);
    if (batch.request_bytes + request_bytes <= limits.request_bytes &&
        batch.answer_bytes + answer_bytes <= limits.answer_bytes) {
      return open->second;
    }
    batch.last = false;
  }
  batches_.push_back(Batch{server});
  open_[server] = batches_.size() - 1;
  return batches_.size() - 1;
}

void BatchPlan::add(int server, v1::PushRequest push) {
  const int64_t bytes = framed(push);
  Batch& batch = batches_[batch_for(server, bytes, 0)];
  batch.request_bytes += bytes;
  *batch.request.add_pushes() = std::move(push);
}

PartPlace BatchPlan::add(int server, v1::StepRequest step) {
  const int64_t bytes = framed(step);
  const size_t index = batch_for(server, bytes, kAnswerPartBytes);
  Batch& batch = batches_[index];
  batch.request_bytes += bytes;
  batch.answer_bytes += kAnswerPartBytes;
  *batch.request.add_steps() = std::move(step);
  return PartPlace{index, batch.request.steps_size() - 1};
}

PartPlace BatchPlan::add(int server, v1::LookupRequest lookup, int64_t answer_bytes) {
  const int64_t bytes = framed(lookup);
  const int64_t answer = answer_bytes + kAnswerPartBytes;
  const size_t index = batch_for(server, bytes, answer);
  Batch& batch = batches_[index];
  batch.request_bytes += bytes;
  batch.answer_bytes += answer;
  *batch.request.add_lookups() = std::move(lookup);
  return PartPlace{index, batch.request.lookups_size() - 1};
}

}  // namespace gradwire::ps
