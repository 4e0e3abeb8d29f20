// The option table, once for every case: defaults per preset shown in --help and applied by
// resolve, given flags over them in table order, CLI11's checks, and the list helpers.
#include "harness/options.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace gradwire::bench {
namespace {

struct ToySettings {
  std::string preset = "default";
  int iterations = 10;
  std::vector<std::string> models = {"a", "b"};
  std::string model = "m";
  std::vector<int> sizes;
  std::string mode;
  std::optional<std::string> data;
  bool verbose = false;
  bool shared = true;
};

OptionTable<ToySettings> toy_options() {
  using Settings = ToySettings;
  OptionTable<Settings> options({"default", "quick"}, "settings preset");
  options
      .preset_value("--iterations", &Settings::iterations, {{"quick", 2}}, "timed iterations",
                    positive_number)
      .preset_value("--models", &Settings::models, {}, "models", comma_separated)
      .preset_value<std::string, std::string>("--model", &Settings::model, {{"quick", "q"}},
                                              "one model")
      .preset_option<std::string>("--sizes", {"1,2", {{"quick", "3"}}}, "sizes",
                                  [](Settings& s, const std::string& text) {
                                    for (const char c : text) {
                                      if (c != ',') s.sizes.push_back(c - '0');
                                    }
                                  })
      .option<std::string>(
          "--mode", "mode", [](Settings& s, const std::string& mode) { s.mode = "<" + mode + ">"; },
          [](CLI::Option& option) { option.capture_default_str(); }, "fast")
      .option("--data", &Settings::data, "a directory")
      .switch_flag("--verbose", &Settings::verbose, "say more")
      .switch_flag("--no-shared", &Settings::shared, "not shared", false);
  return options;
}

TEST(OptionTableTest, HelpShowsEveryPresetsDefault) {
  EXPECT_EQ(help_with_defaults("timed iterations", PresetDefaults<int>{10, {{"quick", 2}}}),
            "timed iterations [10; quick 2]");
  EXPECT_EQ(help_with_defaults("bucket cap", PresetDefaults<double>{25}), "bucket cap [25]");
  CLI::App app;
  toy_options().attach(app);
  const std::string help = app.help();
  for (const char* line :
       {"--preset TEXT:{default,quick}=default",
        "--iterations INT:POSITIVE   timed iterations [10; quick 2]", "models [a, b]",
        "one model [m; quick q]", "sizes [1,2; quick 3]", "--mode TEXT=fast"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << " in\n" << help;
  }
}

TEST(OptionTableTest, ThePresetsDefaultsUnlessGiven) {
  ToySettings settings = toy_options().parse("").resolve();
  EXPECT_EQ(settings.preset, "default");
  EXPECT_EQ(settings.iterations, 10);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(settings.sizes, (std::vector<int>{1, 2}));
  EXPECT_EQ(settings.mode, "<fast>");  // an option's apply gets its initial value
  EXPECT_FALSE(settings.data);
  EXPECT_FALSE(settings.verbose);
  EXPECT_TRUE(settings.shared);

  settings = toy_options().parse("--preset quick").resolve();
  EXPECT_EQ(settings.iterations, 2);
  EXPECT_EQ(settings.model, "q");
  EXPECT_EQ(settings.sizes, (std::vector<int>{3}));

  // An empty string is "not given" only where the table says so (--model), a value elsewhere.
  auto options = toy_options().parse({"--preset", "quick", "--iterations", "7", "--models", "c,d",
                                      "--model", "", "--sizes", "5", "--mode", "slow", "--data", "",
                                      "--verbose", "--no-shared"});
  settings = options.resolve();
  EXPECT_EQ(settings.iterations, 7);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(settings.model, "q");
  EXPECT_EQ(settings.sizes, (std::vector<int>{5}));
  EXPECT_EQ(settings.mode, "<slow>");
  EXPECT_EQ(settings.data, "");
  EXPECT_TRUE(settings.verbose);
  EXPECT_FALSE(settings.shared);
  EXPECT_TRUE(options.given("--iterations"));
  EXPECT_TRUE(options.given("--verbose"));
  EXPECT_FALSE(options.given("--model"));
  EXPECT_FALSE(toy_options().parse("").given("--iterations"));
}

TEST(OptionTableTest, CliChecksRefuseBadValues) {
  EXPECT_THROW(toy_options().parse("--preset huge"), CLI::ValidationError);
  EXPECT_THROW(toy_options().parse("--iterations 0"), CLI::ValidationError);
  EXPECT_THROW(toy_options().parse("--bogus"), CLI::ExtrasError);
}

TEST(OptionListsTest, ChooseKeepAndSort) {
  const std::vector<std::string> known = {"a", "b", "c"};
  EXPECT_EQ(chosen_in_order({}, known), known);
  EXPECT_EQ(chosen_in_order({"c", "a"}, known), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(distinct(std::vector<std::string>{"b", "a", "b"}),
            (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(sorted_distinct(std::vector<int>{4, 1, 2, 2}), (std::vector<int>{1, 2, 4}));
}

}  // namespace
}  // namespace gradwire::bench
