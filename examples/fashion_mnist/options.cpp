#include "options.h"

#include <cerrno>
#include <cstdlib>

#include "gradwire/common/error.h"

namespace fashion_mnist {
namespace {

using gradwire::InvalidArgument;

int64_t parse_integer(const std::string& flag, const std::string& text, int64_t minimum) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum) {
    throw InvalidArgument(flag + " wants an integer >= " + std::to_string(minimum) + ", got '" +
                          text + "'");
  }
  return value;
}

double parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0)) {
    throw InvalidArgument(flag + " wants a positive number, got '" + text + "'");
  }
  return value;
}

}  // namespace

std::string job_usage() {
  return "usage: example-fashion-mnist --data DIR [--epochs N] [--batch-size GLOBAL] [--lr LR]\n"
         "         [--lr-schedule cosine|step|constant] [--lr-step-epochs K] [--lr-gamma G]\n"
         "         [--seed S] [--limit N] [--partition static|dynamic]\n"
         "         [--checkpoint-dir DIR [--checkpoint-every STEPS] [--resume]]\n"
         "Run it under gradwire-run for several ranks; see docs/data.md.\n";
}

JobOptions parse_job_options(const std::vector<std::string>& args) {
  JobOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline_value = false;
    if (const size_t equals = flag.find('='); flag.rfind("--", 0) == 0 && equals != flag.npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
      has_inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline_value) return value;
      if (i + 1 >= args.size()) throw InvalidArgument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      options.help = true;
    } else if (flag == "--data") {
      options.data_dir = next();
    } else if (flag == "--epochs") {
      options.epochs = static_cast<int>(parse_integer(flag, next(), 1));
    } else if (flag == "--batch-size") {
      options.batch_size = parse_integer(flag, next(), 1);
    } else if (flag == "--lr") {
      options.lr = parse_positive(flag, next());
    } else if (flag == "--lr-schedule") {
      const std::string text = next();
      const auto kind = parse_lr_schedule(text);
      if (!kind) {
        throw InvalidArgument("--lr-schedule wants cosine, step or constant, got '" + text + "'");
      }
      options.lr_schedule = *kind;
    } else if (flag == "--lr-step-epochs") {
      options.lr_step_epochs = parse_integer(flag, next(), 1);
    } else if (flag == "--lr-gamma") {
      options.lr_gamma = parse_positive(flag, next());
    } else if (flag == "--seed") {
      options.seed = static_cast<uint64_t>(parse_integer(flag, next(), 0));
    } else if (flag == "--limit") {
      options.limit = parse_integer(flag, next(), 0);
    } else if (flag == "--partition") {
      const std::string text = next();
      const auto partition = gradwire::data::parse_partition(text);
      if (!partition) {
        throw InvalidArgument("--partition wants static or dynamic, got '" + text + "'");
      }
      options.partition = *partition;
    } else if (flag == "--checkpoint-dir") {
      options.checkpoint_dir = next();
    } else if (flag == "--checkpoint-every") {
      options.checkpoint_every = parse_integer(flag, next(), 0);
    } else if (flag == "--resume") {
      options.resume = true;
    } else {
      throw InvalidArgument("unknown argument '" + args[i] + "'\n" + job_usage());
    }
  }
  if (options.help) return options;
  if (options.data_dir.empty()) throw InvalidArgument("--data DIR is required\n" + job_usage());
  if (options.resume && options.checkpoint_dir.empty()) {
    throw InvalidArgument("--resume needs --checkpoint-dir DIR");
  }
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty()) {
    throw InvalidArgument("--checkpoint-every needs --checkpoint-dir DIR");
  }
  if (options.checkpoint_every > 0 && options.partition == gradwire::data::Partition::kDynamic) {
    throw InvalidArgument(
        "--checkpoint-every works with --partition static only: a dynamic reader can resume only "
        "at an epoch boundary (checkpoints are still written after every epoch)");
  }
  return options;
}

}  // namespace fashion_mnist
