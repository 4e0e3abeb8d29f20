// Building the world: reading who this process is (rank, world size, local rank, master address)
// from the launcher's environment, rendezvous through a c10d TCPStore, and creating the world
// Communicator.
//
// Which launcher's variables are read is decided by detect_env_flavour, and the rank and world
// size are read by read_launcher_rank_variables (gradwire/common/launcher_env.h, the detector the
// parameter-server client uses too); explicit InitOptions fields override any of them:
//   torchrun / gradwire-run  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
//                            MASTER_PORT
//   Open MPI (mpirun)        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE + MASTER_ADDR,
//                            MASTER_PORT
//   Slurm (srun step)        SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
//                            SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE at
//                            SLURM_NODEID; MASTER_ADDR defaults to the first host of
//                            SLURM_JOB_NODELIST, MASTER_PORT to 20000 + SLURM_JOB_ID % 20000.
//   none of them             a world of one (rank 0 of 1), as Horovod does; init() says so once
//                            per process on stderr. Setting any of InitOptions::rank, world_size,
//                            local_rank, local_world_size asks for a real job instead.
// GRADWIRE_TIMEOUT ("300", "30s", "500ms") sets the collectives' default timeout,
// GRADWIRE_RENDEZVOUS_TIMEOUT the rendezvous'; GRADWIRE_BACKEND the backend when
// InitOptions::backend is unset (resolve(InitOptions, EnvMap); docs/configuration.md).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gradwire/comm/communicator.h"
#include "gradwire/common/env.h"
#include "gradwire/common/launcher_env.h"

namespace gradwire {

// Who this process is in the job.
struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;
  int master_port = 0;  // 0 for a world of one, which needs no rendezvous port
  // Set when torchrun's agent hosts the store at MASTER_ADDR:MASTER_PORT itself
  // (TORCHELASTIC_USE_AGENT_STORE=True, its static rendezvous): every rank connects as a client and
  // keys go under this prefix, "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>", as PyTorch's env://
  // does, since the agent's store outlives a restart. Empty: rank 0 hosts the store.
  std::string agent_store_prefix;
  // Where the values came from; kNone: no launcher, a world of one.
  EnvFlavour flavour = EnvFlavour::kExplicit;
};

struct InitOptions {
  // Explicit values override the environment; unset ones come from it.
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  std::optional<int> local_world_size;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  // "gloo", "shm" (shared memory; every rank on one host, else ConfigError), "hierarchical" (shm
  // within each host, gloo among hosts), "nccl", or "auto": nccl when built with it and CUDA is
  // available, else by the hosts the ranks run on (host identities exchanged at rendezvous): shm
  // on one host, gloo when no two share one, else hierarchical. nullopt: GRADWIRE_BACKEND, else
  // "auto".
  std::optional<std::string> backend;
  // Timeout of every collective (and of the backend's creation); nullopt: GRADWIRE_TIMEOUT, else
  // 300 s.
  std::optional<std::chrono::milliseconds> timeout;
  // How long the rendezvous waits for every rank (reaching the store, the peers' records, their
  // host identities); nullopt: GRADWIRE_RENDEZVOUS_TIMEOUT, else the larger of `timeout` and 300 s,
  // so that ranks started seconds apart (a loaded machine loading libtorch) do not fail a job whose
  // collectives should time out quickly.
  std::optional<std::chrono::milliseconds> rendezvous_timeout;
  // Address Gloo binds its connections to. Empty: 127.0.0.1 when master_addr is a loopback
  // address, otherwise this host's name (GLOO_SOCKET_IFNAME is honoured by Gloo itself).
  std::string bind_address;
  // Gloo worker threads per communicator.
  int gloo_threads = 2;
  // Intra-op threads for this rank (at::set_num_threads). nullopt: OMP_NUM_THREADS when set,
  // else max(1, hardware cores / local world size), so the ranks of a node share the cores.
  std::optional<int> threads;
};

// Pure: combines options and environment into a WorldInfo. Without any launcher environment and
// without identity options: a world of one (flavour kNone, master 127.0.0.1, port 0 unless the
// options give them). Otherwise throws ConfigError naming every missing or inconsistent variable
// and the flavour it was reading.
WorldInfo resolve_world(const InitOptions& options, const EnvMap& env);
// Pure: the intra-op thread count init() applies (see InitOptions::threads).
int resolve_threads(const InitOptions& options, const EnvMap& env, const WorldInfo& world,
                    int hardware_cores);
// Pure: `options` with backend, timeout and rendezvous_timeout taken from the environment, else
// their defaults, as init() uses them (see each field). ConfigError naming a malformed variable.
// The job's identity (rank, world size, ...) is resolve_world's and the thread count
// resolve_threads': both depend on more than the environment, so they stay as given.
InitOptions resolve(const InitOptions& options, const EnvMap& env);

// A job's membership and its world communicator. Owns the rendezvous store.
class World {
 public:
  virtual ~World() = default;
  virtual const WorldInfo& info() const = 0;
  virtual std::shared_ptr<Communicator> communicator() const = 0;
};

// Resolves the world from the process environment, joins the rendezvous (every rank must arrive
// within the timeout; otherwise TimeoutError naming the ranks that never joined) and builds the
// world communicator. Blocks. A world of one (any flavour) rendezvouses through an in-process
// store: no port is opened and nothing waits. With no launcher at all, the first such init() of
// the process prints world_of_one_notice() to stderr.
std::unique_ptr<World> init(const InitOptions& options = {});

// The one line init() prints when no launcher environment was found.
std::string world_of_one_notice();

// The libtorch version gradwire was built against, e.g. "1.13.0".
std::string torch_version();

// The CUDA runtime version of the libtorch this process runs on, e.g. "13.2"; empty for a libtorch
// built without CUDA. Says nothing about whether a GPU is visible (torch::cuda::is_available).
std::string torch_cuda_version();

// torch_version() with its CUDA: "2.15.0 (CUDA 13.2)" or "1.13.0 (CPU only)".
std::string torch_description();

// Makes CUDA device `index` current for the calling thread, as torch.cuda.set_device does. A
// worker calls it with its local rank (WorldInfo::local_rank, LOCAL_RANK) before init(), so that
// the nccl backend, DDP's buckets and its own tensors use its GPU. InvalidArgument when libtorch
// has no CUDA or no such device is visible.
void set_cuda_device(int index);

}  // namespace gradwire
