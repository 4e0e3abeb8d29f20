#include "harness/python.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(PythonTest, CandidatesArePreferredAloneOrEnvironmentsThenPython3ThenDebians) {
  EXPECT_EQ(python_candidates(""), (std::vector<std::string>{"python3", "/usr/bin/python3"}));
  EXPECT_EQ(python_candidates("/opt/py"), (std::vector<std::string>{"/opt/py"}));
  EXPECT_EQ(python_candidates("", {"/venv/bin/python"}),
            (std::vector<std::string>{"/venv/bin/python", "python3", "/usr/bin/python3"}));
  EXPECT_EQ(python_candidates("/opt/py", {"/venv/bin/python"}),
            (std::vector<std::string>{"/opt/py"}));
}

TEST(PythonTest, AMissingInterpreterIsAValueNamingWhatWasTried) {
  const PythonSearch torch = find_python_with_torch("/nonexistent/python");
  EXPECT_FALSE(torch.found);
  EXPECT_EQ(torch.tried, "/nonexistent/python (not found)");
  // A program that runs but is no Python cannot import the module.
  const PythonSearch rpc = find_python_with_torch("false", "torch.distributed.rpc");
  EXPECT_FALSE(rpc.found);
  EXPECT_EQ(rpc.tried, "false (cannot import torch.distributed.rpc)");
}

TEST(PythonTest, ReferenceScriptIsThePreferredThenTheSourceThenTheInstalledCopy) {
  const std::string present =
      ::testing::TempDir() + "python_test_" + std::to_string(getpid()) + ".py";
  { std::ofstream(present) << "pass\n"; }
  std::string why_not;
  EXPECT_EQ(find_reference_script({present, "/none/a.py", "/none/b.py"}, why_not), present);
  EXPECT_EQ(find_reference_script({"", "/none/a.py", present}, why_not), present);
  EXPECT_FALSE(find_reference_script({"/none/x.py", present, present}, why_not));
  EXPECT_EQ(why_not, "reference script /none/x.py cannot be read");
  EXPECT_FALSE(find_reference_script({"", "/none/s/ref.py", "/none/i/ref.py"}, why_not));
  EXPECT_EQ(why_not,
            "ref.py is neither at /none/s/ref.py nor at /none/i/ref.py: pass --reference-script");
  std::remove(present.c_str());
}

// One error policy: a missing interpreter is a reason (ddp skips), or a ConfigError (hybrid stops).
TEST(PythonTest, FindReferenceSaysWhatIsMissing) {
  const ReferenceNeeds needs{
      "/nonexistent/python", "torch.distributed.rpc", {"", "/a.py", "/b.py"}};
  std::string why_not;
  EXPECT_FALSE(find_reference(needs, why_not));
  EXPECT_EQ(why_not,
            "no Python interpreter with torch and torch.distributed.rpc: tried /nonexistent/python "
            "(not found); install python3-torch (scripts/bench does) or pass --python");
  try {
    require_reference(needs);
    FAIL() << "no reference was found, yet nothing was thrown";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--reference pytorch cannot run: " + why_not);
  }
}

}  // namespace
}  // namespace gradwire::bench
