// A worker of an elastic job reading RecordIO files with the dynamic partition, its reader in the
// elastic::State (docs/elastic.md, "Reading RecordIO files"):
//   elastic_reader_worker EPOCHS BATCH DIE_ID:DIE_STEP|- FILE...
// Every step each rank takes up to BATCH records, the ranks add up how many they took (an
// allreduce: the step's collective, where a dead peer shows), and the epoch ends when none took
// any; otherwise each rank prints the records it "trained on" and the state commits. The worker
// whose GRADWIRE_ELASTIC_ID is DIE_ID kills itself (SIGKILL) in step DIE_STEP after printing its
// records, before the commit: it dies holding claimed chunks and a partly read one, and the
// others' commit of that step fails, so the step is rolled back and its records read again.
// Rank 0 of each generation prints "reader-test: generation G world W from step S" when it
// begins (S: the committed step it goes on from); every rank prints, before each commit,
// "reader-test: generation G step S epoch E rank R records A B ...". elastic_reader_test keeps
// the steps each next generation did not roll back and checks that they cover every epoch once.
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gradwire/data/sharded_reader.h"
#include "gradwire/data/store_counter.h"
#include "gradwire/elastic/elastic.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: elastic_reader_worker EPOCHS BATCH DIE_ID:DIE_STEP|- FILE...\n");
    return 2;
  }
  const int64_t epochs = std::stoll(argv[1]);
  const size_t batch = std::stoul(argv[2]);
  std::string die_id;
  int64_t die_step = -1;
  if (std::string(argv[3]) != "-") {
    const std::string die = argv[3];
    die_id = die.substr(0, die.find(':'));
    die_step = std::stoll(die.substr(die.find(':') + 1));
  }
  const std::vector<std::string> files(argv + 4, argv + argc);
  const char* me = std::getenv("GRADWIRE_ELASTIC_ID");
  const bool doomed = me != nullptr && die_id == me;

  try {
    gradwire::data::ShardedReaderOptions options;  // rank and world size: reshard's
    options.partition = gradwire::data::Partition::kDynamic;
    options.counter = gradwire::data::connect_job_store_counter(std::chrono::seconds(30));
    options.queue_name = "elastic-reader-test/train";
    options.prefetch_chunks = 2;
    gradwire::data::ShardedRecordReader reader(files, options);
    gradwire::elastic::State state;
    state.add("reader", reader);

    gradwire::elastic::run(state, [&](gradwire::elastic::Context& job) {
      const long long generation = job.generation().number;
      if (job.rank() == 0) {
        std::printf("reader-test: generation %lld world %d from step %lld\n", generation,
                    job.size(), static_cast<long long>(state.value("step")));
        std::fflush(stdout);
      }
      while (state.value("epoch") < epochs) {
        const auto epoch = static_cast<uint64_t>(state.value("epoch"));
        if (reader.epoch() != epoch) reader.start_epoch(epoch);  // not when resharded into it
        while (true) {
          const int64_t step = state.value("step") + 1;
          std::string line;
          size_t taken = 0;
          for (; taken < batch; ++taken) {
            auto record = reader.next_record();
            if (!record) break;
            line += " " + std::string(*record);
          }
          at::Tensor total = torch::tensor(static_cast<int64_t>(taken), torch::kInt64);
          job.communicator()->allreduce(total)->wait();
          if (total.item<int64_t>() == 0) break;  // every rank's epoch is over
          std::printf("reader-test: generation %lld step %lld epoch %llu rank %d records%s\n",
                      generation, static_cast<long long>(step),
                      static_cast<unsigned long long>(epoch), job.rank(), line.c_str());
          std::fflush(stdout);
          if (doomed && step == die_step) ::raise(SIGKILL);
          state.value("step") = step;
          state.commit();
        }
        state.value("epoch") += 1;
      }
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "elastic_reader_worker: %s\n", error.what());
    return 1;
  }
  return 0;
}
