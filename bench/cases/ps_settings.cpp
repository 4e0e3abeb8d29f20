#include "cases/ps_settings.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "cases/ddp_settings.h"
#include "cases/training_case.h"
#include "gradwire/common/error.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr const char* kStalePrefix = "stale:";
constexpr int kReferenceMinImageSize = 32;  // ps_reference.py's VGGs pool five times

}  // namespace

const char* to_string(PsRole role) { return role == PsRole::kSum ? "sum" : "optimizer"; }

PsMode parse_ps_mode(const std::string& text) {
  if (text == "sync") return {};
  if (text == "async") return {false, 0};
  const std::string prefix = kStalePrefix;
  const std::string digits = text.substr(std::min(text.size(), prefix.size()));
  const bool numeric =
      !digits.empty() && digits.size() <= 9 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (text.compare(0, prefix.size(), prefix) != 0 || !numeric) {
    throw InvalidArgument("--mode " + text +
                          ": use sync, async or stale:K with K a whole number >= 0 (stale:0 is "
                          "sync)");
  }
  const int staleness = std::atoi(digits.c_str());
  return staleness == 0 ? PsMode{} : PsMode{false, staleness};
}

std::string to_string(const PsMode& mode) {
  if (mode.sync) return "sync";
  return mode.staleness == 0 ? "async" : kStalePrefix + std::to_string(mode.staleness);
}

bool PsSettings::compares(const std::string& name) const {
  return std::find(compare.begin(), compare.end(), name) != compare.end();
}

OptionTable<PsSettings> ps_options() {
  using Settings = PsSettings;
  OptionTable<Settings> options({"default", "quick"},
                                "settings preset (quick: 32x32, batch 2, 2 passes of 2)");
  options
      .preset_value("--model", &Settings::model, {}, "a model of the zoo (gradwire/models/zoo.h)")
      .preset_value("--trainers", &Settings::trainers, {}, "trainer processes", positive_number)
      .preset_value("--servers", &Settings::servers, {}, "parameter servers (gradwire-ps-server)",
                    positive_number)
      .option<std::string>(
          "--mode", "server updates: sync, async, or stale:K (async, at most K steps ahead)",
          [](Settings& s, const std::string& mode) { s.mode = parse_ps_mode(mode); },
          [](CLI::Option& option) { option.capture_default_str(); }, "sync")
      .option<std::string>(
          "--role",
          "optimizer: the servers run SGD; sum: the servers sum the gradients and each trainer "
          "runs SGD on them",
          [](Settings& s, const std::string& role) {
            s.role = role == "sum" ? PsRole::kSum : PsRole::kOptimizer;
          },
          [](CLI::Option& option) {
            option.check(CLI::IsMember({"optimizer", "sum"}))->capture_default_str();
          },
          "optimizer")
      .preset_value("--batch-size", &Settings::batch_size, {{"quick", 2}},
                    "images per trainer and iteration", positive_number)
      .preset_value("--image-size", &Settings::image_size, {{"quick", 32}},
                    "height and width of the images", positive_number)
      .preset_value("--num-classes", &Settings::num_classes, {}, "classes of the labels",
                    positive_number)
      .preset_value("--iterations", &Settings::iterations, {{"quick", 2}},
                    "measured iterations per pass", positive_number)
      .preset_value("--warmup", &Settings::warmup, {{"quick", 1}}, "warm-up iterations",
                    non_negative_number)
      .preset_value("--passes", &Settings::passes, {{"quick", 2}}, "passes", positive_number)
      .preset_value("--seed", &Settings::seed, {}, "seed of the initial weights and the data")
      .option("--compare", &Settings::compare,
              "also run ddp (gradwire DDP on the same trainers) and/or local (one process, no "
              "distribution), e.g. ddp,local",
              names_from({"ddp", "local"}))
      .option<int>(
          "--threads", "intra-op threads of every process [cores / processes of the run]",
          [](Settings& s, int threads) {
            if (threads > 0) s.threads = threads;
          },
          positive_number)
      .switch_flag("--print-layout", &Settings::print_layout,
                   "print the parameters' blocks on the servers (DenseModel::describe_layout)");
  add_training_flags(options, "the algorithm with PyTorch RPC", "everything", "ps_reference.py");
  return options;
}

const std::vector<std::string>& ps_reference_models() {
  static const std::vector<std::string> kModels = {"resnet18", "vgg11", "vgg16"};
  return kModels;
}

PsSettings resolve_ps_settings(const OptionTable<PsSettings>& options) {
  PsSettings settings = options.resolve();
  check_model_names({settings.model});
  // In a fixed order, each once (chosen_in_order would take an empty list for all of them).
  if (!settings.compare.empty())
    settings.compare = chosen_in_order(settings.compare, {"ddp", "local"});
  if (settings.role == PsRole::kSum && !settings.mode.sync) {
    throw InvalidArgument(
        "--role sum needs --mode sync: the servers hold one step's summed "
        "gradients; use --role optimizer for " +
        to_string(settings.mode));
  }
  if (settings.reference_pytorch) {
    const auto& models = ps_reference_models();
    if (std::find(models.begin(), models.end(), settings.model) == models.end()) {
      throw InvalidArgument("--reference pytorch has the models " + join(models, ", ") + ", not " +
                            settings.model);
    }
    if (settings.image_size < kReferenceMinImageSize) {
      throw InvalidArgument("--reference pytorch needs --image-size 32 or more");
    }
    if (!settings.mode.sync) {
      throw InvalidArgument(
          "--reference pytorch trains synchronously: use --mode sync, or leave "
          "the reference out for " +
          to_string(settings.mode));
    }
  }
  return settings;
}

PsThreads ps_thread_counts(const PsSettings& settings, int cores) {
  auto per_process = [&](int processes) {
    return settings.threads.value_or(std::max(1, cores / processes));
  };
  return {per_process(settings.trainers + settings.servers), per_process(settings.trainers),
          per_process(1)};
}

std::string describe_ps_settings(const PsSettings& s) {
  std::ostringstream text;
  text << "preset " << s.preset << ": " << s.model << ", " << counted(s.trainers, "trainer")
       << " x " << counted(s.servers, "server") << ", batch " << s.batch_size << " per trainer, "
       << s.image_size << "x" << s.image_size << " images, " << s.num_classes << " classes, "
       << to_string(s.mode) << ", role " << to_string(s.role) << ", " << s.warmup << " warm-up + "
       << s.passes << (s.passes == 1 ? " pass of " : " passes of ") << s.iterations
       << " iterations, seed " << s.seed;
  if (!s.compare.empty()) text << ", compare " << join(s.compare, ",");
  if (s.reference_pytorch) text << ", reference pytorch";
  if (s.repeat > 1) text << ", " << s.repeat << " repeats";
  return text.str();
}

}  // namespace gradwire::bench
