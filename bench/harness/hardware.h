// What the machine a benchmark ran on looks like, for report headers: the GPU topology printed
// by `nvidia-smi topo -m` when that program works (as PyTorch's DDP benchmark prints it), and the
// CPU model and cores otherwise.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace gradwire::bench {

struct HardwareInfo {
  std::string gpu_topology;  // `nvidia-smi topo -m` output; empty when unavailable
  std::string cpu_model;     // "model name" from /proc/cpuinfo, "unknown" when absent
  int cores = 1;             // cores this process may run on
  // The BLAS library libtorch resolved (libblas.so.3 through update-alternatives on Debian), as
  // blas_from_maps names it; "none loaded" when no BLAS is mapped.
  std::string blas = "none loaded";
};

// Pure: the BLAS library among the mappings of /proc/self/maps, "NAME (PATH)": "OpenBLAS
// (OpenMP)", "OpenBLAS (pthreads)", "reference BLAS (netlib)", or the file's own name.
std::string blas_from_maps(const std::string& maps_text);

// Runs `nvidia-smi topo -m` (when present) and reads /proc/cpuinfo. Blocks for as long as
// nvidia-smi takes (well under a second). Never throws.
HardwareInfo describe_hardware();

// {"cpu_model": ..., "cores": ..., "blas": ..., "gpu_topology": text or null}.
nlohmann::json to_json(const HardwareInfo& hardware);

// The opening of a training benchmark's header (ddp, reducers, hybrid): "gradwire distributed
// benchmark suite: TITLE" between rules of `rule_width` dashes, a blank line, and the versions.
void print_suite_title(std::ostream& out, const std::string& title, std::size_t rule_width,
                       const std::string& gradwire_version, const std::string& torch_version);

// The hardware part of a report header: `nvidia-smi topo -m` when known, else the CPU model and
// cores (and "N threads per rank" unless threads_per_rank is 0); then the BLAS line and a rule.
void print_hardware_block(std::ostream& out, const HardwareInfo& hardware, int threads_per_rank);

}  // namespace gradwire::bench
