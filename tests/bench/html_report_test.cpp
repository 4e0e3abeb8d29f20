// The report page as text: escaping of the embedded data and of the facts, that the page loads
// nothing from outside, the facts about each document, and writing the file.
#include "report/html_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bench_process.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace html_report_test {
namespace {

using namespace testing;  // bench_process.h

// A string that would end the data's <script> element or open a comment if written raw.
const std::string kHostile = "</script><script>alert(1)</script><!-- & \"quoted\" 'single'";

// The text between <script type="application/json" id="chart-data"> and its </script>.
std::string embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"chart-data\">";
  const auto begin = html.find(open);
  if (begin == std::string::npos) return "";
  const auto start = begin + open.size();
  return html.substr(start, html.find("</script>", start) - start);
}

TEST(EscapeHtmlTest, ReplacesMarkupCharacters) {
  EXPECT_EQ(escape_html("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(escape_html("plain text 1.2"), "plain text 1.2");
}

TEST(JsonForScriptTest, NoStringCanEndTheScriptOrOpenAComment) {
  const nlohmann::json data = {{"name", kHostile}, {"list", {"<!--", "</SCRIPT >", "a>b&c"}}};
  const std::string text = json_for_script(data);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  EXPECT_NE(text.find("\\u003c/script\\u003e"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u003c!--"), std::string::npos) << text;
  // What JSON.parse reads back is the original.
  EXPECT_EQ(nlohmann::json::parse(text), data);
}

TEST(JsonForScriptTest, InvalidUtf8IsReplacedNotThrown) {
  const nlohmann::json data = {{"host", std::string("bad \xff byte")}};
  const std::string text = json_for_script(data);
  EXPECT_EQ(nlohmann::json::parse(text).at("host"), "bad \xEF\xBF\xBD byte");
}

TEST(ChartScriptTest, CannotEndItsOwnScriptElement) {
  const std::string script(chart_script());
  EXPECT_GT(script.size(), 1000u);
  EXPECT_NE(script.find("chartsDrawn"), std::string::npos);
  EXPECT_EQ(script.find("</"), std::string::npos);
  EXPECT_EQ(script.find("<!--"), std::string::npos);
}

TEST(RenderHtmlPageTest, HostileTextIsEscapedEverywhere) {
  nlohmann::json document = fixture_json("ddp_gradwire.json");
  document["benchmark_results"][0]["model"] = kHostile;
  document["metadata"]["hostname"] = kHostile;
  const std::string html =
      render_html_page(build_report_page({{"in.json", document}}, "Title " + kHostile));
  // The one <script> pair of the data, the one of the renderer, nothing injected.
  EXPECT_EQ(count(html, "<script"), 2u) << html;
  EXPECT_EQ(count(html, "</script>"), 2u) << html;
  EXPECT_EQ(count(html, "<!--"), 0u) << html;
  EXPECT_NE(html.find("<title>Title &lt;/script&gt;&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!-- &amp; "
                      "&quot;quoted&quot; &#39;single&#39;</td>"),
            std::string::npos)
      << html;
  const nlohmann::json data = nlohmann::json::parse(embedded_data(html));
  EXPECT_EQ(data.at("title"), "Title " + kHostile);
  EXPECT_EQ(data.at("charts")[0].at("title"), "ddp: model " + kHostile + ", batch size 32");
}

TEST(RenderHtmlPageTest, SelfContainedWithDataAndRenderer) {
  const ReportPage page = build_report_page(
      {{"g.json", fixture_json("ddp_gradwire.json")}, {"r.json", fixture_json("reducers.json")}},
      "T");
  ASSERT_EQ(page.charts.size(), 4u);
  const std::string html = render_html_page(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("content=\"default-src 'none'; script-src 'unsafe-inline'; style-src "
                      "'unsafe-inline'\""),
            std::string::npos);
  EXPECT_NE(html.find("<body data-charts-expected=\"4\">"), std::string::npos);
  EXPECT_NE(html.find("<div id=\"chart-error\" class=\"chart-error\" hidden></div>"),
            std::string::npos);
  EXPECT_NE(html.find(std::string(chart_script())), std::string::npos);
  // Nothing is loaded from anywhere: no src or href attributes, no stylesheets or imports.
  for (const char* loader : {" src=", " href=", "<link", "@import", "url(", "<iframe"}) {
    EXPECT_EQ(html.find(loader), std::string::npos) << loader;
  }
  const nlohmann::json data = nlohmann::json::parse(embedded_data(html));
  ASSERT_EQ(data.at("charts").size(), 4u);
  EXPECT_EQ(data.at("charts")[0], to_json(page.charts[0]));
  EXPECT_EQ(data.at("charts")[3].at("title"), "backward latency: resnet50, batch size 32, 2 ranks");
}

TEST(DescribeDocumentTest, FactsFromTheHarnessMetadata) {
  const ReportSource source =
      describe_document(fixture_json("ddp_gradwire_reference.json"), "r.json");
  EXPECT_EQ(source.name, "r.json");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"benchmark", "ddp, gradwire"},
      {"gradwire", "0.1.0"},
      {"torch", "1.13.0"},
      {"backend", "gloo"},
      {"ranks", "4 x 1 thread"},
      {"host", "fixture"},
      {"CPU", "Test CPU, 4 cores"},
      {"date", "2026-11-22T00:00:00Z"},
      {"command", "gradwire-bench ddp --reference pytorch --json ddp_gradwire_reference.json"},
      {"settings", "preset quick, bucket_size 25, image_size 64, warmup 5, iterations 2"},
      {"reference", "pytorch 1.13.0a0"}};
  EXPECT_EQ(source.facts, expected);
}

// ps_reference.py writes torch_version only; settings may hold nulls. No fact prints a language's
// null ("reference: pytorch None" was the report of a ps run).
TEST(DescribeDocumentTest, NoFactPrintsANull) {
  const nlohmann::json document = nlohmann::json::parse(R"({
    "schema_version": 2, "benchmark": "ps", "implementation": "gradwire",
    "metadata": {"backend": "shared memory", "torch_cuda": null, "ranks": 2},
    "settings": {"preset": "quick", "staleness": null, "threads": {"ps": 1, "local": null}},
    "reference": {"implementation": "pytorch", "torch_version": "1.13.0a0"}})");
  const ReportSource source = describe_document(document, "ps.json");
  bool found = false;
  for (const auto& [label, value] : source.facts) {
    for (const char* null_word : {"None", "null", "nullptr", "nil"}) {
      EXPECT_EQ(value.find(null_word), std::string::npos) << label << ": " << value;
    }
    if (label == "reference") {
      EXPECT_EQ(value, "pytorch 1.13.0a0");
      found = true;
    }
    if (label == "backend") EXPECT_EQ(value, "shared memory");
    if (label == "settings") {
      EXPECT_EQ(value, "preset quick, staleness unset, threads {local unset, ps 1}");
    }
  }
  EXPECT_TRUE(found);
  nlohmann::json versionless = document;
  versionless["reference"].erase("torch_version");
  for (const auto& [label, value] : describe_document(versionless, "ps.json").facts) {
    if (label == "reference") EXPECT_EQ(value, "pytorch");
  }
}

TEST(DescribeDocumentTest, FactsOfFilesWithoutMetadata) {
  const ReportSource upstream =
      describe_document(fixture_json("ddp_pytorch_benchmark.json"), "p.json");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"benchmark", "ddp (PyTorch benchmark.py)"},
      {"torch", "1.4.0a0+05140f0"},
      {"backend", "nccl"},
      {"settings", "bucket_size 25"}};
  EXPECT_EQ(upstream.facts, expected);

  const ReportSource reducers = describe_document(fixture_json("reducers.json"), "red.json");
  ASSERT_GE(reducers.facts.size(), 2u);
  EXPECT_EQ(reducers.facts[0], std::make_pair(std::string("benchmark"), std::string("reducers")));
  EXPECT_EQ(reducers.facts.back().first, "settings");
  EXPECT_NE(reducers.facts.back().second.find("bucket_sizes_mb 1 5 25"), std::string::npos);
  EXPECT_NE(reducers.facts.back().second.find("model resnet50"), std::string::npos);

  nlohmann::json spaced = fixture_json("reducers.json");
  spaced["metadata"]["command"] = {"gradwire-bench", "report", "--title", "two words"};
  bool found = false;
  for (const auto& [label, value] : describe_document(spaced, "s.json").facts) {
    if (label == "command") {
      EXPECT_EQ(value, "gradwire-bench report --title 'two words'");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(BuildReportPageTest, RefusalNamesTheSource) {
  const nlohmann::json collectives = {{"schema_version", kSchemaVersion},
                                      {"benchmark", "collectives"}};
  try {
    build_report_page({{"a.json", fixture_json("reducers.json")}, {"b.json", collectives}}, "T");
    FAIL() << "a collectives document was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("b.json"), std::string::npos) << e.what();
  }
}

TEST(WriteHtmlReportTest, WritesThePageAndNoTemporaryFile) {
  const std::string path =
      ::testing::TempDir() + "report_write_" + std::to_string(getpid()) + ".html";
  write_html_report(path, {fixture_json("ddp_gradwire.json"), fixture_json("reducers.json")},
                    "Run");
  const std::string html = read_text_file(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::remove(path.c_str());
  EXPECT_NE(html.find("<h1>Run</h1>"), std::string::npos);
  EXPECT_NE(html.find("<h2>gradwire-bench ddp #1</h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("<h2>gradwire-bench reducers #2</h2>"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(embedded_data(html)).at("charts").size(), 4u);
}

// Below a regular file no directory can be created, not even by root.
TEST(WriteHtmlReportTest, UnwritablePathIsAnErrorNamingIt) {
  const std::string file = ::testing::TempDir() + "report_not_a_dir_" + std::to_string(getpid());
  { std::ofstream(file) << "x"; }
  const std::string page = file + "/page.html";
  try {
    write_html_report(page, {fixture_json("reducers.json")}, "T");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(page), std::string::npos);
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace html_report_test
}  // namespace gradwire::bench
