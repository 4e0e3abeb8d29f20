// Runs the real `gradwire-bench report` (GRADWIRE_BENCH_PATH) on the fixtures, then Debian's
// Chromium, headless, on the page it wrote: the dumped DOM must say that every chart drew and
// no script failed. Commands run under coreutils `timeout`, so nothing can hang the test; each
// test works in a fresh temporary directory, removed afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bench_process.h"

namespace gradwire::bench {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace report_run_test {
namespace {

using namespace testing;  // bench_process.h

constexpr const char* kChromium = "/usr/bin/chromium";

// Every fixture: ddp_gradwire (resnet50 with 2 DDP rounds, cnn with its baseline only),
// ddp_gradwire_reference (resnet18: 3 gradwire and 2 PyTorch rounds; cnn: 1 round),
// ddp_pytorch_benchmark (resnet50: 2 rounds; resnet101: 1) and reducers (3 reducers x 3 bucket
// sizes, forward and backward). Each DDP round is a p50 and a p90 point, each reducer entry a p50
// and a mean point per chart.
constexpr int kFixtureCharts = 2 + 2 + 2 + 2;
constexpr int kFixturePoints = 2 * 2 + 2 * (3 + 2 + 1) + 2 * (2 + 1) + 2 * 2 * 3 * 3;
// Series, each with a marker in its chart's legend: gradwire p50 and p90 for a model with DDP
// rounds (and pytorch p50 and p90 with the reference), two per reducer and chart.
constexpr int kFixtureSeries = 2 + (4 + 2) + (2 + 2) + 2 * 2 * 3;

std::string all_fixtures() {
  return "'" + fixture("ddp_gradwire.json") + "' '" + fixture("ddp_gradwire_reference.json") +
         "' '" + fixture("ddp_pytorch_benchmark.json") + "' '" + fixture("reducers.json") + "'";
}

// A fresh directory under the test's temporary directory, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = ::testing::TempDir() + "gradwire_report_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

BenchRun run_report(const std::string& arguments) {
  return run_bench("report " + arguments, "", 60, true);
}

// Chromium's DOM of `page` after its scripts ran, with a profile of its own in `scratch`.
BenchRun dump_dom(const std::string& page, const ScratchDir& scratch) {
  return run_shell(std::string(kChromium) +
                       " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                       " --disable-background-networking --disable-component-update --disable-sync"
                       " --user-data-dir='" +
                       scratch.file("chromium-profile") + "' --dump-dom 'file://" + page + "'",
                   60, true);
}

// The <body ...> start tag of a dumped DOM: where the renderer records what it drew.
std::string body_tag(const std::string& html) {
  const auto begin = html.find("<body");
  return begin == std::string::npos ? "" : html.substr(begin, html.find('>', begin) - begin + 1);
}

#define SKIP_WITHOUT_CHROMIUM()                                                        \
  if (access(kChromium, X_OK) != 0) {                                                  \
    GTEST_SKIP() << kChromium                                                          \
                 << " is absent: scripts/setup installs it (Debian package chromium)"; \
  }

TEST(ReportRunTest, WritesOnePageForAllFixtures) {
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path().empty());
  const std::string page = scratch.file("report.html");
  const BenchRun run = run_report(all_fixtures() + " --html '" + page + "' --title 'Fixtures'");
  ASSERT_EQ(run.exit_code, 0) << run.output << run.errors;
  EXPECT_NE(run.output.find("wrote " + std::to_string(kFixtureCharts) + " charts from 4 files to " +
                            page),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("open file://" + page), std::string::npos) << run.output;
  const std::string html = read_text_file(page);
  EXPECT_NE(html.find("<title>Fixtures</title>"), std::string::npos);
  EXPECT_NE(html.find("data-charts-expected=\"" + std::to_string(kFixtureCharts) + "\""),
            std::string::npos);
  EXPECT_NE(html.find("<h2>" + fixture("reducers.json") + "</h2>"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(page + ".tmp"));
}

TEST(ReportRunTest, RefusesAFileItCannotDrawAndWritesNothing) {
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path().empty());
  const std::string collectives = scratch.file("collectives.json");
  std::ofstream(collectives) << R"({"schema_version": 2, "benchmark": "collectives"})";
  const std::string page = scratch.file("report.html");
  const BenchRun run =
      run_report("'" + fixture("reducers.json") + "' '" + collectives + "' --html '" + page + "'");
  EXPECT_EQ(run.exit_code, 1) << run.output << run.errors;
  EXPECT_NE(run.errors.find("gradwire-bench report: " + collectives +
                            " holds results of gradwire-bench collectives"),
            std::string::npos)
      << run.errors;
  EXPECT_FALSE(std::filesystem::exists(page));

