// Parameter servers under faults, end to end (docs/ps.md "Restarts"): a hybrid job (remote
// embedding bags, a layer on the servers through DenseModel and a DDP dense layer, sync,
// deterministic; pushes sent at once or deferred to the step) runs under `gradwire-run --servers 2
// --max-restarts 2`, and a trainer, a server or the process hosting both servers is SIGKILLed in
// the middle of a step. The job must end with tables and dense parameters bit for bit equal to an
// uninterrupted run's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../launch/test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using launch::testing::Child;
using launch::testing::contains;
using launch::testing::read_file;
using launch::testing::TempDir;

constexpr int kSteps = 12;
constexpr int kEvery = 3;  // trainers and servers checkpoint every 3 steps

struct JobResult {
  int status = -1;     // gradwire-run's wait status
  std::string stderr;  // gradwire-run's, with the workers' and servers' prefixed lines
  std::string output;  // what rank 0 wrote: dense parameters and every row, raw float32
};

// `server_processes`: 2 puts each server in a process of its own, 1 both in one process.
JobResult run_job(const std::vector<std::string>& faults, int server_processes = 2) {
  TempDir dir;
  std::vector<std::string> argv{GRADWIRE_RUN_PATH,
                                "--servers",
                                "2",
                                "--server-processes",
                                std::to_string(server_processes),
                                "--server-program",
                                GRADWIRE_PS_SERVER_PATH,
                                "--server-arg=--checkpoint-dir",
                                "--server-arg=" + dir.file("servers"),
                                "--server-arg=--checkpoint-every",
                                "--server-arg=" + std::to_string(kEvery),
                                "--nproc-per-node",
                                "2",
                                "--max-restarts",
                                "2",
                                PS_FAULT_TRAINER_PATH,
                                std::to_string(kSteps),
                                std::to_string(kEvery),
                                dir.path(),
                                dir.file("out")};
  argv.insert(argv.end(), faults.begin(), faults.end());
  JobResult result;
  {
    Child job(argv, dir.file("stdout"), dir.file("stderr"));
    const std::optional<int> status = job.wait(240s);
    result.status = status.value_or(-1);
  }
  result.stderr = read_file(dir.file("stderr"));
  result.output = read_file(dir.file("out"));
  return result;
}

// Succeeded after exactly `restarts` restarts (a redo that goes wrong shows as another failure).
bool succeeded(const JobResult& job, int restarts = 0) {
  size_t count = 0;
  for (size_t at = job.stderr.find("; restarting "); at != std::string::npos;
       at = job.stderr.find("; restarting ", at + 1)) {
    ++count;
  }
  return WIFEXITED(job.status) && WEXITSTATUS(job.status) == 0 &&
         count == static_cast<size_t>(restarts);
}

class FaultRestart : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { uninterrupted_ = new JobResult(run_job({})); }
  static void TearDownTestSuite() {
    delete uninterrupted_;
    uninterrupted_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(succeeded(*uninterrupted_)) << uninterrupted_->stderr;
    ASSERT_FALSE(uninterrupted_->output.empty());
  }
  static JobResult* uninterrupted_;
};
JobResult* FaultRestart::uninterrupted_ = nullptr;

TEST_F(FaultRestart, ATrainerKilledMidStepEndsBitIdentical) {
  // Trainer 1 dies after its backward of step 6 pushed its gradients, before its step: the
  // servers hold half of step 6, and trainer 0 waits in it. The trainers' checkpoint is of step
  // 6 too, so the restarted group redoes step 6 on the same tables: what attempt 0 left of it
  // must go (else trainer 1's gradients count twice, or its push is refused).
  const JobResult job = run_job({"die:1:6"});
  ASSERT_TRUE(succeeded(job, 1)) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "killed by signal 9")) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "restart 1 of 2")) << job.stderr;
  EXPECT_EQ(job.output, uninterrupted_->output);
}

TEST_F(FaultRestart, ATrainerHoldingDeferredPushesKilledMidStepEndsBitIdentical) {
  // As above, with ClientOptions::defer_pushes: trainer 1 dies holding its gradients (they go
  // with the step it never sends), and trainer 0's step carries its own pushes. A server killed
  // mid-step likewise takes the step batches of both trainers down with it.
  const JobResult trainer = run_job({"--defer-pushes", "die:1:6"});
  ASSERT_TRUE(succeeded(trainer, 1)) << trainer.stderr;
  EXPECT_TRUE(contains(trainer.stderr, "ps_fault_trainer: deferring pushes")) << trainer.stderr;
  EXPECT_EQ(trainer.output, uninterrupted_->output);
  const JobResult server = run_job({"--defer-pushes", "kill-server:0:8"});
  ASSERT_TRUE(succeeded(server, 1)) << server.stderr;
  EXPECT_EQ(server.output, uninterrupted_->output);
}

TEST_F(FaultRestart, TrainersKilledStepsAfterTheirCheckpointEndBitIdentical) {
  // Both trainers die in step 7 after their backward. Their checkpoint is of step 6, the tables
  // are at step 7: the servers rewind to their own checkpoint of step 6.
  const JobResult job = run_job({"die:0:7", "die:1:7"});
  ASSERT_TRUE(succeeded(job, 1)) << job.stderr;
  EXPECT_EQ(job.output, uninterrupted_->output);
}

TEST_F(FaultRestart, AServerKilledMidStepEndsBitIdentical) {
  // Rank 0 SIGKILLs server 1 after the backward of step 8. gradwire-run restarts that server from
  // its newest checkpoint (step 6) and the trainers from theirs (step 6); server 0, still at step
  // 8, is rewound to its checkpoint of step 6.
  const JobResult job = run_job({"kill-server:1:8"});
  ASSERT_TRUE(succeeded(job, 1)) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "server 1 (")) << job.stderr;
  EXPECT_EQ(job.output, uninterrupted_->output);
}

TEST_F(FaultRestart, AProcessHostingBothServersKilledMidStepEndsBitIdentical) {
  // Both servers in one process (gradwire-run's layout on a host with few cores): killing it
  // takes both down. gradwire-run starts the process again, both servers restore their
  // checkpoints of step 6, and the trainers resume there.
  const JobResult job = run_job({"kill-server:1:8"}, 1);
  ASSERT_TRUE(succeeded(job, 1)) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "server process 0 (servers 0-1: ")) << job.stderr;
  EXPECT_EQ(job.output, uninterrupted_->output);
}

TEST_F(FaultRestart, AServerKilledWhileWritingACheckpointUsesThePreviousOne) {
  // Server 0 dies in the middle of writing its checkpoint of step 9 (its file-size limit is
  // lowered during step 8, so the write gets SIGXFSZ after 1 KiB): its temporary file stays
  // behind. gradwire-run restarts it; it removes that file and restores its complete checkpoint
  // of step 6, and the trainers resume there.
  const JobResult job = run_job({"die-in-write:0:8"});
  ASSERT_TRUE(succeeded(job, 1)) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "server 0 (")) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "(SIGXFSZ)")) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, ".step9.gwps.tmp-")) << job.stderr;
  EXPECT_TRUE(contains(job.stderr, "left by a checkpoint write that did not finish")) << job.stderr;
  EXPECT_EQ(job.output, uninterrupted_->output);
}

}  // namespace
}  // namespace gradwire::ps
