// A benchmark case's option table: one entry per flag, the Settings field it sets (or how it sets
// them), the field's value in the presets where it differs from the default, and a line of help.
// Each default is written once: the default preset's is the Settings field's initialiser, the
// other presets' are in the table; --help shows them from there ("trainer processes [8; quick 2]")
// and resolve() applies them. docs/benchmarks.md "Adding a benchmark".
//
// A table is one command line's: attach() binds its flags to values the table holds, which tell
// whether a flag was given; resolve() is pure: the preset's defaults with the given flags over
// them, applied in table order. The case then checks the result and fills what depends on more
// than one flag. Make a new table for each command line (the case's <case>_options()); copies
// share the given values. Checks of a single value (a positive number, a name from a list) are
// CLI11's, declared with the flag: the command line is the only way in.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
// Pure: `values` as printed, separated by `separator` ("1,2,4").
template <class T>
std::string joined(const std::vector<T>& values, const std::string& separator) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : separator) + default_text(value);
  return text;
}
template <class T>
std::string default_text(const std::vector<T>& values) {
  return joined(values, ", ");
}

// Pure: "1 thread", "2 threads": for the settings' one-line descriptions.
inline std::string counted(long long count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

// Pure: `help` followed by the defaults, "[8; quick 2]", or "[8]" when every preset agrees.
template <class T>
std::string help_with_defaults(const std::string& help, const PresetDefaults<T>& defaults) {
  std::string text = help + " [" + default_text(defaults.value);
  for (const auto& [name, other] : defaults.others) text += "; " + name + " " + default_text(other);
  return text + "]";
}

// Extra CLI11 settings of one option: a check, a delimiter...
using ConfigureOption = std::function<void(CLI::Option&)>;
inline void positive_number(CLI::Option& option) { option.check(CLI::PositiveNumber); }
inline void non_negative_number(CLI::Option& option) { option.check(CLI::NonNegativeNumber); }
inline void comma_separated(CLI::Option& option) { option.delimiter(','); }
// A comma-separated list of names from `names`.
inline ConfigureOption names_from(std::vector<std::string> names) {
  return [names](CLI::Option& option) { option.delimiter(',')->check(CLI::IsMember(names)); };
}

// Pure: the names of `known` that `wanted` lists, in known's order; all of them when `wanted` is
// empty.
inline std::vector<std::string> chosen_in_order(const std::vector<std::string>& wanted,
                                                const std::vector<std::string>& known) {
  std::vector<std::string> chosen;
  for (const auto& name : known) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      chosen.push_back(name);
    }
  }
  return chosen;
}

// Pure: `items` without repeats, in the order of their first appearance.
template <class T>
std::vector<T> distinct(const std::vector<T>& items) {
  std::vector<T> kept;
  for (const auto& item : items) {
    if (std::find(kept.begin(), kept.end(), item) == kept.end()) kept.push_back(item);
  }
  return kept;
}

// Pure: `items` ascending, without repeats.
template <class T>
std::vector<T> sorted_distinct(std::vector<T> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return items;
}

// How a preset flag holds "not given": no value, or an empty list (or, chosen, an empty string).
template <class T>
struct GivenOf {
  using type = std::optional<T>;
};
template <class T>
struct GivenOf<std::vector<T>> {
  using type = std::vector<T>;
};

template <class Settings>
class OptionTable {
 public:
  template <class T>
  using Apply = std::function<void(Settings&, const T&)>;

  // `presets`: the preset names, the default one first; `preset_help`: --preset's help.
  OptionTable(std::vector<std::string> presets, const std::string& preset_help) {
    auto preset = std::make_shared<std::string>(presets.front());
    add(
        "--preset", preset, preset_help,
        [presets](CLI::Option& option) {
          option.check(CLI::IsMember(presets))->capture_default_str();
        },
        [preset](Settings& settings) { settings.preset = *preset; });
  }

  // A flag whose default depends on the preset: `apply` sets the Settings from the given value,
  // else from the preset's default.
  template <class T, class Given = typename GivenOf<T>::type>
  OptionTable& preset_option(const std::string& flag, PresetDefaults<T> defaults,
                             const std::string& help, Apply<T> apply,
                             ConfigureOption configure = nullptr) {
    auto given = std::make_shared<Given>();
    return add(
        flag, given, help_with_defaults(help, defaults), configure,
        [given, defaults, apply](Settings& settings) {
          apply(settings, is_given(*given) ? T(value_of(*given)) : defaults.in(settings.preset));
        },
        [given] { return is_given(*given); });
  }

