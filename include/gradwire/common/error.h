// gradwire's error policy (docs/errors.md): unexpected failures are exceptions derived from
// gradwire::Error whose message says what happened and what to do next; expected outcomes are
// values. Invariants use GRADWIRE_CHECK*, which throws InternalError with the operands printed.
// Nothing here aborts the process.
#pragma once

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradwire {

// Base of every exception gradwire throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A caller passed a value that cannot work (wrong shape, dtype, rank out of range...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The job's configuration (environment variables, options) is missing or inconsistent.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A blocking call did not finish within its timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer went away (connection closed, process exited) during an operation.
// dead_ranks() lists the ranks known to be gone; it may be empty when the peer is remote.
class PeerLostError : public Error {
 public:
  PeerLostError(const std::string& message, std::vector<int> dead_ranks)
      : Error(message), dead_ranks_(std::move(dead_ranks)) {}
  const std::vector<int>& dead_ranks() const { return dead_ranks_; }

 private:
  std::vector<int> dead_ranks_;
};

// Any other failure reported by a transport or backend.
class BackendError : public Error {
 public:
  using Error::Error;
};

// Stored data is damaged (a CRC mismatch, a truncated file, a header that contradicts itself):
// a RecordIO file (data::CorruptRecordsError adds where) or a parameter-server checkpoint. The
// message names the file and the byte where the damage was found.
class CorruptDataError : public Error {
 public:
  using Error::Error;
};

// An internal invariant was broken: a gradwire bug. Thrown by GRADWIRE_CHECK*.
class InternalError : public Error {
 public:
  using Error::Error;
};

// "1.25 s", "250 ms": how long something waited, for messages.
std::string format_duration(std::chrono::milliseconds duration);

namespace detail {
[[noreturn]] void throw_check_failure(const char* file, int line, const std::string& what);

template <typename A, typename B>
std::string describe_operands(const char* expr, const A& a, const B& b) {
  std::ostringstream out;
  out << expr << " (" << a << " vs " << b << ")";
  return out.str();
}
}  // namespace detail
}  // namespace gradwire

#define GRADWIRE_CHECK(cond)                                                         \
  do {                                                                               \
    if (!(cond)) ::gradwire::detail::throw_check_failure(__FILE__, __LINE__, #cond); \
  } while (0)

#define GRADWIRE_CHECK_OP_(a, b, op)                                               \
  do {                                                                             \
    const auto& gw_a_ = (a);                                                       \
    const auto& gw_b_ = (b);                                                       \
    if (!(gw_a_ op gw_b_))                                                         \
      ::gradwire::detail::throw_check_failure(                                     \
          __FILE__, __LINE__,                                                      \
          ::gradwire::detail::describe_operands(#a " " #op " " #b, gw_a_, gw_b_)); \
  } while (0)

#define GRADWIRE_CHECK_EQ(a, b) GRADWIRE_CHECK_OP_(a, b, ==)
#define GRADWIRE_CHECK_NE(a, b) GRADWIRE_CHECK_OP_(a, b, !=)
#define GRADWIRE_CHECK_LT(a, b) GRADWIRE_CHECK_OP_(a, b, <)
#define GRADWIRE_CHECK_LE(a, b) GRADWIRE_CHECK_OP_(a, b, <=)
#define GRADWIRE_CHECK_GE(a, b) GRADWIRE_CHECK_OP_(a, b, >=)
