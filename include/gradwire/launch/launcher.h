// Starting and supervising the local worker processes of a distributed job (gradwire-run's
// engine; also used by gradwire-bench and the tests to start their own ranks).
//
// Each worker gets the torchrun-compatible environment documented in docs/launcher.md
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
// OMP_NUM_THREADS, GRADWIRE_JOB_TOKEN ...). When any worker exits non-zero or is killed by a
// signal, the others get SIGTERM, then SIGKILL after `grace_period`. No worker outlives the call.
//
// With `servers` > 0 the launcher first starts that many parameter servers (gradwire-ps-server;
// several in one process when `server_processes` or a host with few cores says so), waits until
// each accepts TCP connections, then starts the workers with GRADWIRE_PS_ADDRS and the job
// token, and stops the servers once the workers are done. Workers and servers are supervised
// together: a server process that exits while the workers run fails the launch.
//
// With `max_restarts` K > 0, a failed worker makes the launcher stop the other workers and start
// the whole group again, up to K times (torchrun's --max-restarts): a new rendezvous (a new free
// MASTER_PORT when the port was picked, the same one when given), the same job token and run id,
// TORCHELASTIC_RESTART_COUNT = the attempt's index. A server that exits while the workers run
// uses the same budget: the workers are stopped, that server's process is started again (all
// its servers, on the same addresses) and waited for, then the group is started again. The other
// server processes keep running. A
// signal received by the launcher, or a server that exits while the workers are being stopped
// (or once the budget is spent), never restarts anything.
//
// Thread safety: run_workers() may be called from any thread, but only one call per process at a
// time installs signal forwarding (forward_signals). See docs/launcher.md.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"

namespace gradwire::launch {

struct WorkerExit;

struct LaunchOptions {
  // Workers started on this node.
  int nproc_per_node = 1;
  // Nodes in the job and this node's index; global rank = node_rank * nproc_per_node + local.
  int nnodes = 1;
  int node_rank = 0;
  // Rendezvous address/port written to MASTER_ADDR/MASTER_PORT. Port 0 picks a free port
  // (only allowed when nnodes == 1: other nodes could not know it).
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // The program and its arguments; any executable (looked up on PATH), including scripts.
  std::vector<std::string> command;
  // Prefix each output line of a worker with "[rank N] " (stdout and stderr kept apart).
  bool prefix_output = true;
  // When non-empty, also write each worker's output to LOG_DIR/rank_N.log (created if needed).
  std::string log_dir;
  // Time between SIGTERM and SIGKILL when stopping workers.
  std::chrono::milliseconds grace_period{5000};
  // Forward SIGINT/SIGTERM/SIGHUP received by this process to every worker, then stop them
  // (SIGKILL after grace_period; a second signal kills at once). Signals this process ignores
  // when the call starts (nohup, background jobs) stay ignored. Previous handlers are restored on
  // return. While one call forwards signals, another concurrent call asking for it throws.
  bool forward_signals = true;
  // Extra variables for every worker (override the computed ones).
  std::map<std::string, std::string> extra_env;
  // The token every worker and server of the launch shares (their GRADWIRE_JOB_TOKEN; with servers
  // also GRADWIRE_TOKEN). nullopt: extra_env's GRADWIRE_JOB_TOKEN, else this process's, else a
  // fresh random one per launch. Empty values count as unset.
  std::optional<std::string> job_token;
  // Raise glibc's mmap and trim thresholds in the workers (docs/launcher.md, "Allocator"), unless
  // their environment chooses an allocator itself (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_
  // or LD_PRELOAD set). nullopt: false when GRADWIRE_MALLOC=system, else true.
  std::optional<bool> tune_allocator;
  // Threads per worker written to OMP_NUM_THREADS when the caller's environment does not set it;
  // nullopt: max(1, hardware cores / nproc_per_node), or with bind_cores the worker's CPU count.
  std::optional<int> threads_per_worker;
  // The job's merged timeline (docs/timeline.md): every worker and server gets
  // GRADWIRE_TIMELINE=<this, absolute>, writing its file into <this>.d/; when the job ends
  // (whatever its outcome) the launcher merges <this>.d/*.json into <this>. Unset:
  // GRADWIRE_TIMELINE of the launcher's environment, else none (launch::resolve).
  std::optional<std::string> timeline;
  // Bind each local worker to its own CPUs (mpirun's --bind-to core, DeepSpeed's
  // --bind_cores_to_rank; torchrun does not). The CPUs this process may run on (its own
  // sched_getaffinity mask, ascending) are cut into nproc_per_node disjoint contiguous blocks of
  // max(1, cpus / nproc_per_node): local rank i gets block i; the cpus % nproc_per_node CPUs left
  // after the last block stay unused. With fewer CPUs than workers, local rank i gets the
  // (i mod cpus)-th CPU and the launcher says once on stderr_fd that workers share cores. The
  // worker's affinity is set between fork and exec; it gets GRADWIRE_BOUND_CPUS (its CPUs,
  // comma-separated). Parameter servers are not bound. False: workers keep this process's mask.
  bool bind_cores = false;
  // File descriptors that receive worker output (tests capture it); default: our stdout/stderr.
  // Each line is written whole.
  int stdout_fd = 1;
  int stderr_fd = 2;

