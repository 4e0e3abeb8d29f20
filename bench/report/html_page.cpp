#include "report/html_page.h"

#include <map>

namespace gradwire::bench {

namespace {

// Inline scripts and styles only: the page may load nothing, from the network or from disk.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'";

constexpr const char* kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 1040px; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin: 0.2em 0; }
.note { color: #666; font-size: 0.9em; }
.sources { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr));
           gap: 0.6em; margin: 1em 0; }
.source { border: 1px solid #ddd; border-radius: 4px; padding: 0.3em 0.6em; font-size: 0.8em; }
.source h2 { font-size: 1em; word-break: break-all; }
.source th { text-align: left; font-weight: 600; padding-right: 0.8em; vertical-align: top; }
.source td { word-break: break-word; }
.chart { border: 1px solid #ddd; border-radius: 4px; margin: 1em 0; padding: 0.6em 0.8em; }
.chart .subtitle { color: #666; font-size: 0.85em; margin: 0 0 0.4em; word-break: break-all; }
.chart svg { width: 100%; max-width: 900px; height: auto; display: block; }
.chart svg text { font-family: inherit; font-size: 12px; fill: #333; }
.chart .axis line, .chart .axis path { stroke: #444; }
.chart .grid line { stroke: #e4e4e4; }
.chart circle:hover { stroke: #000; stroke-width: 2; }
.chart-error { border: 2px solid #b00020; background: #fdecea; color: #b00020;
               padding: 0.6em 0.8em; border-radius: 4px; white-space: pre-wrap; }
)css";

void append_sources(std::string& html, const std::vector<ReportSource>& sources) {
  html += "<section class=\"sources\">\n";
  for (const auto& source : sources) {
    html += "<div class=\"source\"><h2>" + escape_html(source.name) + "</h2><table>\n";
    for (const auto& [label, value] : source.facts) {
      html += "<tr><th>" + escape_html(label) + "</th><td>" + escape_html(value) + "</td></tr>\n";
    }
    for (const auto& [label, target] : source.links) {
      html += "<tr><th>" + escape_html(label) + "</th><td><a href=\"" + escape_html(target) +
              "\">" + escape_html(target) + "</a></td></tr>\n";
    }
    html += "</table></div>\n";
  }
  html += "</section>\n";
}

// `text` with every character that `replacements` names replaced by its text.
std::string replace_characters(const std::string& text,
                               const std::map<char, std::string>& replacements) {
  std::string replaced;
  replaced.reserve(text.size());
  for (const char c : text) {
    const auto found = replacements.find(c);
    replaced += found == replacements.end() ? std::string(1, c) : found->second;
  }
  return replaced;
}

}  // namespace

std::string escape_html(const std::string& text) {
  return replace_characters(
      text, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}});
}

std::string json_for_script(const nlohmann::json& data) {
  // Outside strings JSON has no <, > or &, so escaping every one only touches string contents.
  return replace_characters(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                            {{'<', "\\u003c"}, {'>', "\\u003e"}, {'&', "\\u0026"}});
}

std::string render_html_page(const ReportPage& page) {
  nlohmann::json charts = nlohmann::json::array();
  for (const auto& chart : page.charts) charts.push_back(to_json(chart));
  const nlohmann::json data = {{"title", page.title}, {"charts", std::move(charts)}};

  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
          std::string(kContentSecurityPolicy) + "\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<meta name=\"generator\" content=\"gradwire-bench report\">\n";
  html += "<title>" + escape_html(page.title) + "</title>\n";
  html += "<style>" + std::string(kStyle) + "</style>\n</head>\n";
  html += "<body data-charts-expected=\"" + std::to_string(page.charts.size()) + "\">\n";
  html += "<h1>" + escape_html(page.title) + "</h1>\n";
  html += "<p class=\"note\">Drawn by gradwire-bench report from " +
          std::to_string(page.sources.size()) + (page.sources.size() == 1 ? " file" : " files") +
          ". This page is self-contained and works offline; hover over a point for its value."
          "</p>\n";
  append_sources(html, page.sources);
  html += "<div id=\"chart-error\" class=\"chart-error\" hidden></div>\n";
  html += "<main id=\"charts\"></main>\n";
  html +=
      "<noscript><p class=\"chart-error\">The charts are drawn by JavaScript, which is "
      "disabled.</p></noscript>\n";
  html += "<script type=\"application/json\" id=\"chart-data\">" + json_for_script(data) +
          "</script>\n";
  html += "<script>\n" + std::string(chart_script()) + "\n</script>\n";
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace gradwire::bench
