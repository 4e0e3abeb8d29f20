#include "cases/ps_case.h"

#include <cstdint>
#include <sstream>

#include "cases/ddp_report.h"
#include "cases/ps_transports.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "gradwire/common/version.h"
#include "harness/report.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

// Seconds the reference may take before it stops itself: 10 minutes plus 2 s per iteration and
// process (resnet18 on one thread takes a tenth of that; vgg16 more).
int reference_timeout_s(const PsSettings& s) {
  const int iterations = s.warmup + s.measured_iterations();
  return 600 + iterations * (s.trainers + s.servers) * 2;
}

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

std::string bytes_text(double bytes) {
  return format_bytes(static_cast<std::uint64_t>(bytes > 0 ? bytes + 0.5 : 0.0));
}

std::string role_text(const PsSettings& s) {
  const std::string sgd =
      "SGD lr " + format_fixed(kPsLearningRate, 2) + " momentum " + format_fixed(kPsMomentum, 1);
  return s.role == PsRole::kSum
             ? "role sum: the servers average the gradients, each trainer runs " + sgd
             : "role optimizer: the servers run " + sgd;
}

nlohmann::json settings_json(const PsSettings& s) {
  return {{"preset", s.preset},         {"model", s.model},
          {"trainers", s.trainers},     {"servers", s.servers},
          {"mode", to_string(s.mode)},  {"staleness", s.mode.staleness},
          {"role", to_string(s.role)},  {"batch_size", s.batch_size},
          {"image_size", s.image_size}, {"num_classes", s.num_classes},
          {"lr", kPsLearningRate},      {"momentum", kPsMomentum},
          {"warmup", s.warmup},         {"iterations_per_pass", s.iterations},
          {"passes", s.passes},         {"seed", s.seed},
          {"overlap_forward", true},    {"compare", s.compare},
          {"repeat", s.repeat}};
}

TrainingPlan ps_plan(const PsSettings& s, const PsBody& body, const PsPlainStep& plain) {
  const PsThreads threads = ps_thread_counts(s, available_cores());
  TrainingPlan plan = training_plan(s);
  plan.summary = describe_ps_settings(s);
  plan.settings = settings_json(s);
  plan.steps_per_pass = s.iterations;
  // What gradwire's trainers record: ps_phases() less the reference's comm.
  const std::vector<std::string> phases(ps_phases().begin(), ps_phases().end() - 1);
  TrainingJob ps;
  ps.kind = "ps";
  ps.implementation = "gradwire";
  ps.title = "gradwire: dense parameter servers";
  ps.trainers = s.trainers;
  ps.servers = s.servers;
  ps.server_threads = threads.ps;
  ps.threads = threads.ps;
  ps.phases = phases;
  ps.byte_names = ps_byte_names();
  plan.jobs = {ps};
  // The comparisons: the same model, batch and SGD, recording forward and backward.
  auto comparison = [&](std::string kind, std::string implementation, std::string title,
                        int trainers, int threads_per_trainer, std::string backend) {
    TrainingJob job;
    job.kind = std::move(kind);
    job.implementation = std::move(implementation);
    job.title = std::move(title);
    job.trainers = trainers;
    job.threads = threads_per_trainer;
    job.backend = std::move(backend);
    job.phases = {"forward", "backward"};
    plan.jobs.push_back(std::move(job));
  };
  if (s.compares("ddp")) {
    comparison("ddp", "gradwire-ddp", "gradwire DDP (allreduce)", s.trainers, threads.ddp, "auto");
  }
  if (s.compares("local")) {
    comparison("local", "local", "one process without distribution", 1, threads.local, "gloo");
  }
  plan.print_header = [s](std::ostream& out, const RunUsed& used) {
    print_ps_header(out, s, used);
  };
  plan.describe_run = [](const JobResult& own) { return describe_ps_layout(own.facts.details); };
  plan.train = [s, body](RankContext& context, const TrainingJob& job, int) {
    return body(context, s, job);
  };
  plan.reference_command = [s](const PythonTorch& python, const std::string& script) {
    return ps_reference_command(python, script, s);
  };
  plan.reference_what =
      "RPC (TensorPipe) parameter servers: whole parameters on the servers "
      "(balanced by bytes), averaged and stepped there";
  plan.reference_title = "RPC (TensorPipe) parameter servers";
  plan.plain_names = {"no ps: the model in one process, batch " + std::to_string(s.batch_size),
                      "the gradwire/pytorch ratios above", "the parameter servers"};
  plan.plain_counts =
      std::to_string(kPsPlainWarmup) + " + " + std::to_string(kPsPlainIterations) + " iterations";
  plan.time_plain_step = [s, plain](int threads) { return plain(s, threads); };
  return plan;
}

}  // namespace

const std::vector<std::string>& ps_phases() {
  static const std::vector<std::string> kPhases = {"forward",      "backward",  "push_wait",
                                                   "server_apply", "pull_wait", "comm"};
  return kPhases;
}

const std::vector<std::string>& ps_byte_names() {
  static const std::vector<std::string> kNames = {"pushed", "pulled"};
  return kNames;
}

