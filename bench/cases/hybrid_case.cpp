#include "cases/hybrid_case.h"

#include "cases/ps_transports.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/version.h"
#include "harness/report.h"

namespace gradwire::bench {

namespace {

// Seconds the reference may take before it stops itself: 10 minutes plus 50 ms per batch and
// process.
int reference_timeout_s(const HybridSettings& s) {
  const double batches = static_cast<double>(s.warmup + s.epochs) * s.batches;
  return 600 + static_cast<int>(batches * (s.trainers + s.servers) * 0.05);
}

nlohmann::json settings_json(const HybridSettings& s) {
  return {{"preset", s.preset},
          {"trainers", s.trainers},
          {"servers", s.servers},
          {"rows", s.rows},
          {"dim", s.dim},
          {"embedding_width", s.embedding_width()},
          {"epochs", s.epochs},
          {"warmup", s.warmup},
          {"batches_per_epoch", s.batches},
          {"seed", s.seed},
          {"lr", kHybridLearningRate},
          {"mode", to_string(s.mode)},
          {"server_threads", s.server_threads},
          {"defer_pushes", s.defer_pushes},
          {"backend", s.backend},
          {"repeat", s.repeat}};
}

TrainingPlan hybrid_plan(const HybridSettings& s, const HybridBody& body,
                         const HybridPlainStep& plain) {
  TrainingPlan plan = training_plan(s);
  plan.summary = describe_hybrid_settings(s);
  plan.settings = settings_json(s);
  TrainingJob job;
  job.kind = "hybrid";
  job.implementation = "gradwire";
  job.title = "gradwire: DDP + parameter servers";
  job.trainers = s.trainers;
  job.servers = s.servers;
  job.server_processes = s.server_processes;
  job.server_threads = s.server_threads;
  job.threads = 1;  // one intra-op thread per process, as PyTorch's benchmark
  job.backend = s.backend;
  job.phases = hybrid_phases();
  plan.jobs = {job};
  plan.print_header = [s](std::ostream& out, const RunUsed& used) {
    print_hybrid_header(out, s, used);
  };
  plan.train = [s, body](RankContext& context, const TrainingJob&, int repeat) {
    return body(context, s, repeat);
  };
  plan.reference_command = [s](const PythonTorch& python, const std::string& script) {
    return std::vector<std::string>{
        python.python, script, "--trainers", std::to_string(s.trainers), "--servers",
        std::to_string(s.servers), "--rows", std::to_string(s.rows), "--dim", std::to_string(s.dim),
        "--epochs", std::to_string(s.epochs), "--warmup", std::to_string(s.warmup), "--batches",
        std::to_string(s.batches), "--seed", std::to_string(s.seed), "--timeout",
        std::to_string(reference_timeout_s(s)),
        // Its plain step (cases/parity.h), as ours.
        "--plain-warmup", std::to_string(kHybridPlainWarmup), "--plain-steps",
        std::to_string(kHybridPlainEpochs)};
  };
  plan.reference_what =
      "RPC (TensorPipe) + distributed autograd + DistributedOptimizer, same batches";
  plan.reference_title = "RPC + DDP";
  const std::string batches = std::to_string(s.batches) + (s.batches == 1 ? " batch" : " batches");
  plan.plain_names = {"no ps, no ddp: an epoch of " + batches + " in one process",
                      "the gradwire/pytorch ratios above", "DDP and the parameter servers"};
  plan.plain_counts =
      std::to_string(kHybridPlainWarmup) + " + " + std::to_string(kHybridPlainEpochs) + " epochs";
  plan.time_plain_step = [s, plain](int threads) { return plain(s, threads); };
  return plan;
}

}  // namespace

const std::vector<std::string>& hybrid_phases() {
  static const std::vector<std::string> kPhases = {"lookup",    "dense_forward", "backward",
                                                   "allreduce", "push",          "step"};
  return kPhases;
}

const TrainingFormat& hybrid_format() {
  static const TrainingFormat kFormat{
      "hybrid",
      "DDP + parameter servers: PyTorch's DDP + RPC benchmark (remote embedding bags, DDP dense "
      "part), per-trainer sec/epoch and ex/sec, optionally against PyTorch RPC",
      "hybrid (DDP + parameter servers)",
      "epoch",
      {"sec/epoch", 8, 0, nullptr},
      hybrid_phases(),
      "hybrid_reference.py",
      true};
  return kFormat;
}

void print_hybrid_header(std::ostream& out, const HybridSettings& s, const RunUsed& used) {
  const TrainerOutcome& facts = used.first.front().facts;
  print_suite_title(out, hybrid_format().title, 49, version(), torch_description());
  out << "* Trainers: " << s.trainers << ", parameter servers: " << s.servers
      << ", one intra-op thread per trainer\n"
      << "* Dense part over " << facts.backend
      << "; parameter-server calls: " << describe_transports(facts.transports)
      << " (trainer 0's, after the first run)\n"
      << "* Embedding: " << s.rows << " rows x " << s.embedding_width() << " (" << s.servers
      << " x " << s.dim << "), bag sum, sharded by id; SGD lr " << kHybridLearningRate << ", "
      << to_string(s.mode) << " updates\n"
      << "* Dense: DDP(Linear(" << s.embedding_width()
      << ", 256), Linear(256, 128), ReLU, Linear(128, 64), Linear(64, 32), Linear(32, 8)), "
         "cross-entropy, SGD lr "
      << kHybridLearningRate << "\n"
      << "* Epochs: " << s.warmup << " warm-up + " << s.epochs << " measured of " << s.batches
      << " batches (20-50 ids, bags of 1-10, seed " << s.seed << ")\n"
      << "* ex/sec: examples per epoch (mean over measured epochs) / sec/epoch\n";
  if (!used.reference.empty()) out << "* Reference: " << used.reference << "\n";
  out << "\n";
  print_hardware_block(out, used.hardware, 0);
}

TrainingCase<HybridSettings> hybrid_case(HybridBody body, HybridPlainStep plain) {
  return {
      hybrid_format(), hybrid_options,
      [](const OptionTable<HybridSettings>& options, std::optional<JobShape> job) {
        std::optional<HybridJob> shape;
        if (job) shape = HybridJob{job->trainers, job->servers};
        return resolve_hybrid_settings(options, shape);
      },
      [body, plain](const HybridSettings& settings) { return hybrid_plan(settings, body, plain); }};
}

}  // namespace gradwire::bench
