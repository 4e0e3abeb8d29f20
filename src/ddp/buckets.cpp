#include "buckets.h"

#include <ATen/ATen.h>

#include <numeric>
#include <sstream>

#include "bucket_assignment.h"

namespace gradwire::ddp {

namespace {

// A contiguous tensor of `sizes` over buffer's storage from element `offset`. Unlike narrow/view
// it is not an autograd view, so it can serve as .grad: libtorch's Optimizer::zero_grad calls
// detach_() on every gradient, which autograd views refuse.
at::Tensor alias(const at::Tensor& buffer, int64_t offset, at::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * sizes[d + 1];
  }
  return at::empty({0}, buffer.options())
      .set_(buffer.storage(), buffer.storage_offset() + offset, sizes, strides);
}

}  // namespace

std::vector<size_t> reverse_order(size_t count) {
  std::vector<size_t> order(count);
  std::iota(order.rbegin(), order.rend(), size_t{0});
  return order;
}

BucketLayout make_layout(const std::vector<at::Tensor>& params, const std::vector<size_t>& order,
                         const std::vector<size_t>& caps, const BufferFactory& make_buffer) {
  std::vector<ParamShape> shapes;
  shapes.reserve(params.size());
  for (const auto& p : params) {
    std::ostringstream group;
    group << p.scalar_type() << '/' << p.device();
    shapes.push_back({static_cast<size_t>(p.numel()) * p.element_size(), group.str()});
  }
  BucketLayout layout;
  layout.slots.resize(params.size());
  auto assignment = assign_buckets(shapes, order, caps);
  for (size_t b = 0; b < assignment.size(); ++b) {
    Bucket bucket;
    bucket.members = assignment[b];
    int64_t total = 0;
    for (size_t i : bucket.members) total += params[i].numel();
    const at::Tensor& first = params[bucket.members.front()];
    bucket.grads.index = b;
    bucket.grads.is_last = b + 1 == assignment.size();
    bucket.grads.buffer = make_buffer(total, first);
    int64_t offset = 0;
    for (size_t k = 0; k < bucket.members.size(); ++k) {
      const at::Tensor& p = params[bucket.members[k]];
      bucket.grads.parameters.push_back(p);
      bucket.grads.gradients.push_back(alias(bucket.grads.buffer, offset, p.sizes()));
      offset += p.numel();
      layout.slots[bucket.members[k]] = {b, k};
    }
    bucket.pending = bucket.members.size();
    layout.buckets.push_back(std::move(bucket));
  }
  return layout;
}

void drain(BucketLayout& layout) {
  for (auto& bucket : layout.buckets) {
    if (!bucket.future) continue;
    try {
      bucket.future->wait();
    } catch (const std::exception&) {
    }
    bucket.future.reset();
  }
}

std::vector<BucketInfo> describe_layout(const BucketLayout& layout,
                                        const std::vector<std::string>& names) {
  std::vector<BucketInfo> infos;
  for (const auto& bucket : layout.buckets) {
    BucketInfo info;
    info.index = bucket.grads.index;
    const at::Tensor& buffer = bucket.grads.buffer;
    info.bytes = static_cast<size_t>(buffer.numel()) * buffer.element_size();
    std::ostringstream dtype;
    dtype << buffer.scalar_type();
    info.dtype = dtype.str();
    info.device = buffer.device().str();
    for (size_t i : bucket.members) info.parameters.push_back(names[i]);
    infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace gradwire::ddp
