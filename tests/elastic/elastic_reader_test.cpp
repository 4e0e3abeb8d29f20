// RecordIO read by an elastic job under gradwire-run --elastic (elastic_reader_worker: the dynamic
// partition through the job store, the reader in the State): a worker SIGKILLed mid-epoch holding
// claimed and partly read chunks. The records of the committed steps (each generation's steps up
// to where the next one went on from) cover each of the two epochs exactly once.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gradwire/data/recordio_writer.h"

namespace gradwire {
namespace {

constexpr int kFiles = 3;
constexpr int kChunksPerFile = 6;
constexpr int kRecordsPerChunk = 8;

struct ReaderJob {
  int exit_code = -1;
  std::string text;
  std::multiset<std::string> all;  // every record once
};

ReaderJob run_reader_job(const std::string& arguments) {
  char dir_template[] = "/tmp/gradwire-elastic-reader-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  ReaderJob job;
  std::string files;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir + "/part-" + std::to_string(f) + ".gwrio";
    data::RecordWriterOptions options;
    options.records_per_chunk = kRecordsPerChunk;
    data::RecordWriter writer(path, options);
    for (int r = 0; r < kChunksPerFile * kRecordsPerChunk; ++r) {
      const std::string record = "f" + std::to_string(f) + "r" + std::to_string(r);
      writer.write(record);
      job.all.insert(record);
    }
    writer.close();
    files += " " + path;
  }
  const std::string log = dir + "/out.txt";
  const std::string command =
      "GRADWIRE_TIMEOUT=30s GRADWIRE_RENDEZVOUS_TIMEOUT=30s timeout -k 5 150 " GRADWIRE_RUN_PATH
      " --elastic --grace-period 2s " +
      arguments + files + " > " + log + " 2>&1";
  const int status = std::system(command.c_str());
  job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::ifstream in(log);
  std::stringstream buffer;
  buffer << in.rdbuf();
  job.text = buffer.str();
  std::filesystem::remove_all(dir);
  return job;
}

struct StepLine {
  int64_t generation = 0;
  int64_t step = 0;
  uint64_t epoch = 0;
  std::vector<std::string> records;
};

// Per epoch, the records of the steps that stayed committed: a step printed in generation G
// counts unless a later generation went on from an earlier step (it was rolled back).
std::map<uint64_t, std::multiset<std::string>> committed_records(const std::string& text,
                                                                 std::map<int64_t, int>* worlds) {
  const std::regex start(R"(reader-test: generation (\d+) world (\d+) from step (\d+))");
  const std::regex step(
      R"(reader-test: generation (\d+) step (\d+) epoch (\d+) rank \d+ records(.*))");
  std::map<int64_t, int64_t> from_step;  // generation -> the step it went on from
  std::vector<StepLine> steps;
  std::istringstream lines(text);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, start)) {
      from_step[std::stoll(match[1])] = std::stoll(match[3]);
      (*worlds)[std::stoll(match[1])] = std::stoi(match[2]);
    } else if (std::regex_search(line, match, step)) {
      StepLine parsed{std::stoll(match[1]), std::stoll(match[2]), std::stoull(match[3]), {}};
      std::istringstream records(match[4].str());
      std::string record;
      while (records >> record) parsed.records.push_back(record);
      steps.push_back(std::move(parsed));
    }
  }
  std::map<uint64_t, std::multiset<std::string>> per_epoch;
  for (const StepLine& parsed : steps) {
    const auto next = from_step.upper_bound(parsed.generation);
    if (next != from_step.end() && parsed.step > next->second) continue;  // rolled back
    per_epoch[parsed.epoch].insert(parsed.records.begin(), parsed.records.end());
  }
  return per_epoch;
}

TEST(ElasticReaderRun, AKilledWorkersChunksAreReadByTheSurvivorsExactlyOnce) {
  // 3 workers take 3 records a step from chunks of 8: worker 0.1.0 dies in step 5 of epoch 0
  // before its commit, having committed 4 steps (12 records: a chunk and a half) and claimed
  // more. Step 5 is rolled back on every rank (its records are read again, by the survivors).
  const ReaderJob job = run_reader_job("-n 3 " ELASTIC_READER_WORKER_PATH " 2 3 0.1.0:5");
  ASSERT_EQ(job.exit_code, 0) << job.text;
  EXPECT_NE(job.text.find("worker 0.1.0"), std::string::npos) << job.text;
  EXPECT_NE(job.text.find("SIGKILL"), std::string::npos) << job.text;
  std::map<int64_t, int> worlds;
  const auto per_epoch = committed_records(job.text, &worlds);
  ASSERT_GE(worlds.size(), 2u) << job.text;
  EXPECT_EQ(worlds.begin()->second, 3) << job.text;
  EXPECT_EQ(worlds.rbegin()->second, 2) << job.text;
  EXPECT_NE(job.text.find("generation 1 world 2 from step 4"), std::string::npos) << job.text;
  EXPECT_NE(job.text.find("generation 0 step 5 "), std::string::npos) << job.text;
  ASSERT_EQ(per_epoch.size(), 2u) << job.text;
  for (const auto& [epoch, records] : per_epoch) {
    EXPECT_EQ(records, job.all) << "epoch " << epoch << "\n" << job.text;
  }
}

}  // namespace
}  // namespace gradwire