  const BenchRun missing = run_report("'" + scratch.file("none.json") + "' --html x.html");
  EXPECT_NE(missing.exit_code, 0);
  const BenchRun no_html = run_report("'" + fixture("reducers.json") + "'");
  EXPECT_NE(no_html.exit_code, 0);
  EXPECT_NE((no_html.output + no_html.errors).find("--html"), std::string::npos);
}

TEST(ReportBrowserTest, ChromiumDrawsEveryChart) {
  SKIP_WITHOUT_CHROMIUM();
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path().empty());
  const std::string page = scratch.file("report.html");
  const BenchRun report = run_report(all_fixtures() + " --html '" + page + "'");
  ASSERT_EQ(report.exit_code, 0) << report.output << report.errors;

  const BenchRun dom = dump_dom(page, scratch);
  ASSERT_EQ(dom.exit_code, 0) << dom.errors;
  const std::string& html = dom.output;
  const std::string body = body_tag(html);
  EXPECT_EQ(body.find("data-chart-error"), std::string::npos) << html;
  EXPECT_NE(body.find("data-charts-drawn=\"" + std::to_string(kFixtureCharts) + "\""),
            std::string::npos)
      << html;
  EXPECT_NE(body.find("data-points-drawn=\"" + std::to_string(kFixturePoints) + "\""),
            std::string::npos)
      << html;
  // One SVG per chart, with lines and markers; the error box stayed hidden.
  EXPECT_EQ(count(html, "<svg"), static_cast<std::size_t>(kFixtureCharts));
  EXPECT_GE(count(html, "<path"), 4u);
  EXPECT_EQ(count(html, "<circle"), static_cast<std::size_t>(kFixturePoints + kFixtureSeries));
  EXPECT_NE(html.find("<div id=\"chart-error\" class=\"chart-error\" hidden=\"\"></div>"),
            std::string::npos);
  EXPECT_NE(html.find("resnet18, batch size 8"), std::string::npos);
  EXPECT_NE(html.find("implementation pytorch, configuration no ddp (p50)"), std::string::npos);
  EXPECT_NE(html.find("backward latency: resnet50, batch size 32, 2 ranks"), std::string::npos);
}

TEST(ReportBrowserTest, HostileNamesAreTextNotMarkup) {
  SKIP_WITHOUT_CHROMIUM();
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path().empty());
  std::string text = read_text_file(fixture("ddp_pytorch_benchmark.json"));
  const std::string model = "\"model\": \"resnet50\"";
  text.replace(text.find(model), model.size(),
               R"("model": "</script><script>document.title='pwned'</script><!--")");
  const std::string input = scratch.file("hostile.json");
  std::ofstream(input) << text;
  const std::string page = scratch.file("report.html");
  ASSERT_EQ(run_report("'" + input + "' --html '" + page + "'").exit_code, 0);

  const BenchRun dom = dump_dom(page, scratch);
  ASSERT_EQ(dom.exit_code, 0) << dom.errors;
  const std::string body = body_tag(dom.output);
  EXPECT_EQ(body.find("data-chart-error"), std::string::npos) << dom.output;
  EXPECT_NE(body.find("data-charts-drawn=\"2\""), std::string::npos) << dom.output;
  // The injected script never ran: the page keeps its title.
  EXPECT_NE(dom.output.find("<h2>ddp: model &lt;/script&gt;&lt;script&gt;document.title='pwned'"),
            std::string::npos)
      << dom.output;
  EXPECT_NE(dom.output.find("<title>gradwire-bench report</title>"), std::string::npos);
}

TEST(ReportBrowserTest, AScriptErrorShowsTheErrorBox) {
  SKIP_WITHOUT_CHROMIUM();
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path().empty());
  const std::string good = scratch.file("good.html");
  ASSERT_EQ(run_report("'" + fixture("reducers.json") + "' --html '" + good + "'").exit_code, 0);
  // Break the data: "charts" is no longer a list.
  std::string html = read_text_file(good);
  const std::string charts = "\"charts\":[";
  ASSERT_NE(html.find(charts), std::string::npos);
  html.replace(html.find(charts), charts.size(), "\"charts\":5,\"was\":[");
  const std::string broken = scratch.file("broken.html");
  std::ofstream(broken) << html;

  const BenchRun dom = dump_dom(broken, scratch);
  ASSERT_EQ(dom.exit_code, 0) << dom.errors;
  const std::string body = body_tag(dom.output);
  EXPECT_NE(body.find("data-chart-error=\"the chart data has no list of charts\""),
            std::string::npos)
      << dom.output;
  EXPECT_NE(body.find("data-charts-drawn=\"0\""), std::string::npos) << body;
  EXPECT_NE(dom.output.find(
                "<div id=\"chart-error\" class=\"chart-error\">The charts could not be drawn"),
            std::string::npos)
      << dom.output;
}

}  // namespace
}  // namespace report_run_test
}  // namespace gradwire::bench
