#include "harness/report.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "harness/command.h"

namespace gradwire::bench {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

std::string cpu_model_from_cpuinfo(const std::string& cpuinfo_text) {
  std::istringstream lines(cpuinfo_text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || trim_whitespace(line.substr(0, colon)) != "model name")
      continue;
    const std::string model = trim_whitespace(line.substr(colon + 1));
    if (!model.empty()) return model;
  }
  return "unknown";
}

std::string utc_timestamp(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

RunMetadata collect_machine_metadata() {
  RunMetadata metadata;
  metadata.cpu_model = cpu_model_from_cpuinfo(read_text_file("/proc/cpuinfo"));
  metadata.cores = available_cores();
  char host[256] = {};
  metadata.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  metadata.date = utc_timestamp(std::chrono::system_clock::now());
  return metadata;
}

nlohmann::json to_json(const RunMetadata& metadata) {
  return {{"gradwire_version", metadata.gradwire_version},
          {"torch_version", metadata.torch_version},
          {"torch_cuda", metadata.torch_cuda.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json(metadata.torch_cuda)},
          {"backend", metadata.backend},
          {"ranks", metadata.ranks},
          {"threads_per_rank", metadata.threads_per_rank},
          {"bound_cpus", metadata.bound_cpus},
          {"cpu_model", metadata.cpu_model},
          {"cores", metadata.cores},
          {"hostname", metadata.hostname},
          {"date", metadata.date},
          {"memcpy_gbps", metadata.memcpy_gbps},
          {"command", metadata.command}};
}

nlohmann::json to_json(const Summary& summary, double scale) {
  return {
      {"count", summary.count},     {"mean", summary.mean * scale}, {"min", summary.min * scale},
      {"max", summary.max * scale}, {"p50", summary.p50 * scale},   {"p75", summary.p75 * scale},
      {"p90", summary.p90 * scale}, {"p95", summary.p95 * scale},   {"p99", summary.p99 * scale}};
}

nlohmann::json make_document(const std::string& benchmark, const RunMetadata& metadata) {
  return {{"schema_version", kSchemaVersion},
          {"benchmark", benchmark},
          {"metadata", to_json(metadata)}};
}

void prepare_output_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    throw ConfigError("cannot write " + path + ": it is a directory; name a file");
  }
  try {
    gradwire::prepare_output_file(path, "results");
  } catch (const Error& error) {
    throw ConfigError("cannot write " + path + ": " + error.what() + "; choose another path");
  }
}

void prepare_output_files(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (!path.empty()) prepare_output_file(path);
  }
}

void write_text_file(const std::string& path, const std::string& text) {
  prepare_output_file(path);  // creates the directories; a no-op when they exist
  write_file_atomically(path, text, "results");
}

void write_json_file(const std::string& path, const nlohmann::json& document) {
  write_text_file(path, document.dump(2) + "\n");
}

const nlohmann::json& require_field(const nlohmann::json& object, const char* key,
                                    const std::string& where, const std::string& benchmark) {
  if (!object.is_object() || !object.contains(key)) {
    throw InvalidArgument(where + " has no \"" + key + "\": it is not a " + benchmark +
                          " benchmark result");
  }
  return object.at(key);
}

const nlohmann::json& require_list(const nlohmann::json& object, const char* key,
                                   const std::string& where, const std::string& benchmark) {
  const nlohmann::json& value = require_field(object, key, where, benchmark);
  if (!value.is_array()) throw InvalidArgument(where + ": \"" + key + "\" is not a list");
  return value;
}

nlohmann::json read_json_document(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("could not open benchmark results " + path + ": check the path");
  nlohmann::json document;
  try {
    in >> document;
  } catch (const nlohmann::json::exception& e) {
    throw Error("benchmark results " + path + " are not valid JSON (" + e.what() +
                "): was the run interrupted while writing?");
  }
  return document;
}

nlohmann::json read_json_file(const std::string& path) {
  nlohmann::json document = read_json_document(path);
  const auto version = document.find("schema_version");
  if (version == document.end() || !version->is_number_integer()) {
    throw InvalidArgument(path + " has no schema_version: it is not a gradwire-bench result");
  }
  if (version->get<int>() != kSchemaVersion) {
    throw InvalidArgument(path + " has schema_version " + std::to_string(version->get<int>()) +
                          " but this gradwire-bench reads version " +
                          std::to_string(kSchemaVersion) + ": use a matching gradwire-bench");
  }
  return document;
}

}  // namespace gradwire::bench