  // preset_option that copies the value into `field`. The default preset's value is the
  // field's initialiser in Settings (its documented default); `others` are the presets where it
  // differs, e.g. {{"quick", 2}}.
  template <class T, class Given = typename GivenOf<T>::type>
  OptionTable& preset_value(const std::string& flag, T Settings::*field,
                            std::vector<std::pair<std::string, T>> others, const std::string& help,
                            ConfigureOption configure = nullptr) {
    return preset_option<T, Given>(
        flag, PresetDefaults<T>{Settings{}.*field, std::move(others)}, help,
        [field](Settings& settings, const T& value) { settings.*field = value; }, configure);
  }

  // A Settings value that depends on the preset but has no flag (e.g. a time budget).
  template <class T>
  OptionTable& preset_setting(PresetDefaults<T> defaults, Apply<T> apply) {
    entries_.push_back(
        {"", nullptr,
         [defaults, apply](Settings& settings) { apply(settings, defaults.in(settings.preset)); },
         nullptr});
    return *this;
  }

  // A flag without preset defaults: `apply` gets its value, `initial` unless given.
  template <class T>
  OptionTable& option(const std::string& flag, const std::string& help, Apply<T> apply,
                      ConfigureOption configure = nullptr, T initial = T{}) {
    auto value = std::make_shared<T>(std::move(initial));
    return add(flag, value, help, configure,
               [value, apply](Settings& settings) { apply(settings, *value); });
  }

  // An option that copies its value into `field` (the field's initialiser unless given).
  template <class T>
  OptionTable& option(const std::string& flag, T Settings::*field, const std::string& help,
                      ConfigureOption configure = nullptr) {
    return option<T>(
        flag, help, [field](Settings& settings, const T& value) { settings.*field = value; },
        configure, Settings{}.*field);
  }

  // An on/off flag: sets `field` to `value` when given.
  OptionTable& switch_flag(const std::string& flag, bool Settings::*field, const std::string& help,
                           bool value = true) {
    auto given = std::make_shared<bool>(false);
    entries_.push_back(
        {flag, [flag, given, help](CLI::App& command) { command.add_flag(flag, *given, help); },
         [given, field, value](Settings& settings) {
           if (*given) settings.*field = value;
         },
         [given] { return *given; }});
    return *this;
  }

  // Declares every flag on `command`, in table order, bound to this table's values.
  void attach(CLI::App& command) const {
    for (const auto& entry : entries_) {
      if (entry.attach) entry.attach(command);
    }
  }

  // Parses `args` (the flags, without the program and subcommand) as gradwire-bench would, or
  // `flags` split at spaces: for tests. Throws CLI::ParseError (e.g. CLI::ValidationError) for
  // what CLI11 refuses.
  OptionTable& parse(std::vector<std::string> args) {
    CLI::App command;
    attach(command);
    std::reverse(args.begin(), args.end());
    command.parse(args);
    return *this;
  }
  OptionTable& parse(const std::string& flags) {
    std::vector<std::string> args;
    std::istringstream words(flags);
    for (std::string word; words >> word;) args.push_back(word);
    return parse(args);
  }

  // Pure: the preset's Settings with the given flags applied, in table order.
  Settings resolve() const {
    Settings settings;
    for (const auto& entry : entries_) entry.resolve(settings);
    return settings;
  }

  // Whether the command line gave the preset flag or switch `flag` (as in the table).
  bool given(const std::string& flag) const {
    for (const auto& entry : entries_) {
      if (entry.flag == flag && entry.given) return entry.given();
    }
    return false;
  }

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
  static const T& value_of(const std::optional<T>& value) {
    return *value;
  }
  template <class T>
  static const T& value_of(const T& value) {
    return value;
  }

  template <class Value>
  OptionTable& add(const std::string& flag, std::shared_ptr<Value> value, const std::string& help,
                   ConfigureOption configure, std::function<void(Settings&)> resolve,
                   std::function<bool()> given = nullptr) {
    entries_.push_back({flag,
                        [flag, value, help, configure](CLI::App& command) {
                          CLI::Option* option = command.add_option(flag, *value, help);
                          if (configure) configure(*option);
                        },
                        std::move(resolve), std::move(given)});
    return *this;
  }

  struct Entry {
    std::string flag;                        // as declared; empty: no flag
    std::function<void(CLI::App&)> attach;   // null: no flag
    std::function<void(Settings&)> resolve;  // sets the Settings from the value or preset
    std::function<bool()> given;             // null: not asked
  };
  std::vector<Entry> entries_;
};

}  // namespace gradwire::bench
