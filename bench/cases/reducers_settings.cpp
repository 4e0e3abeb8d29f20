#include "cases/reducers_settings.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cases/ddp_settings.h"
#include "gradwire/common/error.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr ddp::ReductionSchedule kAllReducers[] = {ddp::ReductionSchedule::kOverlapped,
                                                   ddp::ReductionSchedule::kAfterBackward,
                                                   ddp::ReductionSchedule::kAfterBackwardSync};

double parse_size(const std::string& item, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(item, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != item.size() || !(value > 0) || !std::isfinite(value)) {
    throw InvalidArgument("bucket sizes '" + text + "': '" + item +
                          "' is not a positive number of MiB (write e.g. 3..27 or 1,5,25)");
  }
  return value;
}

ddp::ReductionSchedule parse_reducer(const std::string& name) {
  std::string known;
  for (const auto schedule : kAllReducers) {
    if (name == ddp::to_string(schedule)) return schedule;
    known += (known.empty() ? "" : ", ") + std::string(ddp::to_string(schedule));
  }
  throw InvalidArgument("unknown reducer '" + name + "': use " + known);
}

}  // namespace

OptionTable<ReducersSettings> reducers_options() {
  using Settings = ReducersSettings;
  OptionTable<Settings> options({"default", "quick"}, "settings preset (quick: resnet18, small)");
  options  // --model and --bucket-sizes: an empty value is the preset's
      .preset_value<std::string, std::string>("--model", &Settings::model, {{"quick", "resnet18"}},
                                              "model of the zoo")
      .preset_value("--batch-size", &Settings::batch_size, {{"quick", 8}}, "examples per rank",
                    positive_number)
      .preset_value("--image-size", &Settings::image_size, {{"quick", 64}}, "ResNet input size",
                    positive_number)
      .preset_option<std::string, std::string>("--bucket-sizes", {"3..27", {{"quick", "1,5,25"}}},
                                               "bucket caps in MiB, e.g. 3..27 or 1,5,25",
                                               [](Settings& s, const std::string& text) {
                                                 s.bucket_sizes_mb = parse_bucket_sizes(text);
                                               })
      .option<std::vector<std::string>>(
          "--reducers", "overlapped, async, sync; the first is the delta% baseline [all three]",
          [](Settings& s, const std::vector<std::string>& names) {
            check_model_names({s.model});  // errors in table order: --model before --reducers
            s.reducers = parse_reducers(names);
          },
          comma_separated)
      .preset_value("--iterations", &Settings::iterations, {{"quick", 20}}, "timed iterations",
                    positive_number)
      .preset_value("--warmup", &Settings::warmup, {{"quick", 3}}, "warm-up iterations",
                    non_negative_number)
      .option("--json", &Settings::json_path, "write the results to this JSON file")
      .option("--html", &Settings::html_path,
              "draw the results into this HTML page (gradwire-bench report)");
  return options;
}

std::vector<double> parse_bucket_sizes(const std::string& text) {
  std::vector<double> sizes;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dots = item.find("..");
    if (dots == std::string::npos) {
      sizes.push_back(parse_size(item, text));
      continue;
    }
    const double first = parse_size(item.substr(0, dots), text);
    const double last = parse_size(item.substr(dots + 2), text);
    if (last < first) {
      throw InvalidArgument("bucket sizes '" + text + "': the range '" + item + "' runs backwards");
    }
    for (double size = first; size <= last + 1e-9; size += 1) sizes.push_back(size);
  }
  if (sizes.empty()) throw InvalidArgument("bucket sizes '" + text + "': no size given");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (std::find(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(i), sizes[i]) !=
        sizes.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw InvalidArgument("bucket sizes '" + text + "': " + format_fixed(sizes[i], 1) +
                            " MiB appears twice");
    }
  }
  return sizes;
}

std::vector<ddp::ReductionSchedule> parse_reducers(const std::vector<std::string>& names) {
  if (names.empty()) return {std::begin(kAllReducers), std::end(kAllReducers)};
  std::vector<ddp::ReductionSchedule> reducers;
  for (const auto& name : names) {
    const auto schedule = parse_reducer(name);
    if (std::find(reducers.begin(), reducers.end(), schedule) != reducers.end()) {
      throw InvalidArgument("reducer '" + name + "' is listed twice");
    }
    reducers.push_back(schedule);
  }
  return reducers;
}

std::string describe_reducers_settings(const ReducersSettings& settings, int ranks,
                                       int threads_per_rank) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": model " << settings.model << ", batch "
       << settings.batch_size << " per rank, images " << settings.image_size << "x"
       << settings.image_size << ", buckets " << joined(settings.bucket_sizes_mb, ",")
       << " MiB, reducers ";
  for (std::size_t i = 0; i < settings.reducers.size(); ++i) {
    text << (i > 0 ? "," : "") << ddp::to_string(settings.reducers[i]);
  }
  text << ", " << settings.warmup << " warm-up + " << settings.iterations << " timed iterations, "
       << counted(ranks, "rank") << ", " << counted(threads_per_rank, "thread") << " per rank";
  return text.str();
}

}  // namespace gradwire::bench
