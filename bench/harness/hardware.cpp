#include "harness/hardware.h"

#include <fstream>
#include <sstream>

#include "harness/command.h"
#include "harness/report.h"

namespace gradwire::bench {

HardwareInfo describe_hardware() {
  HardwareInfo hardware;
  const CommandOutput topology = run_command({"nvidia-smi", "topo", "-m"});
  if (topology.succeeded()) hardware.gpu_topology = topology.output;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::ostringstream text;
  text << cpuinfo.rdbuf();
  hardware.cpu_model = cpu_model_from_cpuinfo(text.str());
  hardware.cores = available_cores();
  return hardware;
}

nlohmann::json to_json(const HardwareInfo& hardware) {
  return {{"cpu_model", hardware.cpu_model},
          {"cores", hardware.cores},
          {"gpu_topology", hardware.gpu_topology.empty() ? nlohmann::json(nullptr)
                                                         : nlohmann::json(hardware.gpu_topology)}};
}

}  // namespace gradwire::bench
