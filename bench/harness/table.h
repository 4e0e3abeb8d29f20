// Fixed-width text tables, printed a line at a time so rows appear as they are measured (as
// nccl-tests prints them). Pure string formatting; the caller chooses the stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradwire::bench {

enum class Align { kLeft, kRight };

struct Column {
  std::string header;
  int width = 10;  // characters; longer cells are printed whole and push the rest right
  Align align = Align::kRight;
};

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // The column headers, padded like the rows.
  std::string header() const;
  // A line of dashes as wide as the table.
  std::string rule() const;
  // One row; throws InvalidArgument unless cells.size() equals the number of columns.
  std::string row(const std::vector<std::string>& cells) const;

 private:
  std::vector<Column> columns_;
};

// Pure text helpers of the table printers: `text` padded with spaces to `width` (longer text is
// kept whole), trailing spaces removed, and `items` joined with `separator` ("a,b").
std::string pad_left(const std::string& text, int width);
std::string pad_right(const std::string& text, int width);
std::string trim_right(std::string text);
std::string join(const std::vector<std::string>& items, const std::string& separator);
// The label of a percentile cell in the training tables: "  p50: ".
std::string percentile_name(int percentile);
// The training tables' percentiles (PyTorch's DDP benchmarks'): 50, 75, 90, 95.
const std::vector<int>& training_percentiles();

// A time and the rate it implies as the training tables (ddp, hybrid, diff) print them:
// "  0.2150s    37.2/s", the time 9 characters wide.
struct RateColumns {
  std::string time_header;  // "sec/iter", "sec/epoch"
  int rate_width = 9;
  int rate_decimals = 1;
  std::string (*format_time)(double seconds) = nullptr;  // null: 4 decimals

  std::string header() const;  // "sec/iter    ex/sec", as wide as cell()
  std::string cell(double seconds, double examples_per_second) const;
  // percentile_name and cell() of each percentile of `seconds` (rate_percentiles of `examples`);
  // headers(n): 7 spaces and header() n times, above n of them.
  std::string cells(const std::vector<double>& seconds, double examples,
                    const std::vector<int>& percentiles) const;
  std::string headers(std::size_t count) const;
};

// `value` with `precision` digits after the point ("12.35").
std::string format_fixed(double value, int precision);
// A byte count in binary units: "8 B", "4 KiB", "1.5 MiB", "256 MiB", "2 GiB".
std::string format_bytes(std::uint64_t bytes);
// Parses "4096", "64K", "256M", "1G" (binary multiples, as nccl-tests' -b/-e; "KiB", "MB" and
// lower case are accepted too). Throws InvalidArgument naming `text` when malformed or zero.
std::uint64_t parse_bytes(const std::string& text);

}  // namespace gradwire::bench
