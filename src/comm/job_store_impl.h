// The c10d store behind a JobStore (comm-internal: elastic builds worlds on it).
#pragma once

#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "gradwire/comm/job_store.h"

namespace gradwire {

struct JobStore::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  int port = 0;
  std::string where = "this process";  // "host:port" of a TCP store, for messages
  std::mutex mutex;  // TCPStore clients are not safe to share between threads in every libtorch
};

inline c10::intrusive_ptr<c10d::Store> c10d_store_of(const JobStore& store) {
  return store.impl().store;
}

}  // namespace gradwire
