// A benchmark case's option table: one entry per flag, naming the Flags member it parses into,
// the Settings field it sets, the field's value in the presets where it differs from the
// default, and a line of help. Each default is written once: the default preset's is the
// Settings field's initialiser, the other presets' are in the table; --help shows them from
// there ("trainer processes [8; quick 2]") and resolve() applies them. docs/benchmarks.md
// "Adding a benchmark".
//
// Flags hold what the user gave (std::optional, or an empty string or list, for "not given");
// Settings are what runs. resolve() is pure: the preset's defaults with the given flags over them;
// the case checks the result and fills what depends on more than one flag. The table is built
// once (a function-local static const) and shared read-only by attach() and resolve().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::bench {

// A default in the default preset, and the presets where it differs.
template <class T>
struct PresetDefaults {
  T value;
  std::vector<std::pair<std::string, T>> others;  // e.g. {{"quick", 2}}

  const T& in(const std::string& preset) const {
    for (const auto& [name, other] : others) {
      if (name == preset) return other;
    }
    return value;
  }
};

// Pure: a default as --help shows it: numbers as printed, lists joined by ", ".
template <class T>
std::string default_text(const T& value) {
  std::ostringstream text;
  text << value;
  return text.str();
}
template <class T>
std::string default_text(const std::vector<T>& values) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : ", ") + default_text(value);
  return text;
}

// Pure: `help` followed by the defaults, "[8; quick 2]", or "[8]" when every preset agrees.
template <class T>
std::string help_with_defaults(const std::string& help, const PresetDefaults<T>& defaults) {
  std::string text = help + " [" + default_text(defaults.value);
  for (const auto& [name, other] : defaults.others) text += "; " + name + " " + default_text(other);
  return text + "]";
}

// Extra CLI11 settings of one option (checks, a delimiter...), and the bound on a number that
// the check sets: resolve() holds the resolved value to it too (a preset's default, or a value set
// in Flags without the command line), so a case does not write the check a second time.
struct ConfigureOption {
  enum class Bound { kNone, kPositive, kNonNegative };
  std::function<void(CLI::Option&)> cli;
  Bound bound = Bound::kNone;

  ConfigureOption(std::nullptr_t = nullptr) {}  // NOLINT: no settings
  template <class F, class = std::enable_if_t<std::is_invocable_v<F, CLI::Option&>>>
  ConfigureOption(F configure, Bound bound = Bound::kNone)  // NOLINT: a lambda converts
      : cli(std::move(configure)), bound(bound) {}

  // Throws InvalidArgument "FLAG must be positive (got V)" when `value` breaks the bound.
  template <class T>
  void check(const std::string& flag, const T& value) const {
    if constexpr (std::is_arithmetic_v<T>) {
      const bool fine = bound == Bound::kPositive      ? value > 0
                        : bound == Bound::kNonNegative ? value >= 0
                                                       : true;
      if (fine) return;
      throw InvalidArgument(flag.substr(flag.rfind(',') + 1) + " must be " +
                            (bound == Bound::kPositive ? "positive" : "non-negative") + " (got " +
                            default_text(value) + ")");
    }
  }
};

// The usual ConfigureOptions.
inline const ConfigureOption positive_number{
    [](CLI::Option& option) { option.check(CLI::PositiveNumber); },
    ConfigureOption::Bound::kPositive};
inline const ConfigureOption non_negative_number{
    [](CLI::Option& option) { option.check(CLI::NonNegativeNumber); },
    ConfigureOption::Bound::kNonNegative};
inline void comma_separated(CLI::Option& option) { option.delimiter(','); }

template <class Flags, class Settings>
class OptionTable {
 public:
  // `presets`: the preset names, the default one first; `preset_help`: --preset's help.
  OptionTable(std::vector<std::string> presets, const std::string& preset_help)
      : presets_(std::move(presets)) {
    entries_.push_back({[names = presets_, preset_help](CLI::App& command, Flags& flags) {
                          command.add_option("--preset", flags.preset, preset_help)
                              ->check(CLI::IsMember(names))
                              ->capture_default_str();
                        },
                        nullptr});
  }

