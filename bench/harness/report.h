// The JSON documents benchmarks write (--json), and the metadata describing where a run
// happened. Layout (docs/benchmarks.md has the full schema):
//   { "schema_version": 1, "benchmark": "<subcommand>", "metadata": {...}, ...case fields }
// Readers (gradwire-bench diff, report) check schema_version before anything else.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/stats.h"

namespace gradwire::bench {

// Bumped whenever a field changes meaning or disappears (adding fields keeps the version).
inline constexpr int kSchemaVersion = 2;

// Where and how a run happened.
struct RunMetadata {
  std::string gradwire_version;
  std::string torch_version;
  std::string torch_cuda;    // CUDA runtime of the libtorch (torch_cuda_version), empty: CPU only
  std::string backend;       // communicator backend, e.g. "gloo"
  int ranks = 1;             // world size
  int threads_per_rank = 1;  // at::get_num_threads() in each rank
  std::string cpu_model;     // "model name" from /proc/cpuinfo, "unknown" when absent
  int cores = 1;             // cores this process may run on
  std::string hostname;
  std::string date;                  // UTC, ISO 8601: "2026-11-22T03:55:40Z"
  double memcpy_gbps = 0;            // single-thread memcpy reference (GB/s), 0 when not measured
  std::string bound_cpus;            // CPUs rank 0 was bound to ("0"); empty: not bound
  std::vector<std::string> command;  // the command line, program name first
};

// Facts about this machine and the current time; fills cpu_model, cores, hostname, date.
// Never throws for missing files: unknown values read "unknown".
RunMetadata collect_machine_metadata();

// Cores this process may run on (its CPU affinity mask), at least 1.
int available_cores();

// The whole file at `path` (e.g. /proc/cpuinfo); empty when it cannot be read.
std::string read_text_file(const std::string& path);

// Pure: the first "model name" value of /proc/cpuinfo text, "unknown" when there is none.
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo_text);
// Pure: "YYYY-MM-DDTHH:MM:SSZ" for `time` in UTC.
std::string utc_timestamp(std::chrono::system_clock::time_point time);

nlohmann::json to_json(const RunMetadata& metadata);
// Every field of `summary`, each multiplied by `scale` except count (e.g. 1e6: seconds to us).
nlohmann::json to_json(const Summary& summary, double scale = 1.0);

// {"schema_version": kSchemaVersion, "benchmark": benchmark, "metadata": ...}; callers add
// their results next to these.
nlohmann::json make_document(const std::string& benchmark, const RunMetadata& metadata);

// Creates the missing directories of `path` and checks that a file can be written there
// (gradwire::prepare_output_file, gradwire/common/files.h). Benchmarks call
// it for every file they are asked to write before they measure, so a bad --json or --html fails
// at once instead of after the run. Throws ConfigError naming the path and the reason.
void prepare_output_file(const std::string& path);
// prepare_output_file of each non-empty path.
void prepare_output_files(const std::vector<std::string>& paths);

// Writes `text` to `path` atomically (gradwire::write_file_atomically: a reader never sees half
// a file); creates the missing directories first. Throws gradwire::Error naming the path.
void write_text_file(const std::string& path, const std::string& text);
// write_text_file of `document`, indented.
void write_json_file(const std::string& path, const nlohmann::json& document);

// Readers' field checks: `key` of `object`, else InvalidArgument "WHERE has no "KEY": it is not a
// BENCHMARK benchmark result"; require_list also throws unless it is an array ("WHERE: "KEY" is
// not a list").
const nlohmann::json& require_field(const nlohmann::json& object, const char* key,
                                    const std::string& where, const std::string& benchmark);
const nlohmann::json& require_list(const nlohmann::json& object, const char* key,
                                   const std::string& where, const std::string& benchmark);

// Reads a JSON file of any origin (PyTorch's benchmark.py writes no schema_version). Throws
// gradwire::Error naming the path when it cannot be read or parsed.
nlohmann::json read_json_document(const std::string& path);
// Reads a benchmark document. Throws gradwire::Error naming the path when it cannot be read or
// parsed, and gradwire::InvalidArgument when schema_version is missing or not kSchemaVersion.
nlohmann::json read_json_file(const std::string& path);

}  // namespace gradwire::bench
