#include "comm/core/ring_reduce_scatter.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

#include "comm/core/c10d_communicator.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {

using Clock = std::chrono::steady_clock;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::chrono::milliseconds until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// bfloat16 and half are accumulated in float32; everything else in its own dtype.
at::ScalarType accumulation_dtype(at::ScalarType dtype) {
  return dtype == at::kBFloat16 || dtype == at::kHalf ? at::kFloat : dtype;
}

// out = op(received, own) elementwise (avg: the sum). `out` has the accumulation dtype;
// `received` has it or own's dtype. Mixed dtypes are widened before any arithmetic, so nothing
// is rounded in the narrow type.
void reduce_into(at::Tensor& out, const at::Tensor& received, const at::Tensor& own, ReduceOp op) {
  const bool same_dtype =
      received.scalar_type() == out.scalar_type() && own.scalar_type() == out.scalar_type();
  if (same_dtype) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        at::add_out(out, received, own);
        return;
      case ReduceOp::kMin:
        at::minimum_out(out, received, own);
        return;
      case ReduceOp::kMax:
        at::maximum_out(out, received, own);
        return;
    }
  }
  out.copy_(received);
  const at::Tensor wide = own.to(out.scalar_type());
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      out.add_(wide);
      return;
    case ReduceOp::kMin:
      at::minimum_out(out, out, wide);
      return;
    case ReduceOp::kMax:
      at::maximum_out(out, out, wide);
      return;
  }
}

}  // namespace

RingStep ring_step(int rank, int size, int step) {
  GRADWIRE_CHECK(size > 1 && rank >= 0 && rank < size && step >= 0 && step < size - 1);
  // Step 0 sends the chunk the next rank will end with last; each step passes on what it received.
  return RingStep{(rank - step - 1 + 2 * size) % size, (rank - step - 2 + 2 * size) % size};
}

int64_t ring_segment_count(int64_t chunk_elements, int64_t segment_elements) {
  GRADWIRE_CHECK(segment_elements > 0 && chunk_elements >= 0);
  return std::max<int64_t>(1, (chunk_elements + segment_elements - 1) / segment_elements);
}

struct RingReduceScatter::Pending {
  at::Tensor input;   // flat
  at::Tensor output;  // flat
  ReduceOp op;
  int64_t first_tag;  // offset in the tag range
};

// One operation on the progress thread: its buffers and its messages in flight.
class RingReduceScatter::Run {
 public:
  Run(RingReduceScatter& ring, const Pending& op, Clock::time_point deadline)
      : ring_(ring),
        op_(op),
        deadline_(deadline),
        rank_(ring.options_.rank),
        size_(ring.options_.size),
        next_((rank_ + 1) % size_),
        prev_((rank_ + size_ - 1) % size_),
        steps_(size_ - 1),
        n_(op.output.numel()),
        dtype_(op.output.scalar_type()),
        wide_(accumulation_dtype(dtype_)),
        segment_(std::max<int64_t>(
            1, ring.options_.segment_bytes / static_cast<int64_t>(c10::elementSize(wide_)))),
        segments_(ring_segment_count(n_, segment_)),
        sends_(steps_, std::vector<c10d_adapter::WorkPtr>(segments_)),
        recvs_(steps_, std::vector<c10d_adapter::WorkPtr>(segments_)) {}

  void run() {
    post_receives(0);
    if (steps_ > 1) post_receives(1);
    const at::Tensor first = chunk(op_.input, ring_step(rank_, size_, 0).send_chunk);
    for (int64_t j = 0; j < segments_; ++j) post_send(0, j, segment(first, j));
    for (int k = 0; k < steps_; ++k) {
      if (k >= 1 && k + 1 < steps_) post_receives(k + 1);
      for (int64_t j = 0; j < segments_; ++j) reduce_segment(k, j);
    }
    for (int k = 0; k < steps_; ++k) {
      for (int64_t j = 0; j < segments_; ++j) {
        if (sends_[k][j]) wait_send(k, j);
      }
    }
  }

 private:
  at::Tensor chunk(const at::Tensor& flat, int index) const {
    return flat.narrow(0, index * n_, n_);
  }
  at::Tensor segment(const at::Tensor& flat, int64_t j) const {
    const int64_t begin = j * segment_;
    return flat.narrow(0, begin, std::min(segment_, n_ - begin));
  }

