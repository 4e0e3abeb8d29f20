// The built-in comm hooks and their registry.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <utility>

#include "gradwire/common/error.h"
#include "gradwire/ddp/comm_hook.h"

namespace gradwire::ddp {
namespace {

class ThenFuture : public BucketFuture {
 public:
  ThenFuture(WorkHandle work, std::function<at::Tensor()> finish)
      : work_(std::move(work)), finish_(std::move(finish)) {}
  at::Tensor wait() override {
    if (!done_) {
      work_->wait();
      result_ = finish_();
      done_ = true;
    }
    return result_;
  }

 private:
  WorkHandle work_;
  std::function<at::Tensor()> finish_;
  bool done_ = false;
  at::Tensor result_;
};

// The built-in hooks average in the reduction where that is free, and divide on fill otherwise.
bool divide_on_fill(const Communicator& comm) { return !comm.averages_while_reducing(); }
ReduceOp averaging_op(const Communicator& comm) {
  return comm.averages_while_reducing() ? ReduceOp::kAvg : ReduceOp::kSum;
}

class AllreduceHook : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  bool divides_on_fill(const Communicator& comm) const override { return divide_on_fill(comm); }
  std::shared_ptr<BucketFuture> run(Communicator& comm, GradBucket& bucket) override {
    at::Tensor buffer = bucket.buffer;
    return make_bucket_future(comm.allreduce(buffer, averaging_op(comm)),
                              [buffer] { return buffer; });
  }
};

// Reduces a copy of the bucket in a narrower dtype; the result comes back in the bucket's dtype.
// The copy lives in a buffer of the hook's, one per bucket buffer, kept from iteration to
// iteration: for CPU buckets a Communicator::shared_buffer, so that shm reduces it in place
// instead of staging it through its segment; nothing is allocated per iteration. Every rank
// allocates its buffers for the same buckets in the same order (run's contract), as shared_buffer
// requires; a rebuilt layout has new bucket buffers, so every rank allocates anew alike.
class CompressHook : public CommHook {
 public:
  CompressHook(std::string name, at::ScalarType wire_type)
      : name_(std::move(name)), wire_type_(wire_type) {}
  std::string name() const override { return name_; }
  bool divides_on_fill(const Communicator& comm) const override { return divide_on_fill(comm); }
  std::shared_ptr<BucketFuture> run(Communicator& comm, GradBucket& bucket) override {
    at::Tensor compressed = wire_buffer(comm, bucket.buffer);
    compressed.copy_(bucket.buffer);
    at::Tensor buffer = bucket.buffer;
    return make_bucket_future(comm.allreduce(compressed, averaging_op(comm)), [compressed, buffer] {
      buffer.copy_(compressed);
      return buffer;
    });
  }

 private:
  struct Wire {
    // The bucket buffer it serves; weak, so a bucket that is gone (a rebuilt layout, a destroyed
    // DDP) frees its wire buffer at the next lookup, and its address cannot be reused meanwhile.
    c10::weak_intrusive_ptr<c10::TensorImpl> bucket;
    at::Tensor buffer;
  };

  // One hook may serve several reducers at once (ranks in one process, several DDP modules): the
  // table is guarded, but not the allocation, which waits for the other ranks.
  at::Tensor wire_buffer(Communicator& comm, const at::Tensor& bucket) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      wires_.erase(std::remove_if(wires_.begin(), wires_.end(),
                                  [](const Wire& wire) { return wire.bucket.expired(); }),
                   wires_.end());
      for (const Wire& wire : wires_) {
        if (wire.bucket._unsafe_get_target() == bucket.unsafeGetTensorImpl()) return wire.buffer;
      }
    }
    // Only this bucket's reducer asks for it, one launch at a time: nobody else inserts it.
    at::Tensor buffer = bucket.is_cpu()
                            ? comm.shared_buffer(bucket.numel(), wire_type_)
                            : at::empty({bucket.numel()}, bucket.options().dtype(wire_type_));
    Wire wire{c10::weak_intrusive_ptr<c10::TensorImpl>(bucket.getIntrusivePtr()), buffer};
    std::lock_guard<std::mutex> lock(mutex_);
    wires_.push_back(wire);
    return wire.buffer;
  }

  std::string name_;
  at::ScalarType wire_type_;
  std::mutex mutex_;
  std::vector<Wire> wires_;
};

// Communicates nothing: each rank keeps its own gradients, copied (and divided on fill) as for
// "allreduce" over the same communicator. Measures what DDP costs without the reduction
// (PyTorch's debugging noop_hook); not for training.
class NoopHook : public CommHook {
  class Ready : public BucketFuture {
   public:
    explicit Ready(at::Tensor buffer) : buffer_(std::move(buffer)) {}
    at::Tensor wait() override { return buffer_; }

   private:
    at::Tensor buffer_;
  };

 public:
  std::string name() const override { return "noop"; }
  bool divides_on_fill(const Communicator& comm) const override { return divide_on_fill(comm); }
  std::shared_ptr<BucketFuture> run(Communicator&, GradBucket& bucket) override {
    return std::make_shared<Ready>(bucket.buffer);
  }
};

struct HookEntry {
  const char* name;
  std::function<std::shared_ptr<CommHook>()> make;
};

const std::vector<HookEntry>& hook_table() {
  static const std::vector<HookEntry> table = {
      {"allreduce", allreduce_hook},
      {"fp16", fp16_compress_hook},
      {"bf16", bf16_compress_hook},
      {"noop", noop_hook},
  };
  return table;
}

}  // namespace

std::shared_ptr<BucketFuture> make_bucket_future(WorkHandle work,
                                                 std::function<at::Tensor()> finish) {
  GRADWIRE_CHECK(work != nullptr);
  return std::make_shared<ThenFuture>(std::move(work), std::move(finish));
}

std::shared_ptr<CommHook> allreduce_hook() { return std::make_shared<AllreduceHook>(); }
std::shared_ptr<CommHook> fp16_compress_hook() {
  return std::make_shared<CompressHook>("fp16", at::kHalf);
}
std::shared_ptr<CommHook> bf16_compress_hook() {
  return std::make_shared<CompressHook>("bf16", at::kBFloat16);
}

std::shared_ptr<CommHook> noop_hook() { return std::make_shared<NoopHook>(); }

std::vector<std::string> comm_hook_names() {
  std::vector<std::string> names;
  for (const auto& entry : hook_table()) names.emplace_back(entry.name);
  return names;
}

std::shared_ptr<CommHook> make_comm_hook(const std::string& name) {
  for (const auto& entry : hook_table()) {
    if (name == entry.name) return entry.make();
  }
  std::string known;
  for (const auto& n : comm_hook_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("unknown comm hook '" + name + "'; known hooks: " + known);
}

}  // namespace gradwire::ddp
