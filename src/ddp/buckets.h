// The gradient buckets of one layout: flat buffers and the per-parameter views into them.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/common/timeline.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

struct Bucket {
  GradBucket grads;                      // buffer, parameters, views (handed to the comm hook)
  std::vector<size_t> members;           // parameter indices, in buffer order
  size_t pending = 0;                    // members not yet ready this iteration
  std::shared_ptr<BucketFuture> future;  // set once launched
  timeline::AsyncSpan span;              // launch to reduction, when a timeline runs
};

// Where a parameter's gradient lives.
struct Slot {
  size_t bucket = 0;
  size_t position = 0;  // index into the bucket's members / views
};

struct BucketLayout {
  std::vector<Bucket> buckets;
  std::vector<Slot> slots;  // indexed by parameter
};

// Makes a bucket's zero-filled flat buffer of `numel` elements of `like`'s dtype and device.
using BufferFactory = std::function<at::Tensor(int64_t numel, const at::Tensor& like)>;

// Builds buckets for `params` from `order` (parameter indices, expected ready order) and byte
// caps (see assign_buckets), with buffers from `make_buffer`, in bucket order.
BucketLayout make_layout(const std::vector<at::Tensor>& params, const std::vector<size_t>& order,
                         const std::vector<size_t>& caps, const BufferFactory& make_buffer);

// Reverse registration order: the initial guess of the gradient-ready order.
std::vector<size_t> reverse_order(size_t count);

// Waits for every launched bucket of `layout`, ignoring failures, and forgets the futures: used
// before reporting another error, so that no reduction still writes into a buffer afterwards.
void drain(BucketLayout& layout);

std::vector<BucketInfo> describe_layout(const BucketLayout& layout,
                                        const std::vector<std::string>& names);

}  // namespace gradwire::ddp
