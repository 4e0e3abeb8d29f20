// The option table: defaults per preset shown in --help and applied by resolve, given flags over
// them, and the flags the case reads itself.
#include "harness/options.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace gradwire::bench {
namespace {

struct ToyFlags {
  std::string preset = "default";
  std::optional<int> iterations;
  std::vector<std::string> models;  // empty: the preset's
  std::string sizes;                // empty: the preset's
  std::string json_path;
  bool verbose = false;
};

struct ToySettings {
  std::string preset = "default";
  int iterations = 10;
  std::vector<std::string> models = {"a", "b"};
  std::vector<int> sizes;
};

const OptionTable<ToyFlags, ToySettings>& toy_options() {
  static const auto table = [] {
    OptionTable<ToyFlags, ToySettings> options({"default", "quick"}, "settings preset");
    options
        .preset_value("--iterations", &ToyFlags::iterations, &ToySettings::iterations,
                      {{"quick", 2}}, "timed iterations", positive_number)
        .preset_value("--model", &ToyFlags::models, &ToySettings::models, {}, "models",
                      comma_separated)
        .preset_option<std::string>("--sizes", &ToyFlags::sizes, {"1,2", {{"quick", "3"}}}, "sizes",
                                    [](ToySettings& settings, const std::string& text) {
                                      settings.sizes.clear();
                                      for (const char c : text) {
                                        if (c != ',') settings.sizes.push_back(c - '0');
                                      }
                                    })
        .option("--json", &ToyFlags::json_path, "write the results to this JSON file")
        .switch_flag("--verbose", &ToyFlags::verbose, "say more");
    return options;
  }();
  return table;
}

ToySettings parse(std::vector<std::string> arguments, ToyFlags& flags) {
  CLI::App app;
  toy_options().attach(app, flags);
  arguments.insert(arguments.begin(), "toy");
  std::vector<const char*> argv;
  for (const auto& argument : arguments) argv.push_back(argument.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return toy_options().resolve(flags);
}

TEST(OptionTableTest, HelpShowsEveryPresetsDefault) {
  EXPECT_EQ(help_with_defaults("timed iterations", PresetDefaults<int>{10, {{"quick", 2}}}),
            "timed iterations [10; quick 2]");
  EXPECT_EQ(help_with_defaults("bucket cap", PresetDefaults<double>{25}), "bucket cap [25]");
  CLI::App app;
  ToyFlags flags;
  toy_options().attach(app, flags);
  const std::string help = app.help();
  EXPECT_NE(help.find("timed iterations [10; quick 2]"), std::string::npos) << help;
  EXPECT_NE(help.find("models [a, b]"), std::string::npos) << help;
  EXPECT_NE(help.find("sizes [1,2; quick 3]"), std::string::npos) << help;
  EXPECT_NE(help.find("--preset"), std::string::npos) << help;
}

TEST(OptionTableTest, ThePresetsDefaultsUnlessGiven) {
  ToyFlags flags;
  ToySettings settings = parse({}, flags);
  EXPECT_EQ(settings.preset, "default");
  EXPECT_EQ(settings.iterations, 10);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(settings.sizes, (std::vector<int>{1, 2}));

  flags = {};
  settings = parse({"--preset", "quick"}, flags);
  EXPECT_EQ(settings.iterations, 2);
  EXPECT_EQ(settings.sizes, (std::vector<int>{3}));

  flags = {};
  settings = parse({"--preset", "quick", "--iterations", "7", "--model", "c,d", "--sizes", "5",
                    "--json", "x.json", "--verbose"},
                   flags);
  EXPECT_EQ(settings.iterations, 7);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(settings.sizes, (std::vector<int>{5}));
  EXPECT_EQ(flags.json_path, "x.json");
  EXPECT_TRUE(flags.verbose);
}

TEST(OptionTableTest, RejectsUnknownPresetsAndFailedChecks) {
  ToyFlags flags;
  flags.preset = "huge";
  EXPECT_THROW(toy_options().resolve(flags), InvalidArgument);
  flags = {};
  EXPECT_THROW(parse({"--preset", "huge"}, flags), CLI::ValidationError);
  flags = {};
  EXPECT_THROW(parse({"--iterations", "0"}, flags), CLI::ValidationError);
  // The same check holds without the command line: resolve() names the flag.
  flags = {};
  flags.iterations = 0;
  try {
    toy_options().resolve(flags);
    ADD_FAILURE() << "iterations 0 resolved";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "--iterations must be positive (got 0)");
  }
}

}  // namespace
}  // namespace gradwire::bench