const TrainingFormat& ps_format() {
  static const TrainingFormat kFormat{
      "ps",
      "dense parameter-server training (reference 003): per-pass imgs/s, per-trainer sec/iter, "
      "phases and bytes, optionally against gradwire DDP, one process and PyTorch RPC",
      "ps (dense parameter servers)",
      "iteration",
      {"sec/iter", 9, 1, format_seconds},
      ps_phases(),
      "ps_reference.py",
      false};
  return kFormat;
}

void print_ps_header(std::ostream& out, const PsSettings& s, const RunUsed& used) {
  print_suite_title(out, ps_format().title, 49, version(), torch_description());
  const TrainingJob& own = used.jobs.front();
  out << "* Model: " << s.model << ", " << s.num_classes << " classes, " << s.image_size << "x"
      << s.image_size << " synthetic images (one batch per trainer, made before the clock, seed "
      << s.seed << "), cross-entropy\n"
      << "* Trainers: " << s.trainers << " of batch " << s.batch_size
      << ", parameter servers: " << s.servers << " (gradwire-ps-server), "
      << counted(own.threads, "intra-op thread") << " per process\n"
      << "* Parameter-server calls: " << describe_transports(used.first.front().facts.transports)
      << " (trainer 0's client after the first run)\n"
      << "* Dense parameters: blocks on the servers (gradwire::ps::DenseModel), " << role_text(s)
      << ", " << to_string(s.mode) << " updates, forward overlapped with the pulls (forward "
      << "pre-hooks)\n"
      << "* Iterations: " << s.warmup << " warm-up, then " << s.passes
      << (s.passes == 1 ? " pass of " : " passes of ") << s.iterations << "\n";
  for (std::size_t j = 1; j < used.jobs.size(); ++j) {
    const TrainingJob& job = used.jobs[j];
    const std::string backend = j < used.first.size() && !used.first[j].facts.backend.empty()
                                    ? " over " + used.first[j].facts.backend
                                    : "";
    out << "* Compare: " << job.title << backend << ", " << counted(job.trainers, "trainer")
        << " of " << counted(job.threads, "thread") << ", same model, batch " << s.batch_size
        << " and SGD\n";
  }
  out << "* imgs/s: Pass lines, every trainer's images over the slowest trainer's pass; tables, "
         "images per iteration over a percentile of sec/iter\n";
  if (!used.reference.empty()) out << "* Reference: " << used.reference << "\n";
  out << "\n";
  print_hardware_block(out, used.hardware, 0);
}

std::string describe_ps_layout(const nlohmann::json& layout) {
  if (!layout.is_object()) return "dense layout: unknown";
  std::string servers;
  for (const auto& server : layout.at("servers")) {
    servers += (servers.empty() ? "" : ", ") + bytes_text(server.at("bytes").get<double>());
  }
  return "dense layout: " + std::to_string(layout.at("parameters").get<std::int64_t>()) +
         " tensors, " + std::to_string(layout.at("elements").get<std::int64_t>()) +
         " parameters in " + std::to_string(layout.at("blocks").get<std::int64_t>()) +
         " blocks on " + counted(static_cast<long long>(layout.at("servers").size()), "server") +
         " (" + servers + "), rows of " +
         std::to_string(layout.at("row_width").get<std::int64_t>()) + " (" +
         format_fixed(100.0 * layout.at("padding_fraction").get<double>(), 1) + "% padding), " +
         std::to_string(layout.at("push_messages").get<std::int64_t>()) + " push and " +
         std::to_string(layout.at("pull_messages").get<std::int64_t>()) +
         " pull messages per step" +
         (layout.contains("transport") ? ", " + layout.at("transport").get<std::string>() : "");
}

std::vector<std::string> ps_reference_command(const PythonTorch& python, const std::string& script,
                                              const PsSettings& s) {
  return {python.python, script, "--trainers", std::to_string(s.trainers), "--servers",
          std::to_string(s.servers), "--model", s.model, "--batch-size",
          std::to_string(s.batch_size), "--image-size", std::to_string(s.image_size),
          "--num-classes", std::to_string(s.num_classes), "--lr", number(kPsLearningRate),
          "--momentum", number(kPsMomentum), "--warmup", std::to_string(s.warmup), "--iterations",
          std::to_string(s.iterations), "--passes", std::to_string(s.passes), "--seed",
          std::to_string(s.seed), "--timeout", std::to_string(reference_timeout_s(s)),
          // Its plain step (cases/parity.h), as ours.
          "--plain-warmup", std::to_string(kPsPlainWarmup), "--plain-steps",
          std::to_string(kPsPlainIterations)};
}

TrainingCase<PsSettings> ps_case(PsBody body, PsPlainStep plain) {
  return {ps_format(), ps_options,
          [](const OptionTable<PsSettings>& options, std::optional<JobShape>) {
            return resolve_ps_settings(options);
          },
          [body, plain](const PsSettings& settings) { return ps_plan(settings, body, plain); }};
}

}  // namespace gradwire::bench
