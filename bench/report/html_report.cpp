#include "report/html_report.h"

#include "cases/diff.h"
#include "gradwire/common/error.h"
#include "harness/report.h"

namespace gradwire::bench {

namespace {

// The fields a ddp document's "settings" fact lists, from its top level.
constexpr const char* kDdpSettings[] = {"preset", "bucket_size", "image_size", "warmup",
                                        "iterations"};

// `key` of the harness metadata, else `fallback` of the document itself; null when neither.
nlohmann::json lookup(const nlohmann::json& document, const char* key, const char* fallback) {
  const auto metadata = document.find("metadata");
  if (metadata != document.end() && metadata->is_object()) {
    const auto value = metadata->find(key);
    if (value != metadata->end() && !value->is_null()) return *value;
  }
  if (fallback == nullptr) return nullptr;
  const auto value = document.find(fallback);
  return value == document.end() ? nullptr : *value;
}

std::string quoted_command(const nlohmann::json& command) {
  std::string text;
  for (const auto& argument : command) {
    std::string word = argument.is_string() ? argument.get<std::string>() : argument.dump();
    if (word.empty() || word.find_first_of(" \t\"'") != std::string::npos) {
      word.insert(0, 1, '\'');
      word += '\'';
    }
    if (!text.empty()) text += ' ';
    text += word;
  }
  return text;
}

// "key value, key value" of the fields of `object` that are present.
std::string settings_text(const nlohmann::json& object, const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) {
    const auto value = object.find(key);
    if (value == object.end()) continue;
    text += (text.empty() ? "" : ", ") + key + " " + describe_field(*value);
  }
  return text;
}

std::string benchmark_of(const nlohmann::json& document) {
  if (!document.contains("schema_version") && document.contains("benchmark_results")) {
    return "ddp (PyTorch benchmark.py)";
  }
  const auto benchmark = document.find("benchmark");
  if (benchmark == document.end() || !benchmark->is_string()) return "unknown";
  std::string text = benchmark->get<std::string>();
  const auto implementation = document.find("implementation");
  if (implementation != document.end() && implementation->is_string()) {
    text += ", " + implementation->get<std::string>();
  }
  return text;
}

}  // namespace

ReportSource describe_document(const nlohmann::json& document, const std::string& source) {
  ReportSource described{source, {}};
  if (!document.is_object()) return described;
  auto add = [&described](const std::string& label, const nlohmann::json& value) {
    if (!value.is_null()) described.facts.emplace_back(label, describe_field(value));
  };
  described.facts.emplace_back("benchmark", benchmark_of(document));
  add("gradwire", lookup(document, "gradwire_version", "gradwire_version"));
  const nlohmann::json torch = lookup(document, "torch_version", "torch_version");
  add("torch", torch.is_null() ? lookup(document, "pytorch_version", "pytorch_version") : torch);
  add("backend", lookup(document, "backend", "distributed_backend"));
  const nlohmann::json ranks = lookup(document, "ranks", "world_size");
  const nlohmann::json threads = lookup(document, "threads_per_rank", "threads_per_rank");
  if (!ranks.is_null()) {
    const bool one_thread = threads.is_number() && threads.get<double>() == 1;
    add("ranks", threads.is_null() ? ranks.dump()
                                   : ranks.dump() + " x " + threads.dump() +
                                         (one_thread ? " thread" : " threads"));
  }
  add("host", lookup(document, "hostname", nullptr));
  nlohmann::json cpu = lookup(document, "cpu_model", nullptr);
  nlohmann::json cores = lookup(document, "cores", nullptr);
  const auto hardware = document.find("hardware");
  if (hardware != document.end() && hardware->is_object()) {
    if (cpu.is_null()) cpu = hardware->value("cpu_model", nlohmann::json());
    if (cores.is_null()) cores = hardware->value("cores", nlohmann::json());
  }
  if (!cpu.is_null()) {
    add("CPU", describe_field(cpu) + (cores.is_null() ? "" : ", " + cores.dump() + " cores"));
  }
  add("date", lookup(document, "date", nullptr));
  const nlohmann::json command = lookup(document, "command", nullptr);
  if (command.is_array() && !command.empty()) add("command", quoted_command(command));

  const auto settings = document.find("settings");
  if (settings != document.end() && settings->is_object()) {
    std::vector<std::string> keys;
    for (const auto& item : settings->items()) keys.push_back(item.key());
    add("settings", settings_text(*settings, keys));
  } else if (document.contains("benchmark_results")) {
    const std::string text = settings_text(
        document, std::vector<std::string>(std::begin(kDdpSettings), std::end(kDdpSettings)));
    if (!text.empty()) add("settings", text);
  }
  const auto reference = document.find("reference");
  if (reference != document.end() && reference->is_object()) {
    // Every reference script writes torch_version; ddp_reference.py and hybrid_reference.py also
    // pytorch_version (diff.py's name). A version neither gives is left out, not printed as null.
    std::string text = describe_field(reference->value("implementation", nlohmann::json("?")));
    for (const char* key : {"torch_version", "pytorch_version"}) {
      const auto version = reference->find(key);
      if (version != reference->end() && !version->is_null()) {
        text += " " + describe_field(*version);
        break;
      }
    }
    add("reference", text);
  }
  const auto traces = document.find("traces");
  if (traces != document.end() && traces->is_array()) {
    for (const auto& entry : *traces) {
      const std::string path = entry.is_object() ? entry.value("path", std::string()) : "";
      if (!path.empty()) described.links.emplace_back("trace", path);
    }
  }
  return described;
}

ReportPage build_report_page(const std::vector<ReportInput>& inputs, const std::string& title) {
  ReportPage page;
  page.title = title;
  for (const auto& input : inputs) {
    for (auto& chart : charts_from_document(input.document, input.source)) {
      page.charts.push_back(std::move(chart));
    }
    page.sources.push_back(describe_document(input.document, input.source));
  }
  return page;
}

ReportInput read_report_input(const std::string& path) { return {path, read_json_document(path)}; }

void write_html_report(const std::string& path, const std::vector<nlohmann::json>& documents,
                       const std::string& title) {
  std::vector<ReportInput> inputs;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const nlohmann::json& document = documents[i];
    const nlohmann::json kind =
        document.is_object() ? document.value("benchmark", nlohmann::json()) : nullptr;
    std::string source =
        "gradwire-bench " + (kind.is_string() ? kind.get<std::string>() : std::string("result"));
    if (documents.size() > 1) source += " #" + std::to_string(i + 1);
    inputs.push_back({source, document});
  }
  write_text_file(path, render_html_page(build_report_page(inputs, title)));
}

void write_result_files(const std::string& json_path, const std::string& html_path,
                        const nlohmann::json& document,
                        const std::function<void(const std::string&)>& progress) {
  if (!json_path.empty()) {
    write_json_file(json_path, document);
    progress("wrote " + json_path);
  }
  if (!html_path.empty()) {
    write_html_report(html_path, {document},
                      "gradwire-bench " + document.value("benchmark", std::string("result")));
    progress("wrote " + html_path);
  }
}

}  // namespace gradwire::bench
