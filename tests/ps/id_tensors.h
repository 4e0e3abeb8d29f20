// Ids as the int64 tensor that the tables' calls take; shared by the core, server and client tests.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace gradwire::ps::testing {

inline at::Tensor ids_tensor(const std::vector<int64_t>& ids) { return at::tensor(ids, at::kLong); }

}  // namespace gradwire::ps::testing