  // Received messages of step k land here: the input's dtype in step 0, the accumulation dtype
  // after. Two buffers alternate so that step k+1's receives are posted while step k is reduced.
  at::Tensor& receive_buffer(int k) {
    at::Tensor& buffer = k == 0 && wide_ != dtype_ ? narrow_receive_ : receive_[k % 2];
    if (!buffer.defined()) buffer = at::empty({n_}, at::TensorOptions(k == 0 ? dtype_ : wide_));
    return buffer;
  }
  // Reductions of step k land here (and are sent in step k+1): two alternate.
  at::Tensor& accumulator(int k) {
    at::Tensor& buffer = accumulator_[k % 2];
    if (!buffer.defined()) buffer = at::empty({n_}, at::TensorOptions(wide_));
    return buffer;
  }

  int tag(int k, int64_t j) const {
    const auto& options = ring_.options_;
    const int64_t offset = (op_.first_tag + k * segments_ + j) % options.tag_count;
    return static_cast<int>(options.first_tag + offset);
  }

  std::string where(int k, int64_t j) const {
    std::string text = "in step " + std::to_string(k + 1) + " of " + std::to_string(steps_);
    if (segments_ > 1) {
      text += ", segment " + std::to_string(j + 1) + " of " + std::to_string(segments_);
    }
    return text;
  }

  void post_receives(int k) {
    at::Tensor& buffer = receive_buffer(k);
    for (int64_t j = 0; j < segments_; ++j) {
      std::vector<at::Tensor> tensors{as_transport_dtype(segment(buffer, j))};
      try {
        recvs_[k][j] = ring_.backend_->recv(tensors, prev_, tag(k, j));
      } catch (const std::exception& e) {
        throw std::runtime_error(receiving(k, j) + " failed: " + first_line(e.what()));
      }
    }
  }

  void post_send(int k, int64_t j, const at::Tensor& data) {
    std::vector<at::Tensor> tensors{as_transport_dtype(data)};
    try {
      sends_[k][j] = ring_.backend_->send(tensors, next_, tag(k, j));
    } catch (const std::exception& e) {
      throw std::runtime_error(sending(k, j) + " failed: " + first_line(e.what()));
    }
  }

  std::string receiving(int k, int64_t j) const {
    return "receiving chunk " + std::to_string(ring_step(rank_, size_, k).recv_chunk) +
           " from rank " + std::to_string(prev_) + " " + where(k, j);
  }
  std::string sending(int k, int64_t j) const {
    return "sending chunk " + std::to_string(ring_step(rank_, size_, k).send_chunk) + " to rank " +
           std::to_string(next_) + " " + where(k, j);
  }

  void wait_send(int k, int64_t j) {
    ring_.wait_for(sends_[k][j], deadline_, sending(k, j));
    sends_[k][j].reset();
  }

  void reduce_segment(int k, int64_t j) {
    ring_.wait_for(recvs_[k][j], deadline_, receiving(k, j));
    recvs_[k][j].reset();
    const at::Tensor received = segment(receive_buffer(k), j);
    const at::Tensor own = segment(chunk(op_.input, ring_step(rank_, size_, k).recv_chunk), j);
    // The accumulator of step k was sent in step k-1: that send must be done before it is reused,
    // also in the last step when the reduction goes through it (bfloat16 and half, 4 or more
    // ranks: without this wait the neighbour could receive the last step's sums).
    if (k >= 2 && sends_[k - 1][j]) wait_send(k - 1, j);
    if (k + 1 == steps_) {  // the last step: this rank's chunk
      at::Tensor out = segment(op_.output, j);
      at::Tensor target = wide_ == dtype_ ? out : segment(accumulator(k), j);
      reduce_into(target, received, own, op_.op);
      if (op_.op == ReduceOp::kAvg) target.div_(size_);
      if (wide_ != dtype_) out.copy_(target);
      return;
    }
    at::Tensor target = segment(accumulator(k), j);
    reduce_into(target, received, own, op_.op);
    post_send(k + 1, j, target);
  }