  // Parameter servers started on this node before the workers (only with nnodes == 1:
  // multi-node jobs start their servers themselves and pass GRADWIRE_PS_ADDRS to every node).
  // Server i listens on "HOST:PORT_i" (a port free at start). Each server process runs
  // `server_command` plus one "--listen HOST:PORT" per server it hosts (see server_processes),
  // prints its output prefixed "[server i] " (several: "[servers i-j] ") and to
  // LOG_DIR/server_i.log (servers_i-j.log), and gets the launcher's environment, extra_env, and
  // GRADWIRE_TOKEN = GRADWIRE_JOB_TOKEN = the job token.
  int servers = 0;
  // How many processes host the `servers` servers: 0 (automatic) or 1..servers. Automatic: one
  // process per server when nproc_per_node + servers <= the CPUs this process may use (its
  // sched_getaffinity mask), else max(1, min(servers, cpus - nproc_per_node)), so that fewer
  // processes compete with the workers for the cores. Process p hosts servers
  // [p * S / P, (p + 1) * S / P): contiguous, as even as possible. The server program must accept
  // --listen several times when a process hosts several servers (gradwire-ps-server does).
  int server_processes = 0;
  // The server program and its arguments (before --listen). Empty, or an empty program name
  // (arguments only): gradwire-ps-server from the directory of the running executable when it
  // is there, else from PATH.
  std::vector<std::string> server_command;
  // The address servers listen on and workers connect to (GRADWIRE_PS_ADDRS).
  std::string server_host = "127.0.0.1";
  // How long each server may take to accept connections before the launch fails.
  std::chrono::milliseconds server_ready_timeout{30000};
  // TLS for the servers: both or neither, only with servers, readable files. Every server gets
  // "--tls-cert CERT --tls-key KEY" after server_command's arguments (before --listen); every
  // worker gets GRADWIRE_TLS_ROOTS = tls_cert_file (the certificate its client trusts as root: a
  // self-signed one works). Paths are passed as given. Empty: the servers speak plain text (and
  // workers of a launch with servers get no GRADWIRE_TLS_ROOTS, not even an inherited one).
  std::string tls_cert_file;
  std::string tls_key_file;

  // How often the worker group is started again after a worker fails or a server exits while
  // the workers run (torchrun's --max-restarts; such a server is started again first, on the
  // same address). 0: never; the first failure ends the launch.
  int max_restarts = 0;

