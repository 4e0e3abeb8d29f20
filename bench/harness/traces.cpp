#include "harness/traces.h"

#include <filesystem>
#include <system_error>

#include "gradwire/common/error.h"
#include "harness/report.h"
#include "harness/trace_summary.h"

namespace gradwire::bench {

std::string trace_file(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / (name + ".json")).string();
}

void prepare_trace_dir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error("cannot create the trace folder " + dir + ": " + error.message());
}

nlohmann::json read_trace_entry(const std::string& name, const std::string& path, int repeat) {
  nlohmann::json entry = {{"name", name}, {"path", path}, {"repeat", repeat}};
  try {
    entry["summary"] = to_json(summarize_trace(read_json_document(path), path));
  } catch (const std::exception& e) {
    entry["error"] = e.what();
  }
  return entry;
}

void print_trace_entries(std::ostream& out, const nlohmann::json& traces) {
  if (!traces.is_array()) return;
  for (const auto& entry : traces) {
    if (!entry.is_object()) continue;
    const std::string path = entry.value("path", std::string("?"));
    const std::string title = "where the time went: " + entry.value("name", std::string("trace")) +
                              " (repeat " + std::to_string(entry.value("repeat", 1)) + ", " + path +
                              ")";
    const auto summary = entry.find("summary");
    if (summary == entry.end()) {
      out << "\n" << title << ": no summary (" << entry.value("error", std::string("?")) << ")\n";
      continue;
    }
    try {
      print_trace_summary(out, trace_summary_from_json(*summary, path), title);
    } catch (const Error& e) {
      out << "\n" << title << ": " << e.what() << "\n";
    }
  }
}

}  // namespace gradwire::bench
