// EnumNames: the names of an enum's values, written once, so that to_string and parse read one
// table (an unlisted value is named "unknown"; an unlisted text parses to nullopt).
//
//   constexpr EnumNames<Compression, 2> kNames{{{{Compression::kNone, "none"},
//                                                {Compression::kZstd, "zstd"}}}};
//   const char* to_string(Compression c) { return kNames.name(c); }
//
// Immutable (use it as a constexpr table); thread safe.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace gradwire {

template <typename Enum, std::size_t N>
struct EnumNames {
  std::array<std::pair<Enum, const char*>, N> pairs;

  constexpr const char* name(Enum value, const char* unlisted = "unknown") const {
    for (const auto& [listed, text] : pairs) {
      if (listed == value) return text;
    }
    return unlisted;
  }
  std::optional<Enum> parse(std::string_view text) const {
    for (const auto& [listed, listed_text] : pairs) {
      if (text == listed_text) return listed;
    }
    return std::nullopt;
  }
};

}  // namespace gradwire