  // Elastic mode (docs/elastic.md; gradwire-run --elastic or --nnodes MIN:MAX): a worker that
  // fails does not stop the others, which go on without it (gradwire::elastic::run); while
  // max_restarts allows, a replacement starts in its place and joins them at their next commit.
  // Workers get GRADWIRE_ELASTIC_ID ("<node_rank>.<local rank>.<incarnation>"),
  // GRADWIRE_ELASTIC_MIN, _MAX and _INITIAL (the workers the first generation waits for:
  // nnodes * nproc_per_node). MASTER_ADDR:MASTER_PORT must name a job store someone hosts (the
  // tool hosts it before calling run_workers). The launch succeeds when some worker exits 0.
  bool elastic = false;
  // The fewest and most workers of the whole job in elastic mode; max 0: no limit.
  int min_workers = 1;
  int max_workers = 0;
  // Elastic mode: a shell command (run with /bin/sh -c, as horovodrun's --host-discovery-script)
  // printing "HOST:SLOTS" lines, run every discovery_interval (it must finish within 10 s). This
  // node runs as many workers as the slots of its names (its hostname, localhost, 127.0.0.1):
  // new workers start in free places (and join at the next commit), and when the slots shrink the
  // workers of the highest places get SIGTERM (the others go on without them). Empty: the
  // workers are nproc_per_node. Not with bind_cores.
  std::string host_discovery;
  std::chrono::milliseconds discovery_interval{1000};
  // Elastic mode: called for every worker that failed, with its id (GRADWIRE_ELASTIC_ID), before
  // any replacement starts (the tool marks it in the job store). May be empty.
  std::function<void(const WorkerExit&, const std::string& worker_id)> on_worker_failed;
};

// How one worker ended.
struct WorkerExit {
  int rank = -1;
  int local_rank = -1;
  int pid = -1;
  int exit_code = 0;                 // valid when signal == 0
  int signal = 0;                    // the signal that killed it, 0 if it exited
  bool stopped_by_launcher = false;  // killed because another worker failed or we were signalled
  bool failed() const { return signal != 0 || exit_code != 0; }
};

// How one parameter-server process (LaunchOptions::servers, server_processes) ended. With one
// server per process (the default when the cores suffice) it is that server's.
struct ServerExit {
  // The process's index, in server order; with one server per process, the server's index.
  int index = -1;
  // HOST:PORT of its first server (with one server per process, the one it listened on).
  std::string address;
  // Every server it hosted (ascending, contiguous) and their HOST:PORT, in the same order.
  std::vector<int> server_indices;
  std::vector<std::string> addresses;
  int pid = -1;
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, 0 if it exited
  // Stopped by the launcher: after the workers finished (the normal end; then any exit status
  // is fine), or because something else failed or a signal arrived. A server that exits before
  // that, whatever its status, failed.
  bool stopped_by_launcher = false;
  bool failed() const { return !stopped_by_launcher; }
};

// A worker group that failed and was started again (LaunchOptions::max_restarts), because a
// worker failed or a server exited while the workers ran.
struct RestartedAttempt {
  int master_port = 0;              // the attempt's rendezvous port
  std::vector<WorkerExit> workers;  // ordered by local rank
  // The worker whose failure ended the attempt; -1 when a server's exit did.
  int first_failed_local_rank = -1;
  // The server process whose exit ended the attempt (before the restart; a new one was started
  // hosting the same servers on the same addresses); nullopt when a worker's failure did.
  std::optional<ServerExit> failed_server;
  // Other server processes that died before the next group started (in the same moment, or
  // while the workers were being stopped), by index; each was started again too.
  std::vector<ServerExit> also_failed_servers;
};

struct LaunchResult {
  // Elastic mode: every worker that failed and was replaced, or that the others went on
  // without, in order of failure (also listed in `workers`).
  std::vector<WorkerExit> tolerated_failures;
  bool elastic = false;
  // The attempts before the last one, oldest first (empty without restarts). Everything below
  // describes the last attempt, which decides exit_code().
  std::vector<RestartedAttempt> restarted_attempts;
  std::vector<WorkerExit> workers;  // ordered by local rank
  std::vector<ServerExit> servers;  // one per server process, by index; empty without servers
  int master_port = 0;              // the port actually used
  // Local rank of the worker whose failure made the launcher stop the others; -1 if none failed
  // on its own.
  int first_failed_local_rank = -1;
  // Index (in `servers`) of the server process whose exit made the launcher stop the job; -1 if
  // none.
  int first_failed_server = -1;
  // The signal (SIGINT/SIGTERM/SIGHUP) this process received and forwarded; 0 if none.
  int received_signal = 0;
  // 0 when every worker exited 0 (and no server failed); otherwise the first failed worker's
  // exit code, or 128+signal (its signal, or the signal the launcher received when no worker
  // failed on its own); a failed server gives its exit code, 128+signal, or 1 if it exited 0.
  int exit_code() const;
  // Human-readable lines naming each failed rank or server with its exit code or signal, and
  // which were stopped by the launcher; with restarts, first a line per restarted attempt and
  // one for the last attempt. Empty when all succeeded on the first attempt.
  std::string summary() const;