  RingReduceScatter& ring_;
  const Pending& op_;
  const Clock::time_point deadline_;
  const int rank_, size_, next_, prev_, steps_;
  const int64_t n_;
  const at::ScalarType dtype_, wide_;
  const int64_t segment_, segments_;
  std::vector<std::vector<c10d_adapter::WorkPtr>> sends_, recvs_;  // [step][segment]
  at::Tensor narrow_receive_;
  at::Tensor receive_[2];
  at::Tensor accumulator_[2];
};

RingReduceScatter::RingReduceScatter(c10d_adapter::BackendPtr backend,
                                     RingReduceScatterOptions options)
    : backend_(std::move(backend)), options_(options) {
  GRADWIRE_CHECK(options_.size > 1 && options_.rank >= 0 && options_.rank < options_.size);
  GRADWIRE_CHECK(options_.segment_bytes > 0 && options_.first_tag >= 0 && options_.tag_count > 0);
}

RingReduceScatter::~RingReduceScatter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  if (queue_) {
    queue_->shutdown([this] {
      std::lock_guard<std::mutex> lock(mutex_);
      if (waiting_on_) waiting_on_->abort();
    });
  }
}

c10d_adapter::WorkPtr RingReduceScatter::enqueue(at::Tensor input, at::Tensor output, ReduceOp op) {
  auto pending = std::make_shared<Pending>();
  pending->input = input.reshape({-1});
  pending->output = output.view({-1});
  pending->op = op;
  const int64_t segment_elements = std::max<int64_t>(
      1, options_.segment_bytes /
             static_cast<int64_t>(c10::elementSize(accumulation_dtype(output.scalar_type()))));
  const int64_t messages =
      (options_.size - 1) * ring_segment_count(output.numel(), segment_elements);
  // Tags are taken in enqueue order, the order the operations run in.
  std::lock_guard<std::mutex> lock(mutex_);
  pending->first_tag = next_tag_;
  next_tag_ = (next_tag_ + messages) % options_.tag_count;
  if (!queue_) {
    SerialWorkQueueOptions queue;
    queue.name = "ring reduce_scatter";
    queue.describe_wait = [status = std::weak_ptr<Status>(status_), rank = options_.rank] {
      const std::string who = "rank " + std::to_string(rank) + " of the communicator";
      auto alive = status.lock();
      if (!alive) return who + " has shut the communicator down";
      std::lock_guard<std::mutex> lock(alive->mutex);
      return alive->step.empty() ? who + " had not started a step of it yet"
                                 : who + " was " + alive->step;
    };
    queue_ = std::make_unique<SerialWorkQueue>(std::move(queue));
  }
  // The last step stays recorded until the next operation starts: cleared when the operation
  // ended, a wait timing out as it failed could read no step at all (as Note [last step] in
  // hierarchical/process_group.cpp).
  return queue_->enqueue("reduce_scatter", [this, pending] {
    set_step("");
    try {
      Run(*this, *pending, Clock::now() + options_.timeout).run();
    } catch (const std::exception& e) {
      throw std::runtime_error(e.what());
    } catch (...) {
      throw std::runtime_error("ring reduce_scatter failed");
    }
  });
}

void RingReduceScatter::set_step(std::string step) {
  std::lock_guard<std::mutex> lock(status_->mutex);
  status_->step = std::move(step);
}

void RingReduceScatter::wait_for(const c10d_adapter::WorkPtr& work, Clock::time_point deadline,
                                 const std::string& what) {
  set_step(what);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      throw std::runtime_error("ring reduce_scatter " + what +
                               " aborted: the communicator is shutting down");
    }
    waiting_on_ = work;
  }
  bool done = false;
  std::string failure;
  try {
    done = work->wait(until(deadline));
  } catch (const std::exception& e) {
    failure = first_line(e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_on_.reset();
  }
  if (!failure.empty()) {
    const bool late = Clock::now() >= deadline;
    throw std::runtime_error("ring reduce_scatter " + what + ": " +
                             (late ? "timed out (limit " + format_duration(options_.timeout) +
                                         "); backend said: " + failure
                                   : failure));
  }
  if (!done) {
    throw std::runtime_error("ring reduce_scatter " + what +
                             " aborted: the communicator is shutting down");
  }
}

}  // namespace gradwire
