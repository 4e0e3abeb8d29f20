#include "harness/table.h"

#include <cctype>
#include <cstdio>
#include <string>

#include "gradwire/common/error.h"
#include "harness/stats.h"

namespace gradwire::bench {

namespace {

std::string pad(const std::string& text, const Column& column) {
  const auto width = static_cast<std::size_t>(column.width);
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return column.align == Align::kRight ? fill + text : text + fill;
}

}  // namespace

std::string Table::header() const {
  std::string line;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) line += "  ";
    line += pad(columns_[i].header, columns_[i]);
  }
  return line;
}

std::string Table::rule() const {
  std::size_t width = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    width += static_cast<std::size_t>(columns_[i].width) + (i > 0 ? 2 : 0);
  }
  return std::string(width, '-');
}

std::string Table::row(const std::vector<std::string>& cells) const {
  if (cells.size() != columns_.size()) {
    throw InvalidArgument("table row has " + std::to_string(cells.size()) + " cells for " +
                          std::to_string(columns_.size()) + " columns");
  }
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += "  ";
    line += pad(cells[i], columns_[i]);
  }
  return line;
}

std::string format_fixed(double value, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", precision, value);
  return buffer;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  const bool whole = value == static_cast<double>(static_cast<std::uint64_t>(value));
  return (whole ? format_fixed(value, 0) : format_fixed(value, 1)) + " " + kUnits[unit];
}

std::uint64_t parse_bytes(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string unit = text.substr(digits);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    shift = 10;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    shift = 20;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    shift = 30;
  }
  if (digits == 0 || digits > 12 || shift < 0) {
    throw InvalidArgument("'" + text + "' is not a byte size: write e.g. 4096, 64K, 256M or 1G");
  }
  const std::uint64_t value = std::stoull(text.substr(0, digits)) << shift;
  if (value == 0) throw InvalidArgument("byte size '" + text + "' must be positive");
  return value;
}

std::string pad_left(const std::string& text, int width) {
  const auto size = static_cast<std::size_t>(width);
  return text.size() >= size ? text : std::string(size - text.size(), ' ') + text;
}

std::string pad_right(const std::string& text, int width) {
  const auto size = static_cast<std::size_t>(width);
  return text.size() >= size ? text : text + std::string(size - text.size(), ' ');
}

std::string trim_right(std::string text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string percentile_name(int percentile) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "  p%02d: ", percentile);
  return buffer;
}

const std::vector<int>& training_percentiles() {
  static const std::vector<int> kPercentiles = {50, 75, 90, 95};
  return kPercentiles;
}

std::string RateColumns::header() const {
  return pad_left(time_header, 9) + " " + pad_left("ex/sec", rate_width);
}

std::string RateColumns::cell(double seconds, double examples_per_second) const {
  const std::string time = format_time ? format_time(seconds) : format_fixed(seconds, 4);
  return pad_left(time + "s", 9) + " " +
         pad_left(format_fixed(examples_per_second, rate_decimals) + "/s", rate_width);
}

std::string RateColumns::cells(const std::vector<double>& seconds, double examples,
                               const std::vector<int>& percentiles) const {
  std::string text;
  for (const auto& row : rate_percentiles(seconds, examples, percentiles)) {
    text += percentile_name(row.percentile) + cell(row.seconds, row.examples_per_second);
  }
  return text;
}

std::string RateColumns::headers(std::size_t count) const {
  std::string line;
  for (std::size_t i = 0; i < count; ++i) line += std::string(7, ' ') + header();
  return line;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace gradwire::bench
