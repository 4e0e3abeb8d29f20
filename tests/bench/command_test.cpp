#include "harness/command.h"

#include <gtest/gtest.h>

#include "harness/hardware.h"

namespace gradwire::bench {
namespace {

TEST(RunCommandTest, CapturesStdoutAndExitCode) {
  const CommandOutput echo = run_command({"sh", "-c", "echo hello; echo noise >&2; exit 3"});
  EXPECT_TRUE(echo.started);
  EXPECT_EQ(echo.exit_code, 3);
  EXPECT_EQ(echo.output, "hello\n");
  EXPECT_FALSE(echo.succeeded());
  EXPECT_TRUE(run_command({"true"}).succeeded());
}

TEST(RunCommandTest, MissingProgramIsNotStarted) {
  const CommandOutput missing = run_command({"/nonexistent/program"});
  EXPECT_FALSE(missing.started);
  EXPECT_FALSE(missing.succeeded());
}

TEST(HardwareTest, DescribesTheCpu) {
  const HardwareInfo hardware = describe_hardware();
  EXPECT_FALSE(hardware.cpu_model.empty());
  EXPECT_GE(hardware.cores, 1);
  const nlohmann::json json = to_json(hardware);
  EXPECT_EQ(json.at("cores"), hardware.cores);
  EXPECT_EQ(json.at("gpu_topology").is_null(), hardware.gpu_topology.empty());
}

}  // namespace
}  // namespace gradwire::bench
