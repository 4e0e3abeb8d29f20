// Binding each local worker to its own CPUs (LaunchOptions::bind_cores): the pure plan (the
// launcher's CPUs and the worker count -> each worker's CPUs), reading the launcher's own
// affinity mask, and the CPU set handed to sched_setaffinity in the child (launch-internal).
// See docs/launcher.md, "Binding workers to cores".
#pragma once

#include <sched.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gradwire::launch::detail {

// Which CPUs each local worker may run on.
struct CoreBindingPlan {
  // By local rank; each list ascending and never empty.
  std::vector<std::vector<int>> worker_cpus;
  // Fewer CPUs than workers: worker i got the CPU at index i mod cpus, so workers share cores.
  bool shared = false;
};

// Pure. Splits `allowed_cpus` (the CPUs the launcher may run on; any order, duplicates ignored)
// into `workers` disjoint contiguous blocks of the ascending list: worker i gets the CPUs at
// indices [i * block, (i + 1) * block) with block = cpus / workers. The cpus % workers CPUs left
// over after the last block are given to nobody, so every worker gets the same number of CPUs
// (and OMP_NUM_THREADS is the same everywhere), as DeepSpeed's --bind_cores_to_rank does. With
// fewer CPUs than workers, worker i gets the single CPU at index i mod cpus and `shared` is set.
// Preconditions: allowed_cpus is not empty, no CPU is negative, workers >= 1.
CoreBindingPlan plan_core_binding(std::vector<int> allowed_cpus, int workers);

// Pure: "0,1,5": the CPUs joined with commas, as GRADWIRE_BOUND_CPUS reads.
std::string cpu_list_text(const std::vector<int>& cpus);

// Pure: the line the launcher writes (once) when plan.shared: how many workers share how many
// CPUs. Ends with a newline.
std::string shared_cores_notice(const std::vector<int>& allowed_cpus, int workers);

// The CPUs this process may run on (sched_getaffinity of the calling thread), ascending. Throws
// gradwire::Error naming the failure when the mask cannot be read.
std::vector<int> allowed_cpus_of_this_process();

// A CPU set sized for its largest CPU (CPU_ALLOC), built before fork() so that the child only
// makes the sched_setaffinity system call. Empty (data() == nullptr) when built from no CPUs:
// the worker then keeps the launcher's mask. Movable, not copyable.
class CpuSet {
 public:
  CpuSet() = default;
  explicit CpuSet(const std::vector<int>& cpus);
  CpuSet(CpuSet&& other) noexcept;
  CpuSet& operator=(CpuSet&& other) noexcept;
  CpuSet(const CpuSet&) = delete;
  CpuSet& operator=(const CpuSet&) = delete;
  ~CpuSet();

  const cpu_set_t* data() const { return set_; }
  size_t size_bytes() const { return size_bytes_; }

 private:
  cpu_set_t* set_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace gradwire::launch::detail
