// Coalescing sparse gradient rows: duplicate ids summed, ids unique and ascending. Pure, thread
// safe, ATen ops only (unique with inverse, then index_add_).
#pragma once

#include <ATen/ATen.h>

namespace gradwire::ps {

// Sparse rows: ids (int64, 1-D, n) and values (float32, [n, dim]); row i of values belongs to
// ids[i].
struct SparseRows {
  at::Tensor ids;
  at::Tensor values;
};

// New tensors (never views of the inputs): ids unique and ascending, values of equal ids summed
// in the order they appear. InvalidArgument when ids is not int64 1-D, values not float32 2-D, or
// their lengths differ.
SparseRows coalesce(const at::Tensor& ids, const at::Tensor& values);

}  // namespace gradwire::ps
