// init() without a launcher, or with a launcher's world of one: no peers to wait for, no
// rendezvous port, and (without a launcher) one line on stderr saying how to run several ranks.
#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"

namespace gradwire {
namespace {

// The launcher variables of every flavour: unset for the test, restored after.
const std::vector<std::string> kLauncherVariables = {
    "RANK",         "WORLD_SIZE",    "LOCAL_RANK",           "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",  "MASTER_PORT",   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID", "SLURM_STEP_ID", "GRADWIRE_BACKEND"};

class ProcessEnvironment {
 public:
  ProcessEnvironment() {
    for (const auto& name : kLauncherVariables) {
      if (const char* value = getenv(name.c_str())) saved_[name] = value;
      unsetenv(name.c_str());
    }
  }
  ~ProcessEnvironment() {
    for (const auto& name : kLauncherVariables) {
      auto it = saved_.find(name);
      if (it == saved_.end())
        unsetenv(name.c_str());
      else
        setenv(name.c_str(), it->second.c_str(), 1);
    }
  }
  void set(const std::string& name, const std::string& value) {
    setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

// A port something already listens on (closed when the object goes).
class ListeningSocket {
 public:
  ListeningSocket() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(fd_, 1) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen on a loopback port";
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~ListeningSocket() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

InitOptions quick_options(const std::string& backend) {
  InitOptions options;
  options.backend = backend;
  options.timeout = std::chrono::seconds(20);
  return options;
}

// Allreduce, broadcast and barrier on a world of one leave the values as they are.
void expect_collectives_work(Communicator& communicator) {
  EXPECT_EQ(communicator.size(), 1);
  EXPECT_EQ(communicator.rank(), 0);
  at::Tensor values = at::arange(8, at::kFloat);
  communicator.allreduce(values)->wait();
  EXPECT_TRUE(values.equal(at::arange(8, at::kFloat)));
  communicator.broadcast(values, 0)->wait();
  communicator.barrier()->wait();
  EXPECT_TRUE(values.equal(at::arange(8, at::kFloat)));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(WorldOfOne, WithoutLauncherRunsAloneAndSaysSoOnce) {
  ProcessEnvironment environment;
  testing::internal::CaptureStderr();
  for (const char* backend : {"gloo", "shm", "auto"}) {
    SCOPED_TRACE(backend);
    auto world = init(quick_options(backend));
    EXPECT_EQ(world->info().flavour, EnvFlavour::kNone);
    EXPECT_EQ(world->info().world_size, 1);
    EXPECT_EQ(world->info().local_world_size, 1);
    expect_collectives_work(*world->communicator());
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, world_of_one_notice()), 1u) << err;
  const std::string notice = world_of_one_notice();
  EXPECT_EQ(notice.find('\n'), std::string::npos);
  EXPECT_NE(notice.find("world of one"), std::string::npos) << notice;
  EXPECT_NE(notice.find("gradwire-run"), std::string::npos) << notice;
}

TEST(WorldOfOne, LauncherWorldOfOneOpensNoPort) {
  // gradwire-run -n 1 or torchrun --nproc-per-node 1 with a port that is taken: nothing binds it.
  ProcessEnvironment environment;
  ListeningSocket taken;
  environment.set("RANK", "0");
  environment.set("WORLD_SIZE", "1");
  environment.set("MASTER_ADDR", "127.0.0.1");
  environment.set("MASTER_PORT", std::to_string(taken.port()));
  testing::internal::CaptureStderr();
  auto world = init(quick_options("gloo"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(world->info().flavour, EnvFlavour::kTorchrun);
  EXPECT_EQ(world->info().master_port, taken.port());
  expect_collectives_work(*world->communicator());
  // A launcher was there: no notice.
  EXPECT_EQ(err.find("world of one"), std::string::npos) << err;
}

TEST(WorldOfOne, PartialEnvironmentIsAnError) {
  ProcessEnvironment environment;
  environment.set("RANK", "0");
  try {
    init(quick_options("gloo"));
    ADD_FAILURE() << "init accepted RANK without WORLD_SIZE";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("WORLD_SIZE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradwire
