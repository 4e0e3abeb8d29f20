// A trainer of the hybrid model that survives restarts, for the fault tests
// (fault_restart_test.cpp): remote embedding bags on the parameter servers, a dense layer whose
// parameters live on the servers too (DenseModel, SGD with momentum), a dense layer under DDP,
// deterministic batches, and the checkpoint-and-resume pattern of docs/ps.md "Restarts".
//
//   ps_fault_trainer STEPS EVERY DIR OUT [--defer-pushes] [FAULT...]
//
// --defer-pushes: the client holds its pushes until the step (ClientOptions::defer_pushes), so a
// trainer killed after its backward has sent none of them.
//
// Every EVERY steps each trainer writes its dense state (module, optimizer, step) to
// DIR/trainer_RANK.pt; the servers run with --checkpoint-every EVERY. At start a trainer loads its
// file when there is one and resumes at its step (DenseOptions::resume_step). At the end rank 0
// writes the DDP layer's parameters, every row of the table and the DenseModel layer's
// parameters to OUT as raw float32 bytes.
//
// FAULT, in the first attempt only (TORCHELASTIC_RESTART_COUNT 0), after the backward of step S
// and before Client::step():
//   die:RANK:S           trainer RANK kills itself with SIGKILL
//   kill-server:I:S      rank 0 SIGKILLs server I (the process listening on GRADWIRE_PS_ADDRS[I])
//   die-in-write:I:S     rank 0 lowers server I's file-size limit (RLIMIT_FSIZE, 1 KiB) so that
//                        the server's next checkpoint write kills it (SIGXFSZ) in the middle
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gradwire/ddp/ddp.h"
#include "gradwire/gradwire.h"
#include "gradwire/ps.h"

namespace {

constexpr int64_t kRows = 48;
constexpr int64_t kDim = 8;
constexpr int64_t kClasses = 3;
constexpr int64_t kBags = 6;
constexpr int64_t kIdsPerBag = 4;

struct Fault {
  std::string kind;
  int target = -1;
  int64_t step = -1;
};

Fault parse_fault(const std::string& text) {
  Fault fault;
  std::stringstream stream(text);
  std::string target;
  std::string step;
  std::getline(stream, fault.kind, ':');
  std::getline(stream, target, ':');
  std::getline(stream, step, ':');
  fault.target = std::stoi(target);
  fault.step = std::stoll(step);
  return fault;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

// The pid of the process whose command line has "--listen ADDRESS"; -1 if none.
pid_t listening_process(const std::string& address) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file("/proc/" + name + "/cmdline", std::ios::binary);
    const std::vector<std::string> args =
        split(std::string(std::istreambuf_iterator<char>(file), {}), '\0');
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--listen" && args[i + 1] == address) found = std::stoi(name);
    }
  }
  ::closedir(proc);
  return found;
}

// Batch `step` of trainer `rank`: the same in every run.
struct Batch {
  torch::Tensor ids, offsets, labels;
};
Batch batch_of(int64_t step, int rank) {
  at::Generator generator = at::detail::createCPUGenerator(static_cast<uint64_t>(step * 97 + rank));
  Batch batch;
  batch.labels = torch::randint(0, kClasses, {kBags}, generator);
  batch.ids = torch::randint(0, kRows, {kBags * kIdsPerBag}, generator);
  batch.offsets = torch::arange(0, kBags * kIdsPerBag, kIdsPerBag);
  return batch;
}

void append_raw(std::ofstream& out, const torch::Tensor& tensor) {
  const torch::Tensor dense = tensor.detach().to(torch::kFloat).contiguous();
  out.write(static_cast<const char*>(dense.data_ptr()),
            static_cast<std::streamsize>(dense.nbytes()));
}

int run(int64_t steps, int64_t every, const std::string& dir, const std::string& out,
        bool defer_pushes, const std::vector<Fault>& faults) {
  auto world = gradwire::init();
  auto comm = world->communicator();
  const int rank = comm->rank();
  const char* restart_text = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const int restart = restart_text ? std::atoi(restart_text) : 0;

  gradwire::ps::ClientOptions client_options;
  client_options.defer_pushes = defer_pushes;
  if (defer_pushes) std::fprintf(stderr, "ps_fault_trainer: deferring pushes\n");
  std::shared_ptr<gradwire::ps::Client> client = gradwire::ps::connect(client_options);
  gradwire::ps::TableConfig table;
  table.name = "bags";
  table.num_rows = kRows;
  table.dim = kDim;
  table.optimizer.kind = gradwire::ps::OptimizerKind::kAdagrad;
  table.optimizer.lr = 0.1;
  table.initializer.scale = 0.1;
  table.initializer.seed = 3;
  table.mode = gradwire::ps::UpdateMode::kSync;
  table.num_trainers = comm->size();
  gradwire::ps::RemoteEmbeddingBag bags(
      client, gradwire::ps::RemoteEmbeddingBagOptions{table, gradwire::ps::BagMode::kMean});

  torch::manual_seed(0);
  torch::nn::Linear dense(kDim, kClasses);
  torch::optim::Adam optimizer(dense->parameters(), torch::optim::AdamOptions(0.05));
  torch::manual_seed(1 + rank);  // trainer 1 starts elsewhere: DenseModel gives it trainer 0's
  torch::nn::Linear middle(kDim, kDim);
  const std::string mine = dir + "/trainer_" + std::to_string(rank) + ".pt";
  int64_t start = 0;
  if (::access(mine.c_str(), F_OK) == 0) {
    torch::serialize::InputArchive archive;
    archive.load_from(mine);
    dense->load(archive);
    torch::serialize::InputArchive state;
    archive.read("optimizer", state);
    optimizer.load(state);
    torch::Tensor step;
    archive.read("step", step);
    start = step.item<int64_t>();
  }
  gradwire::ps::DenseOptions middle_options;
  middle_options.table = "middle";
  middle_options.optimizer.lr = 0.1;
  middle_options.optimizer.momentum = 0.9;
  middle_options.layout.row_width = 16;  // 72 values: 5 rows over both servers
  middle_options.layout.min_block_elements = 16;
  middle_options.resume_step = start;  // every table to this trainer's step, on every server
  gradwire::ps::DenseModel middle_on_servers(client, middle, middle_options);
  gradwire::ddp::DistributedDataParallel ddp(dense, comm);

  for (int64_t step = start; step < steps; ++step) {
    const Batch batch = batch_of(step, rank);
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        ddp(middle(bags(batch.ids, batch.offsets))), batch.labels);
    loss.backward();
    for (const Fault& fault : faults) {
      if (restart != 0 || fault.step != step) continue;
      if (fault.kind == "die" && fault.target == rank) ::raise(SIGKILL);
      if (fault.kind != "die" && rank == 0) {
        const std::string address =
            split(std::getenv("GRADWIRE_PS_ADDRS"), ',').at(static_cast<size_t>(fault.target));
        const pid_t server = listening_process(address);
        if (server <= 0) throw gradwire::Error("no process listens on " + address);
        if (fault.kind == "die-in-write") {
          // Its checkpoint files are larger than 1 KiB: the write at the next multiple of EVERY
          // steps gets SIGXFSZ, whose default action ends the process, after the first KiB.
          const rlimit small{1024, RLIM_INFINITY};
          if (::prlimit(server, RLIMIT_FSIZE, &small, nullptr) != 0) {
            throw gradwire::Error("cannot lower the file-size limit of server " + address);
          }
        } else {
          ::kill(server, SIGKILL);
        }
      }
    }
    optimizer.step();
    middle_on_servers.step();  // Client::step for both tables, then the new values of `middle`
    if ((step + 1) % every == 0) {
      torch::serialize::OutputArchive archive;
      dense->save(archive);
      torch::serialize::OutputArchive state;
      optimizer.save(state);
      archive.write("optimizer", state);
      archive.write("step", torch::tensor(step + 1));
      archive.save_to(mine + ".tmp");
      if (std::rename((mine + ".tmp").c_str(), mine.c_str()) != 0) {
        throw gradwire::Error("cannot write " + mine);
      }
    }
  }
  if (rank == 0) {
    std::ofstream file(out, std::ios::binary);
    for (const auto& parameter : dense->parameters()) append_raw(file, parameter);
    append_raw(file, client->lookup("bags", torch::arange(0, kRows, torch::kLong)));
    for (const auto& parameter : middle->parameters()) append_raw(file, parameter);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: ps_fault_trainer STEPS EVERY DIR OUT [--defer-pushes] [FAULT...]\n");
    return 2;
  }
  try {
    int first = 5;
    const bool defer_pushes = argc > first && std::string(argv[first]) == "--defer-pushes";
    if (defer_pushes) ++first;
    std::vector<Fault> faults;
    for (int i = first; i < argc; ++i) faults.push_back(parse_fault(argv[i]));
    return run(std::stoll(argv[1]), std::stoll(argv[2]), argv[3], argv[4], defer_pushes, faults);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ps_fault_trainer: %s\n", error.what());
    return 1;
  }
}
