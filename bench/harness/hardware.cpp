#include "harness/hardware.h"

#include <sstream>

#include "harness/command.h"
#include "harness/report.h"

namespace gradwire::bench {

HardwareInfo describe_hardware() {
  HardwareInfo hardware;
  const CommandOutput topology = run_command({"nvidia-smi", "topo", "-m"});
  if (topology.succeeded()) hardware.gpu_topology = topology.output;
  hardware.cpu_model = cpu_model_from_cpuinfo(read_text_file("/proc/cpuinfo"));
  hardware.cores = available_cores();
  hardware.blas = blas_from_maps(read_text_file("/proc/self/maps"));
  return hardware;
}

std::string blas_from_maps(const std::string& maps_text) {
  std::istringstream lines(maps_text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string file = path.substr(path.rfind('/') + 1);
    if (file.rfind("libblas.so", 0) != 0 && file.rfind("libopenblas", 0) != 0) continue;
    std::string name = file;
    if (path.find("openblas-openmp") != std::string::npos) {
      name = "OpenBLAS (OpenMP)";
    } else if (path.find("openblas-pthread") != std::string::npos) {
      name = "OpenBLAS (pthreads)";
    } else if (path.find("openblas") != std::string::npos) {
      name = "OpenBLAS";
    } else if (path.find("/blas/") != std::string::npos) {
      name = "reference BLAS (netlib)";
    }
    return name + " (" + path + ")";
  }
  return "none loaded";
}

nlohmann::json to_json(const HardwareInfo& hardware) {
  return {{"cpu_model", hardware.cpu_model},
          {"cores", hardware.cores},
          {"blas", hardware.blas},
          {"gpu_topology", hardware.gpu_topology.empty() ? nlohmann::json(nullptr)
                                                         : nlohmann::json(hardware.gpu_topology)}};
}

void print_suite_title(std::ostream& out, const std::string& title, std::size_t rule_width,
                       const std::string& gradwire_version, const std::string& torch_version) {
  const std::string rule(rule_width, '-');
  out << rule << "\ngradwire distributed benchmark suite: " << title << "\n"
      << rule << "\n\n* gradwire version: " << gradwire_version
      << "\n* libtorch version: " << torch_version << "\n";
}

void print_hardware_block(std::ostream& out, const HardwareInfo& hardware, int threads_per_rank) {
  if (!hardware.gpu_topology.empty()) {
    out << "--- nvidia-smi topo -m ---\n\n" << hardware.gpu_topology;
    if (hardware.gpu_topology.back() != '\n') out << "\n";
  } else {
    out << "--- CPU ---\n\n" << hardware.cpu_model << ", " << hardware.cores << " cores";
    if (threads_per_rank > 0) {
      out << ", " << threads_per_rank << (threads_per_rank == 1 ? " thread" : " threads")
          << " per rank";
    }
    out << "\n";
  }
  out << "BLAS: " << hardware.blas << "\n";
  out << "--------------------------\n" << std::flush;
}

}  // namespace gradwire::bench
