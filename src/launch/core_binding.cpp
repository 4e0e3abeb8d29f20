#include "core_binding.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {
namespace {

// sched_getaffinity needs a set at least as large as the kernel's CPU mask; start with the
// C library's 1024 CPUs and double while the kernel says it is too small.
constexpr int kFirstMaskCpus = CPU_SETSIZE;
constexpr int kLargestMaskCpus = 1 << 20;

}  // namespace

CoreBindingPlan plan_core_binding(std::vector<int> allowed_cpus, int workers) {
  GRADWIRE_CHECK(!allowed_cpus.empty());
  GRADWIRE_CHECK_GE(workers, 1);
  std::sort(allowed_cpus.begin(), allowed_cpus.end());
  allowed_cpus.erase(std::unique(allowed_cpus.begin(), allowed_cpus.end()), allowed_cpus.end());
  GRADWIRE_CHECK_GE(allowed_cpus.front(), 0);

  const size_t cpus = allowed_cpus.size();
  const size_t worker_count = static_cast<size_t>(workers);
  CoreBindingPlan plan;
  plan.shared = cpus < worker_count;
  plan.worker_cpus.reserve(worker_count);
  const size_t block = std::max<size_t>(1, cpus / worker_count);
  for (size_t worker = 0; worker < worker_count; ++worker) {
    if (plan.shared) {
      plan.worker_cpus.push_back({allowed_cpus[worker % cpus]});
      continue;
    }
    const auto first = allowed_cpus.begin() + static_cast<std::ptrdiff_t>(worker * block);
    plan.worker_cpus.emplace_back(first, first + static_cast<std::ptrdiff_t>(block));
  }
  return plan;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (int cpu : cpus) {
    if (!text.empty()) text += ',';
    text += std::to_string(cpu);
  }
  return text;
}

std::string shared_cores_notice(const std::vector<int>& allowed_cpus, int workers) {
  const std::string cpus = std::to_string(allowed_cpus.size());
  return "gradwire-run: binding " + std::to_string(workers) + " workers to cores, but this " +
         "launcher may run on only " + cpus + (allowed_cpus.size() == 1 ? " CPU" : " CPUs") + " (" +
         cpu_list_text(allowed_cpus) + "): each worker gets one of them in turn (local " +
         "rank i the (i mod " + cpus + ")-th), so workers share cores\n";
}

std::vector<int> allowed_cpus_of_this_process() {
  for (int mask_cpus = kFirstMaskCpus; mask_cpus <= kLargestMaskCpus; mask_cpus *= 2) {
    CpuSet probe(std::vector<int>{mask_cpus - 1});  // a set of mask_cpus bits (or more)
    cpu_set_t* set = const_cast<cpu_set_t*>(probe.data());
    if (::sched_getaffinity(0, probe.size_bytes(), set) != 0) {
      if (errno == EINVAL) continue;  // the kernel's mask is larger than ours
      throw Error(std::string("gradwire-run: cannot read this process's CPU affinity "
                              "(sched_getaffinity): ") +
                  std::strerror(errno));
    }
    std::vector<int> cpus;
    const int bits = static_cast<int>(probe.size_bytes() * 8);
    for (int cpu = 0; cpu < bits; ++cpu) {
      if (CPU_ISSET_S(cpu, probe.size_bytes(), set)) cpus.push_back(cpu);
    }
    return cpus;
  }
  throw Error(
      "gradwire-run: cannot read this process's CPU affinity: the kernel's CPU mask is "
      "larger than " +
      std::to_string(kLargestMaskCpus) + " CPUs");
}

CpuSet::CpuSet(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  const int largest = *std::max_element(cpus.begin(), cpus.end());
  GRADWIRE_CHECK_GE(largest, 0);
  set_ = CPU_ALLOC(largest + 1);
  if (set_ == nullptr) throw Error("gradwire-run: out of memory allocating a CPU set");
  size_bytes_ = CPU_ALLOC_SIZE(largest + 1);
  CPU_ZERO_S(size_bytes_, set_);
  for (int cpu : cpus) {
    GRADWIRE_CHECK_GE(cpu, 0);
    CPU_SET_S(cpu, size_bytes_, set_);
  }
}

CpuSet::CpuSet(CpuSet&& other) noexcept
    : set_(std::exchange(other.set_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

CpuSet& CpuSet::operator=(CpuSet&& other) noexcept {
  if (this != &other) {
    if (set_ != nullptr) CPU_FREE(set_);
    set_ = std::exchange(other.set_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

CpuSet::~CpuSet() {
  if (set_ != nullptr) CPU_FREE(set_);
}

}  // namespace gradwire::launch::detail
