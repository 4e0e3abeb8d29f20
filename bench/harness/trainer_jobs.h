// How a case's conductor runs its own trainer processes (hybrid, ps): T copies of this program
// marked as workers (kWorkerFlag) plus the case's hidden flags, after S parameter servers
// (gradwire-ps-server) when asked, through gradwire::launch::run_workers; trainer 0 leaves its
// results as JSON in a file the conductor names, reads and removes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::bench {

struct TrainerJob {
  // The whole command line, program first: each trainer runs it as /proc/self/exe.
  std::vector<std::string> argv;
  // The case's hidden flags for this job (after kWorkerFlag); the job adds `result_flag` FILE.
  std::vector<std::string> flags;
  // The hidden flag naming the file trainer 0 writes, e.g. "--hybrid-result-file".
  std::string result_flag;
  // Names the result file and the messages: "hybrid", "ps-ddp".
  std::string name;
  int trainers = 1;
  // Intra-op threads of every trainer (and OMP_NUM_THREADS).
  int threads = 1;
  // Parameter servers started first (0: none); each runs gradwire-ps-server (next to this
  // program, else on PATH) with `server_arguments`.
  int servers = 0;
  // Processes hosting them (LaunchOptions::server_processes; 0: the launcher's rule).
  int server_processes = 0;
  std::vector<std::string> server_arguments;
  // Non-empty: the job's merged timeline (LaunchOptions::timeline): every trainer and server
  // records into "<timeline>.d/", which the launcher merges into this file when the job ends.
  std::string timeline;
};

// Runs `job` for repeat `repeat` (which names its result file) and returns the document trainer 0
// wrote. Blocks until every process exited. Throws gradwire::Error with the launcher's summary
// when a process failed, or when trainer 0 left no results.
nlohmann::json run_trainer_job(const TrainerJob& job, int repeat);

// Runs a PyTorch reference that starts and supervises its own processes: `command` (interpreter
// and script first) plus "--json PATH", with OMP_NUM_THREADS=1 and its output on our stderr (it is
// progress; the tables are ours); `name` names its file and messages ("hybrid"). Returns the
// document it wrote. Blocks for the whole run. Throws gradwire::Error naming the exit status when
// it fails, and read_json_file's errors.
nlohmann::json run_reference_command(std::vector<std::string> command, const std::string& name);

}  // namespace gradwire::bench
