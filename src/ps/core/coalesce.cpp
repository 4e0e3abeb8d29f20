// Coalescing sparse rows (coalesce.h).
#include "ps/core/coalesce.h"

#include <string>
#include <tuple>

#include "gradwire/common/error.h"

namespace gradwire::ps {

SparseRows coalesce(const at::Tensor& ids, const at::Tensor& values) {
  if (!ids.defined() || ids.scalar_type() != at::kLong || ids.dim() != 1) {
    throw InvalidArgument("gradwire: coalesce needs ids as an int64 1-D tensor");
  }
  if (!values.defined() || values.scalar_type() != at::kFloat || values.dim() != 2 ||
      values.size(0) != ids.size(0)) {
    throw InvalidArgument("gradwire: coalesce needs values as float32 [" +
                          std::to_string(ids.size(0)) + ", dim] for " +
                          std::to_string(ids.size(0)) + " ids");
  }
  at::Tensor unique_ids;
  at::Tensor inverse;
  std::tie(unique_ids, inverse) = at::_unique(ids, /*sorted=*/true, /*return_inverse=*/true);
  at::Tensor summed = at::zeros({unique_ids.size(0), values.size(1)}, values.options());
  summed.index_add_(0, inverse.reshape({-1}), values);
  return SparseRows{unique_ids.contiguous(), summed};
}

}  // namespace gradwire::ps
