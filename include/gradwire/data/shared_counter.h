// SharedCounter: named integer counters that all ranks of a job add to atomically. The dynamic
// partition of ShardedRecordReader claims chunks with it: each add() hands out a position in the
// epoch's chunk order exactly once, whichever rank asks first.
//
// Implementations: make_local_counter() (one process: ranks as threads, tests, a single rank)
// and connect_store_counter() in store_counter.h (the job's rendezvous store, across processes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace gradwire::data {

class SharedCounter {
 public:
  virtual ~SharedCounter() = default;
  // Adds `delta` to the counter `key` (a missing counter starts at 0) and returns the new value.
  // Atomic across every user of the same counter; thread safe. May block on the network; store
  // implementations throw TimeoutError / BackendError naming the key when the store fails.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
};

// Counters held in this process (a mutex and a map). Share the returned pointer between the
// readers that must see the same counters.
std::shared_ptr<SharedCounter> make_local_counter();

}  // namespace gradwire::data
