// Every GRADWIRE_* environment variable gradwire reads or sets, declared once: its name, the kind
// of value, its default, who reads it (or sets it) and what it means. Code names a variable
// through its declaration (settings::kTimeout.name), never as a string of its own; the table in
// docs/configuration.md is generated from kAll (`gradwire-run --print-settings`) and a test keeps
// the two equal. An options struct's std::optional field that is unset takes the variable named
// in its comment, else the default here (the public resolve(..., EnvMap) functions say which).
#pragma once

#include <array>
#include <chrono>
#include <string>

namespace gradwire {
class EnvMap;
}

namespace gradwire::settings {

struct Setting {
  const char* name;
  const char* kind;           // "duration" (300s, 2m, 500ms), "integer", "text", "0 or 1", ...
  const char* default_value;  // as the reader takes it when the variable is unset
  const char* read_by;        // the layers or tools that read it (and the launcher setting it)
  const char* meaning;
};

// The one default of GRADWIRE_TIMEOUT.
inline constexpr std::chrono::milliseconds kDefaultTimeout{300000};

inline constexpr Setting kTimeout{
    "GRADWIRE_TIMEOUT", "duration", "300s",
    "comm (InitOptions::timeout), ps client (ClientOptions::step_timeout)",
    "How long a collective, and a parameter-server sync step, waits for the other ranks before it "
    "fails naming them"};
inline constexpr Setting kRendezvousTimeout{
    "GRADWIRE_RENDEZVOUS_TIMEOUT", "duration", "the larger of GRADWIRE_TIMEOUT and 300s",
    "comm (InitOptions::rendezvous_timeout), elastic",
    "How long a rendezvous waits for every rank (an elastic generation: for its minimum)"};
inline constexpr Setting kBackend{
    "GRADWIRE_BACKEND", "auto, gloo, shm, hierarchical or nccl", "auto", "comm (InitOptions::backend)",
    "The communicator's backend when the program names none"};
inline constexpr Setting kShmSlotBytes{
    "GRADWIRE_SHM_SLOT_BYTES", "integer (bytes, at least 4096)", "1048576", "comm (shm backend)",
    "The size of each rank's two data slots in a shared-memory segment"};
inline constexpr Setting kShmStreamingBytes{
    "GRADWIRE_SHM_STREAMING_BYTES", "integer (bytes)", "unset: no streaming stores",
    "comm (shm backend)",
    "Copies at least this large into shared memory use non-temporal (streaming) stores"};
inline constexpr Setting kBucketCapMb{
    "GRADWIRE_BUCKET_CAP_MB", "number (MiB)", "25", "ddp (DdpOptions::bucket_cap_mb)",
    "The cap of every gradient bucket but the first (every rank must agree)"};
inline constexpr Setting kFirstBucketMb{
    "GRADWIRE_FIRST_BUCKET_MB", "number (MiB)", "1", "ddp (DdpOptions::first_bucket_mb)",
    "The cap of the first gradient bucket to be reduced (every rank must agree)"};
inline constexpr Setting kHostId{
    "GRADWIRE_HOST_ID", "text", "<hostname>/<boot id>",
    "comm, ps client and server, elastic (host identity)",
    "This process's host identity: processes with the same one may share memory"};
inline constexpr Setting kPsAddrs{
    "GRADWIRE_PS_ADDRS", "HOST:PORT,HOST:PORT,...", "none (ConfigError)",
    "ps client (ClientOptions::servers); set by gradwire-run --servers",
    "The parameter servers, in sharding order"};
inline constexpr Setting kToken{
    "GRADWIRE_TOKEN", "text", "GRADWIRE_JOB_TOKEN",
    "ps client and server, rpc; set by gradwire-run --servers",
    "The job's shared secret every parameter-server call carries"};
inline constexpr Setting kJobToken{
    "GRADWIRE_JOB_TOKEN", "text", "a fresh random one per launch",
    "gradwire-run (LaunchOptions::job_token; sets it for its workers and servers), ps client and "
    "server",
    "The launch's token, when GRADWIRE_TOKEN is unset"};
inline constexpr Setting kTlsRoots{
    "GRADWIRE_TLS_ROOTS", "file (PEM)", "unset: plain text",
    "ps client (ClientOptions::tls_root_cert_file); set by gradwire-run --tls-cert",
    "Root certificates the client trusts: calls go over TLS"};
inline constexpr Setting kPsSharedMemory{
    "GRADWIRE_PS_SHARED_MEMORY", "0 or 1", "1", "ps client (ClientOptions::shared_memory)",
    "Whether trainers share memory with parameter servers on their host"};
inline constexpr Setting kElasticId{
    "GRADWIRE_ELASTIC_ID", "<node>.<slot>.<incarnation>", "unset: not an elastic worker",
    "elastic (RunOptions::worker_id), ps client (ClientOptions::elastic); set by gradwire-run "
    "--elastic",
    "The worker's id in an elastic job"};
inline constexpr Setting kElasticMin{
    "GRADWIRE_ELASTIC_MIN", "integer", "1", "elastic (RunOptions::min_workers); set by gradwire-run --elastic",
    "The fewest workers a generation trains with"};
inline constexpr Setting kElasticMax{
    "GRADWIRE_ELASTIC_MAX", "integer", "no limit", "elastic (RunOptions::max_workers); set by gradwire-run --elastic",
    "The most workers a generation takes"};
inline constexpr Setting kElasticInitial{
    "GRADWIRE_ELASTIC_INITIAL", "integer", "WORLD_SIZE, else GRADWIRE_ELASTIC_MIN",
    "elastic (RunOptions::initial_workers); set by gradwire-run --elastic",
    "The workers the first generation waits for"};
inline constexpr Setting kBoundCpus{
    "GRADWIRE_BOUND_CPUS", "CPU list (4,5,6,7)", "unset: not bound",
    "gradwire-bench (its ranks' threads); set by gradwire-run --bind-cores",
    "The CPUs the worker is bound to"};
inline constexpr Setting kMalloc{
    "GRADWIRE_MALLOC", "system", "unset: glibc's mmap and trim thresholds raised",
    "gradwire-run (LaunchOptions::tune_allocator, for its workers)",
    "system: the workers keep glibc's allocator defaults (docs/launcher.md, Allocator)"};
inline constexpr Setting kBenchMalloc{
    "GRADWIRE_BENCH_MALLOC", "system", "unset: tuned as gradwire-run tunes its workers",
    "gradwire-bench", "system: keep glibc's allocator defaults in the benchmark's processes"};
inline constexpr Setting kBenchLauncherCores{
    "GRADWIRE_BENCH_LAUNCHER_CORES", "integer", "unset: the hardware threads",
    "gradwire-bench (set for its own rank processes)",
    "Internal: the cores the benchmark's launcher saw, passed to its ranks"};
inline constexpr Setting kTimeline{
    "GRADWIRE_TIMELINE", "path (trace.json)", "unset: no timeline",
    "common (timeline::start_from_env, for ranks and servers); gradwire-run "
    "(LaunchOptions::timeline; sets it for its workers and servers)",
    "Each process writes its timeline to <path>.d/<process>.gwtl; gradwire-run merges them into "
    "<path> when the job ends, gradwire-trace merge joins them otherwise (docs/timeline.md)"};

inline constexpr Setting kTimelineAlternateMs{
    "GRADWIRE_TIMELINE_ALTERNATE_MS", "integer (ms)", "unset: the timeline records throughout",
    "common (timeline::start_from_env)",
    "With GRADWIRE_TIMELINE: record only in half of the windows of this many milliseconds of the "
    "job's clock (picked by a hash of their index), to measure the timeline's cost within one run "
    "(docs/timeline.md, The cost)"};

// Every declaration above, in the order of docs/configuration.md.
// clang-format off
inline constexpr std::array<const Setting*, 23> kAll = {
    &kTimeout,   &kRendezvousTimeout, &kBackend,    &kShmSlotBytes,  &kShmStreamingBytes,
    &kBucketCapMb, &kFirstBucketMb,
    &kHostId,    &kPsAddrs,           &kToken,      &kJobToken,      &kTlsRoots,
    &kPsSharedMemory, &kElasticId,    &kElasticMin, &kElasticMax,    &kElasticInitial,
    &kBoundCpus, &kMalloc,            &kBenchMalloc, &kBenchLauncherCores, &kTimeline,
    &kTimelineAlternateMs};
// clang-format on

// GRADWIRE_TIMEOUT from `env` (ConfigError naming it when malformed), else kDefaultTimeout.
std::chrono::milliseconds timeout(const EnvMap& env);

// The table of kAll as Markdown (docs/configuration.md's generated part).
std::string markdown_table();

}  // namespace gradwire::settings
