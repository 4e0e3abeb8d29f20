// What gradwire-bench report draws of a document's traces (--trace): the per-rank stacked bars,
// the servers' bars, the trace links and the summary tables; and headless Chromium drawing them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "bench_process.h"
#include "harness/trace_summary.h"
#include "harness/traces.h"
#include "report/charts.h"
#include "report/html_report.h"

namespace gradwire::bench {
namespace trace_report_test {
namespace {

using namespace testing;  // bench_process.h

// Two ranks of 4 steps and one server, in seconds.
nlohmann::json summary_json() {
  TraceSummary summary;
  summary.ranks.push_back({"rank 0", 0, 4, "forward/backward", 1.0, 0.6, 0.2, 0.4, 0.1, 0.1});
  summary.ranks.push_back({"rank 1", 1, 4, "forward/backward", 1.0, 0.5, 0.3, 0.2, 0.1, 0.1});
  summary.servers.push_back({"ps server 0", 1.0, 0.25, 40});
  return to_json(summary);
}

nlohmann::json traced_document() {
  nlohmann::json document = fixture_json("ddp_gradwire.json");
  document["traces"] = nlohmann::json::array(
      {{{"name", "ddp-resnet50-gloo-2ranks"},
        {"path", "traces/ddp-resnet50-gloo-2ranks.json"},
        {"repeat", 1},
        {"summary", summary_json()}},
       {{"name", "broken"}, {"path", "traces/broken.json"}, {"repeat", 1}, {"error", "cut"}}});
  return document;
}

TEST(BuildReportPageTest, TraceBarsPerRankAndServer) {
  const auto plain = charts_from_document(fixture_json("ddp_gradwire.json"), "g.json");
  const auto charts = charts_from_document(traced_document(), "g.json");
  ASSERT_EQ(charts.size(), plain.size() + 2);
  const ChartSpec& ranks = charts[plain.size()];
  EXPECT_EQ(ranks.kind, "stacked_bars");
  EXPECT_EQ(ranks.title, "where the time went: ddp-resnet50-gloo-2ranks (ms per step)");
  EXPECT_EQ(ranks.categories, (std::vector<std::string>{"rank 0", "rank 1"}));
  ASSERT_EQ(ranks.series.size(), 5u);
  EXPECT_EQ(ranks.series[0].name, "compute");
  EXPECT_EQ(ranks.series[1].name, "compute hiding communication");
  // rank 0: compute 0.6 s of which 0.4 hid communication, over 4 steps: 50 + 100 ms per step.
  EXPECT_NEAR(ranks.series[0].points[0].y, 50, 1e-9);
  EXPECT_NEAR(ranks.series[1].points[0].y, 100, 1e-9);
  EXPECT_NEAR(ranks.series[2].points[1].y, 75, 1e-9);  // rank 1's exposed: 0.3 s / 4
  // The segments stack to the window.
  double stacked = 0;
  for (const auto& series : ranks.series) stacked += series.points[1].y;
  EXPECT_NEAR(stacked, 250, 1e-9);
  const ChartSpec& servers = charts[plain.size() + 1];
  EXPECT_EQ(servers.categories, (std::vector<std::string>{"ps server 0"}));
  EXPECT_NEAR(servers.series[0].points[0].y, 250, 1e-9);
  EXPECT_NEAR(servers.series[1].points[0].y, 750, 1e-9);
  EXPECT_EQ(to_json(ranks).at("kind"), "stacked_bars");

  nlohmann::json bad = traced_document();
  bad["traces"][0]["summary"]["ranks"] = 3;
  EXPECT_THROW(charts_from_document(bad, "g.json"), InvalidArgument);
}

TEST(BuildReportPageTest, TraceLinksAndSummaryTables) {
  const ReportSource source = describe_document(traced_document(), "g.json");
  ASSERT_EQ(source.links.size(), 2u);
  EXPECT_EQ(source.links[0].second, "traces/ddp-resnet50-gloo-2ranks.json");
  const std::string html =
      render_html_page(build_report_page({{"g.json", traced_document()}}, "t"));
  EXPECT_NE(html.find("<a href=\"traces/ddp-resnet50-gloo-2ranks.json\">"), std::string::npos);

  std::ostringstream out;
  print_trace_entries(out, traced_document()["traces"]);
  const std::string text = out.str();
  EXPECT_NE(text.find("where the time went: ddp-resnet50-gloo-2ranks (repeat 1, "
                      "traces/ddp-resnet50-gloo-2ranks.json)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ms/step"), std::string::npos) << text;
  EXPECT_NE(text.find("250.00"), std::string::npos) << text;  // the window per step
  EXPECT_NE(text.find("broken"), std::string::npos);
  EXPECT_NE(text.find("no summary (cut)"), std::string::npos) << text;
}

TEST(ReportBrowserTest, ChromiumDrawsTraceBars) {
  constexpr const char* kChromium = "/usr/bin/chromium";
  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << kChromium << " is absent";
  const std::string dir = temp_path("trace_report");
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/report.html";
  write_html_report(page, {traced_document()});
  const BenchRun dom = run_shell(
      std::string(kChromium) +
          " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
          " --disable-component-update --disable-sync --user-data-dir='" +
          dir + "/profile' --dump-dom 'file://" + page + "'",
      60, true);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.errors;
  const std::string& html = dom.output;
  const auto body_begin = html.find("<body");
  ASSERT_NE(body_begin, std::string::npos) << html;
  const std::string body = html.substr(body_begin, html.find('>', body_begin) - body_begin);
  EXPECT_EQ(body.find("data-chart-error"), std::string::npos) << body;
  const std::size_t charts = charts_from_document(traced_document(), "g").size();
  EXPECT_NE(body.find("data-charts-drawn=\"" + std::to_string(charts) + "\""), std::string::npos)
      << body;
  // 5 segments for each of 2 ranks, 2 for the server.
  EXPECT_EQ(count(html, "class=\"bar\""), 12u);
  EXPECT_NE(html.find("rank 1, exposed communication: 75 ms"), std::string::npos);
}

}  // namespace
}  // namespace trace_report_test
}  // namespace gradwire::bench