  // A flag whose default depends on the preset. `given` holds the flag, an std::optional or a
  // string or list (empty: not given); `apply` sets the Settings from the given value, else from
  // the preset's default, once it met configure's bound.
  template <class T, class Given>
  OptionTable& preset_option(const std::string& flag, Given Flags::*given,
                             PresetDefaults<T> defaults, const std::string& help,
                             std::function<void(Settings&, const T&)> apply,
                             ConfigureOption configure = nullptr) {
    entries_.push_back(
        {[flag, given, help = help_with_defaults(help, defaults), configure](CLI::App& command,
                                                                             Flags& flags) {
           CLI::Option* option = command.add_option(flag, flags.*given, help);
           if (configure.cli) configure.cli(*option);
         },
         [flag, given, defaults, apply, configure](const Flags& flags, Settings& settings) {
           const Given& value = flags.*given;
           const T chosen = is_given(value) ? T(given_value(value)) : defaults.in(settings.preset);
           configure.check(flag, chosen);
           apply(settings, chosen);
         }});
    return *this;
  }

  // preset_option that copies the value into `field`. The default preset's value is the
  // field's initialiser in Settings (its documented default); `others` are the presets where it
  // differs, e.g. {{"quick", 2}}.
  template <class Given, class T>
  OptionTable& preset_value(const std::string& flag, Given Flags::*given, T Settings::*field,
                            std::vector<std::pair<std::string, T>> others, const std::string& help,
                            ConfigureOption configure = nullptr) {
    return preset_option<T, Given>(
        flag, given, PresetDefaults<T>{Settings{}.*field, std::move(others)}, help,
        [field](Settings& settings, const T& value) { settings.*field = value; },
        std::move(configure));
  }

  // A Settings value that depends on the preset but has no flag (e.g. a time budget).
  template <class T>
  OptionTable& preset_setting(PresetDefaults<T> defaults,
                              std::function<void(Settings&, const T&)> apply) {
    entries_.push_back({nullptr, [defaults, apply](const Flags&, Settings& settings) {
                          apply(settings, defaults.in(settings.preset));
                        }});
    return *this;
  }

  // A flag the case reads from Flags itself (no preset default), declared in table order.
  template <class Given>
  OptionTable& option(const std::string& flag, Given Flags::*given, const std::string& help,
                      ConfigureOption configure = nullptr) {
    entries_.push_back({[flag, given, help, configure](CLI::App& command, Flags& flags) {
                          CLI::Option* option = command.add_option(flag, flags.*given, help);
                          if (configure.cli) configure.cli(*option);
                        },
                        nullptr});
    return *this;
  }

  // An on/off flag (false unless given).
  OptionTable& switch_flag(const std::string& flag, bool Flags::*given, const std::string& help) {
    entries_.push_back({[flag, given, help](CLI::App& command, Flags& flags) {
                          command.add_flag(flag, flags.*given, help);
                        },
                        nullptr});
    return *this;
  }

  // Any other declaration, in table order (e.g. flags bound to members the case resolves).
  OptionTable& declare(std::function<void(CLI::App&, Flags&)> attach) {
    entries_.push_back({std::move(attach), nullptr});
    return *this;
  }

  // Declares every entry on `command`, binding it to `flags` (which must outlive the parse).
  void attach(CLI::App& command, Flags& flags) const {
    for (const auto& entry : entries_) {
      if (entry.attach) entry.attach(command, flags);
    }
  }

  // Pure: Settings of flags.preset with the given flags applied. Throws InvalidArgument for an
  // unknown preset.
  Settings resolve(const Flags& flags) const {
    bool known = false;
    std::string names;
    for (const auto& name : presets_) {
      known = known || name == flags.preset;
      names += (names.empty() ? "" : " or ") + name;
    }
    if (!known) throw InvalidArgument("unknown preset '" + flags.preset + "': use " + names);
    Settings settings;
    settings.preset = flags.preset;
    for (const auto& entry : entries_) {
      if (entry.resolve) entry.resolve(flags, settings);
    }
    return settings;
  }

  const std::vector<std::string>& presets() const { return presets_; }

 private:
  template <class T>
  static bool is_given(const std::optional<T>& value) {
    return value.has_value();
  }
  template <class T>
  static bool is_given(const T& value) {
    return !value.empty();
  }
  template <class T>
  static const T& given_value(const std::optional<T>& value) {
    return *value;
  }
  template <class T>
  static const T& given_value(const T& value) {
    return value;
  }

  struct Entry {
    std::function<void(CLI::App&, Flags&)> attach;         // null: no flag
    std::function<void(const Flags&, Settings&)> resolve;  // null: the case reads the flag
  };
  std::vector<std::string> presets_;
  std::vector<Entry> entries_;
};

}  // namespace gradwire::bench
