#include "cases/rpc_settings.h"

#include <sstream>

namespace gradwire::bench {

OptionTable<RpcSettings> rpc_options() {
  using Settings = RpcSettings;
  OptionTable<Settings> options({"default", "quick"}, "settings preset (quick: fewer calls)");
  options.preset_value("--ids", &Settings::ids, {}, "ids per lookup and push", positive_number)
      .preset_value("--dim", &Settings::dim, {}, "floats per row", positive_number)
      .preset_value("--tables", &Settings::tables, {},
                    "tables in the lookups of several tables (tables, tables-each)",
                    positive_number)
      .preset_value("--iters", &Settings::iters, {{"quick", 100}},
                    "timed calls of each kind on each side", positive_number)
      .preset_value("--warmup", &Settings::warmup, {{"quick", 20}},
                    "untimed calls of each kind on each side first", non_negative_number)
      .option("--json", &Settings::json_path, "write the results to this JSON file")
      .option("--html", &Settings::html_path,
              "draw the results into this HTML page (gradwire-bench report)");
  return options;
}

std::string describe_rpc_settings(const RpcSettings& settings) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": " << settings.ids << " ids x dim " << settings.dim
       << ", " << settings.tables << " tables, " << settings.warmup << " warm-up + "
       << settings.iters << " timed calls of each kind on each side";
  return text.str();
}

}  // namespace gradwire::bench
