#include "comm/core/slurm_env.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::slurm {
namespace {

TEST(SlurmFirstHost, Forms) {
  EXPECT_EQ(first_host("node1"), "node1");
  EXPECT_EQ(first_host("a,b,c"), "a");
  EXPECT_EQ(first_host("node[03-05,7],gpu1"), "node03");
  EXPECT_EQ(first_host("gpu[12,14]"), "gpu12");
  EXPECT_THROW(first_host("node[03"), ConfigError);
  EXPECT_THROW(first_host(""), ConfigError);
}

TEST(SlurmTasksOnNode, Expands) {
  EXPECT_EQ(tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_FALSE(tasks_on_node("2(x3),1", 4).has_value());
  EXPECT_EQ(tasks_on_node("4", 0), 4);
  EXPECT_THROW(tasks_on_node("2(y3)", 0), ConfigError);
  EXPECT_THROW(tasks_on_node("x", 0), ConfigError);
}

TEST(SlurmDefaultPort, InRange) {
  EXPECT_EQ(default_port(7), 20007);
  EXPECT_EQ(default_port(45000), 25000);
}

}  // namespace
}  // namespace gradwire::slurm