 private:
  std::string last_attempt_summary() const;
};

// A worker's program could not be executed (not found on PATH, not executable...). what() reads
// "could not execute PROGRAM: reason"; error_number() is the errno of the failed exec.
class ProgramNotExecutable : public Error {
 public:
  ProgramNotExecutable(const std::string& message, int error_number)
      : Error(message), error_number_(error_number) {}
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

// Starts the servers (if any) and the workers and blocks until all have exited. Throws
// gradwire::InvalidArgument for bad options (empty command, nproc < 1, node_rank out of range,
// port 0 with nnodes > 1, servers with nnodes > 1, server_processes outside 0..servers, TLS
// files given alone, without servers or unreadable), ProgramNotExecutable when the program (or
// the server program) cannot be executed, gradwire::PeerLostError when a server process exits
// before its servers accept connections, gradwire::TimeoutError when they do not within
// server_ready_timeout (both name the process, its servers and their addresses; the workers are
// then never started), and
// gradwire::Error when a process cannot be started for another reason (log file, pipes, SIGCHLD
// ignored by this process...). Processes already started when an exception is thrown are
// stopped and reaped first. With a timeline (LaunchOptions::timeline, resolved), the files the
// launch's processes wrote are merged when it ends, also when it throws, and one line on
// stderr_fd says so ("gradwire-run: wrote timeline PATH: N processes, M events"); a merge that
// fails is a warning there, never an exception or another exit code. A signal received while
// the servers start ends the launch normally (LaunchResult::received_signal, no workers). With
// max_restarts, each restart is announced on stderr_fd ("gradwire-run: ... restarting the
// workers (restart 1 of K)"); a restarted server that exits or times out before accepting
// connections throws as at the start.
//
// Workers run in their own process groups with stdin from /dev/null; when one exits, whatever
// is left in its group is killed. They receive SIGKILL if the thread that called run_workers
// dies (PR_SET_PDEATHSIG), so nothing outlives a launcher that is itself killed. SIGPIPE is
// blocked in the calling thread for the duration of the call (writes to a closed stdout_fd are
// dropped instead of killing the process).
LaunchResult run_workers(const LaunchOptions& options);

// Pure: `options` with the fields that read a variable taken from `env` (the launcher's own
// environment), else their defaults, as run_workers uses them: job_token (still nullopt when
// neither extra_env nor env has one: run_workers then makes a fresh one), tune_allocator and
// timeline (extra_env's GRADWIRE_TIMELINE, else env's; nullopt when neither: no timeline; empty
// values count as unset; run_workers makes the path absolute).
// threads_per_worker stays as given: its default depends on the machine (OMP_NUM_THREADS of the
// environment, else the hardware threads per worker).
LaunchOptions resolve(const LaunchOptions& options, const EnvMap& env);

// A TCP port on `address` that was free when asked (bind to port 0, read it, close).
int pick_free_port(const std::string& address = "127.0.0.1");

// --nproc-per-node as torchrun takes it: a number; "gpu", one worker per visible GPU (InvalidArgument
// when none is visible); "cpu", one per CPU (`cpus`); "auto", gpu when a GPU is visible, else cpu.
// InvalidArgument for anything else. Pure.
int resolve_nproc_per_node(const std::string& text, const EnvMap& env, int driver_gpus, int cpus);

// The GPUs a worker will see: the driver's `driver_gpus`, or as many as CUDA_VISIBLE_DEVICES names
// (a comma-separated list up to its first invalid entry, as the CUDA runtime reads it). Pure.
int visible_gpu_count(const EnvMap& env, int driver_gpus);

// The GPUs the NVIDIA driver lists (/proc/driver/nvidia/gpus); 0 without the driver.
int driver_gpu_count();

}  // namespace gradwire::launch
