#include "cases/parity.h"

#include "cases/ddp_report.h"
#include "gradwire/common/error.h"
#include "harness/options.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

std::optional<Parity> compute_parity(const std::vector<double>& gradwire_seconds,
                                     const std::vector<double>& reference_seconds) {
  if (gradwire_seconds.empty() || reference_seconds.empty()) return std::nullopt;
  Parity parity;
  parity.gradwire_p50 = percentile(gradwire_seconds, 50);
  parity.reference_p50 = percentile(reference_seconds, 50);
  if (parity.reference_p50 <= 0) return std::nullopt;
  parity.ratio = parity.gradwire_p50 / parity.reference_p50;
  parity.differs = parity.ratio > 1.1 || parity.ratio < 1 / 1.1;
  return parity;
}

std::vector<std::string> compute_parity_lines(const std::vector<double>& gradwire_seconds,
                                              const std::vector<double>& reference_seconds,
                                              const PlainStepNames& names) {
  const std::optional<Parity> parity = compute_parity(gradwire_seconds, reference_seconds);
  if (!parity) return {};
  std::vector<std::string> lines = {"plain step (" + names.what + "): gradwire p50 " +
                                    format_seconds(parity->gradwire_p50) + "s, pytorch p50 " +
                                    format_seconds(parity->reference_p50) + "s, " +
                                    format_fixed(parity->ratio, 3) + "x"};
  if (parity->differs) {
    lines.push_back("  they differ by more than 10%: " + names.ratios +
                    " include that difference in plain compute, not only " + names.distributed);
  }
  return lines;
}

nlohmann::json to_json(const PlainStep& step) {
  return {{"seconds", step.seconds}, {"warmup", step.warmup}, {"threads", step.threads}};
}

PlainStep parse_plain_step(const nlohmann::json& json, const std::string& source) {
  try {
    PlainStep step;
    step.seconds = json.at("seconds").get<std::vector<double>>();
    step.warmup = json.value("warmup", 0);
    step.threads = json.value("threads", 1);
    return step;
  } catch (const nlohmann::json::exception& error) {
    throw InvalidArgument(source +
                          ": plain_step is not {\"seconds\": [...], \"warmup\", "
                          "\"threads\"}: " +
                          error.what());
  }
}

namespace {

void pool(PlainStep& into, const PlainStep& more) {
  if (into.seconds.empty()) {
    into = more;
  } else {
    into.seconds.insert(into.seconds.end(), more.seconds.begin(), more.seconds.end());
  }
}

}  // namespace

void add_gradwire_plain_step(PlainStepParity& parity, const PlainStep& step) {
  pool(parity.gradwire, step);
}

void add_reference_plain_step(PlainStepParity& parity, const nlohmann::json& document,
                              const std::string& source) {
  if (!document.contains("plain_step")) return;
  const PlainStep step = parse_plain_step(document.at("plain_step"), source);
  if (!parity.reference) parity.reference = PlainStep{};
  pool(*parity.reference, step);
}

std::vector<std::string> plain_step_lines(const PlainStepParity& parity,
                                          const PlainStepNames& names) {
  if (!parity.reference || parity.reference->seconds.empty()) {
    return {"plain step (" + names.what +
            "): the reference timed none (a script from before "
            "the plain step?)"};
  }
  std::vector<std::string> lines =
      compute_parity_lines(parity.gradwire.seconds, parity.reference->seconds, names);
  if (!lines.empty() && parity.gradwire.threads != parity.reference->threads) {
    lines.push_back("  gradwire's plain step ran with " +
                    counted(parity.gradwire.threads, "intra-op thread") + ", pytorch's with " +
                    counted(parity.reference->threads, "intra-op thread") +
                    ", as each side's trainers do");
  }
  return lines;
}

void print_plain_step_parity(std::ostream& out, const PlainStepParity& parity,
                             const PlainStepNames& names) {
  out << "\n";
  for (const auto& line : plain_step_lines(parity, names)) out << line << "\n";
  out << std::flush;
}

nlohmann::json plain_step_json(const PlainStepParity& parity, const PlainStepNames& names) {
  nlohmann::json json = {{"what", names.what},
                         {"gradwire", to_json(parity.gradwire)},
                         {"pytorch", nullptr},
                         {"p50_ratio", nullptr},
                         {"differs_by_more_than_10_percent", nullptr}};
  if (!parity.reference) return json;
  json["pytorch"] = to_json(*parity.reference);
  if (const auto figures = compute_parity(parity.gradwire.seconds, parity.reference->seconds)) {
    json["p50_ratio"] = figures->ratio;
    json["differs_by_more_than_10_percent"] = figures->differs;
  }
  return json;
}

}  // namespace gradwire::bench
