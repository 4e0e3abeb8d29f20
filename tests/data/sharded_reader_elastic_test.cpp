// ShardedRecordReader as an elastic::State object, its hooks driven as elastic::run drives them:
// ranks read, commit (prepare_commit over a Gloo world of threads, then save), read on past the
// commit, and a rank dies holding claimed and partly read chunks; the survivors (and joiners)
// load the commit and reshard into the new membership. Across the epoch, what was consumed up to
// the commit plus what is read after the last reshard is every record exactly once.
#include <gtest/gtest.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <set>
#include <sstream>
#include <thread>

#include "gradwire/comm/job_store.h"
#include "gradwire/data/sharded_reader.h"
#include "gradwire/data/store_counter.h"
#include "recordio_test_files.h"
#include "support/rank_threads.h"

namespace gradwire::data {
namespace sharded_reader_elastic_test {  // helpers apart from the other files of a unity batch
namespace {

using testing::test_record;
using testing::write_test_file;

// Three files, chunks of 7, 10 and 12 records (uneven, so reads stop mid-chunk): 210 records.
struct ElasticFiles {
  testing::TempDir dir;
  std::vector<std::string> paths = {dir.file("a"), dir.file("b"), dir.file("c")};
  std::multiset<std::string> all;
  ElasticFiles() {
    const uint64_t records[] = {56, 70, 84};
    const uint32_t per_chunk[] = {7, 10, 12};
    for (int f = 0; f < 3; ++f) {
      write_test_file(paths[f], f, records[f], per_chunk[f]);
      for (uint64_t i = 0; i < records[f]; ++i) all.insert(test_record(f, i));
    }
  }
};

struct ReaderSetup {
  Partition partition = Partition::kStatic;
  bool shuffle = false;
};

std::string name_of(const ReaderSetup& setup) {
  return std::string(to_string(setup.partition)) + (setup.shuffle ? " shuffled" : "");
}

// A worker of the job: a reader that outlives the generations it takes part in.
std::unique_ptr<ShardedRecordReader> make_reader(const ElasticFiles& files,
                                                 const ReaderSetup& setup,
                                                 const std::shared_ptr<SharedCounter>& counter) {
  ShardedReaderOptions options;  // rank and world size come from reshard
  options.partition = setup.partition;
  options.counter = counter;
  options.shuffle_chunks = setup.shuffle;
  options.seed = 3;
  options.prefetch_chunks = 2;
  return std::make_unique<ShardedRecordReader>(files.paths, options);
}

// Up to `count` records (fewer at the end of this rank's epoch).
std::vector<std::string> take(ShardedRecordReader& reader, size_t count) {
  std::vector<std::string> records;
  while (records.size() < count) {
    auto record = reader.next_record();
    if (!record) break;
    records.emplace_back(*record);
  }
  return records;
}

// Every rank reads to the end of its epoch at once (threads; the last rank slow).
std::vector<std::string> drain(const std::vector<ShardedRecordReader*>& ranks) {
  std::vector<std::vector<std::string>> per_rank(ranks.size());
  gradwire::testing::run_threads(static_cast<int>(ranks.size()), [&](int rank) {
    while (auto record = ranks[rank]->next_record()) {
      per_rank[rank].emplace_back(*record);
      if (rank + 1 == static_cast<int>(ranks.size())) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  });
  std::vector<std::string> records;
  for (const auto& part : per_rank) records.insert(records.end(), part.begin(), part.end());
  return records;
}

std::string saved(const ShardedRecordReader& reader) {
  torch::serialize::OutputArchive archive;
  reader.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load(ShardedRecordReader& reader, const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  reader.load(archive);
}

// A commit of `ranks` (all of one generation): prepare_commit on every rank over a Gloo world of
// threads, then each one's copy; every rank's copy is the same. Returns it.
std::string commit(const std::vector<ShardedRecordReader*>& ranks) {
  const int size = static_cast<int>(ranks.size());
  std::vector<std::string> copies(ranks.size());
  gradwire::testing::run_ranks(size, [&](int rank, World& world) {
    ranks[rank]->prepare_commit(*world.communicator());
    copies[rank] = saved(*ranks[rank]);
  });
  for (const std::string& copy : copies) EXPECT_EQ(copy, copies[0]);
  return copies[0];
}

// What elastic::run does for a new generation: every member loads the commit and reshards.
void new_generation(const std::vector<ShardedRecordReader*>& ranks, const std::string& bytes,
                    int64_t generation) {
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    load(*ranks[rank], bytes);
    ranks[rank]->reshard(static_cast<int>(rank), static_cast<int>(ranks.size()), generation);
  }
}

void add(std::multiset<std::string>& to, const std::vector<std::string>& records) {
  to.insert(records.begin(), records.end());
}

const ReaderSetup kSetups[] = {{Partition::kStatic, false},
                               {Partition::kStatic, true},
                               {Partition::kDynamic, false},
                               {Partition::kDynamic, true}};

// 3 ranks; rank 2 dies after the commit holding claimed and partly read chunks; the 2 survivors
// continue, then fail again before any commit (rank 1 dies) and restore the same commit once more,
// with a joiner in the dead rank's place.
TEST(ShardedReaderElastic, SurvivorsReadWhatTheDeadRankLeftExactlyOnce) {
  ElasticFiles files;
  for (const ReaderSetup& setup : kSetups) {
    SCOPED_TRACE(name_of(setup));
    auto counter = make_local_counter();
    std::vector<std::unique_ptr<ShardedRecordReader>> workers;
    for (int i = 0; i < 3; ++i) workers.push_back(make_reader(files, setup, counter));
    std::vector<ShardedRecordReader*> generation0 = {workers[0].get(), workers[1].get(),
                                                     workers[2].get()};
    new_generation(generation0, saved(*workers[0]), 0);  // the first sync: no epoch yet
    std::multiset<std::string> consumed;                 // trained on in committed steps
    for (auto* reader : generation0) {
      EXPECT_EQ(reader->epoch(), std::nullopt);
      reader->start_epoch(0);
    }
    // Two steps of uneven takes (chunks of 7, 10 and 12 records are left partly read).
    for (size_t step : {5u, 13u}) {
      for (size_t rank = 0; rank < 3; ++rank) add(consumed, take(*generation0[rank], step + rank));
    }
    const std::string first_commit = commit(generation0);
    // Read past the commit: rolled back with the model.
    for (auto* reader : generation0) take(*reader, 9);
    workers[2].reset();  // dies

    // Generation 1: the survivors.
    std::vector<ShardedRecordReader*> generation1 = {workers[0].get(), workers[1].get()};
    new_generation(generation1, first_commit, 1);
    EXPECT_EQ(workers[0]->epoch(), 0u);
    for (auto* reader : generation1) take(*reader, 17);  // lost again: nobody commits
    workers[1].reset();                                  // dies too

    // Generation 2: back to the same commit, with a joiner.
    workers.push_back(make_reader(files, setup, counter));
    std::vector<ShardedRecordReader*> generation2 = {workers[0].get(), workers[3].get()};
    new_generation(generation2, first_commit, 2);
    add(consumed, drain(generation2));
    EXPECT_EQ(consumed, files.all);
  }
}

// 2 ranks grow to 3 (a joiner takes part of what is left), commit in the new generation, lose a
// rank and continue from that second commit; then the next epoch, whose first chunks a
// generation had claimed before rolling back to a commit of the previous epoch.
TEST(ShardedReaderElastic, AJoinerTakesItsShareAndLaterCommitsCarryTheProgress) {
  ElasticFiles files;
  for (const ReaderSetup& setup : kSetups) {
    SCOPED_TRACE(name_of(setup));
    auto counter = make_local_counter();
    std::vector<std::unique_ptr<ShardedRecordReader>> workers;
    for (int i = 0; i < 2; ++i) workers.push_back(make_reader(files, setup, counter));
    std::vector<ShardedRecordReader*> two = {workers[0].get(), workers[1].get()};
    new_generation(two, saved(*workers[0]), 0);
    std::multiset<std::string> consumed;
    for (auto* reader : two) reader->start_epoch(0);
    add(consumed, take(*two[0], 30));
    add(consumed, take(*two[1], 11));
    const std::string joined_at = commit(two);

    workers.push_back(make_reader(files, setup, counter));  // joins at that commit
    std::vector<ShardedRecordReader*> three = {workers[0].get(), workers[1].get(),
                                               workers[2].get()};
    new_generation(three, joined_at, 1);
    for (size_t rank = 0; rank < 3; ++rank) add(consumed, take(*three[rank], 8 + 5 * rank));
    const std::string second_commit = commit(three);
    for (auto* reader : three) take(*reader, 6);  // rolled back
    workers[0].reset();                           // rank 0 dies

    std::vector<ShardedRecordReader*> survivors = {workers[1].get(), workers[2].get()};
    new_generation(survivors, second_commit, 2);
    add(consumed, drain(survivors));
    EXPECT_EQ(consumed, files.all);

    // The epoch's end is committed; epoch 1 begins and is read in part, then a rank dies before
    // the next commit: the survivor goes back to the end of epoch 0 and begins epoch 1 again.
    const std::string end_of_epoch = commit(survivors);
    for (auto* reader : survivors) {
      reader->start_epoch(1);
      take(*reader, 25);  // claims of generation 2 in epoch 1, rolled back
    }
    workers[2].reset();
    std::vector<ShardedRecordReader*> alone = {workers[1].get()};
    new_generation(alone, end_of_epoch, 3);
    EXPECT_EQ(workers[1]->epoch(), 0u);
    EXPECT_FALSE(workers[1]->next_record()) << "epoch 0 was over at the commit";
    workers.push_back(make_reader(files, setup, counter));  // and a joiner at once
    std::vector<ShardedRecordReader*> again = {workers[1].get(), workers[3].get()};
    new_generation(again, end_of_epoch, 4);
    for (auto* reader : again) reader->start_epoch(1);
    std::multiset<std::string> epoch1;
    add(epoch1, drain(again));
    EXPECT_EQ(epoch1, files.all);
  }
}

// Damaged chunks skipped before the commit are not read again; those nobody reached are skipped
// by the rank that reaches them after the reshard.
TEST(ShardedReaderElastic, SkippedChunksStaySkipped) {
  ElasticFiles files;
  std::string bytes = testing::read_bytes(files.paths[1]);
  // Damage chunks 0 and 6 of file b (records 0-9 and 60-69): a byte inside each body.
  for (size_t chunk : {0u, 6u}) {
    std::string tail = "file 1 record " + std::to_string(chunk * 10);
    const size_t at = bytes.find(tail);
    ASSERT_NE(at, std::string::npos);
    bytes[at] ^= 1;
  }
  testing::write_bytes(files.paths[1], bytes);
  std::multiset<std::string> expected = files.all;
  for (uint64_t record = 0; record < 10; ++record) {
    expected.erase(test_record(1, record));
    expected.erase(test_record(1, 60 + record));
  }
  for (const ReaderSetup& setup : kSetups) {
    SCOPED_TRACE(name_of(setup));
    auto counter = make_local_counter();
    ShardedReaderOptions options;
    options.partition = setup.partition;
    options.counter = counter;
    options.shuffle_chunks = setup.shuffle;
    options.skip_corrupt = true;
    std::vector<std::unique_ptr<ShardedRecordReader>> workers;
    for (int i = 0; i < 2; ++i) {
      workers.push_back(std::make_unique<ShardedRecordReader>(files.paths, options));
    }
    std::vector<ShardedRecordReader*> two = {workers[0].get(), workers[1].get()};
    new_generation(two, saved(*workers[0]), 0);
    std::multiset<std::string> consumed;
    for (auto* reader : two) reader->start_epoch(0);
    for (auto* reader : two) add(consumed, take(*reader, 40));
    const std::string committed = commit(two);
    workers[1].reset();
    std::vector<ShardedRecordReader*> one = {workers[0].get()};
    new_generation(one, committed, 1);
    add(consumed, drain(one));
    EXPECT_EQ(consumed, expected);
  }
}

TEST(ShardedReaderElastic, OneRankContinuesALoadedEpochWithoutReshard) {
  ElasticFiles files;
  ShardedRecordReader reader(files.paths, {});
  reader.start_epoch(4);
  std::multiset<std::string> consumed;
  add(consumed, take(reader, 33));
  const std::string bytes = saved(reader);  // one rank: its own count is the job's
  take(reader, 50);
  load(reader, bytes);
  EXPECT_EQ(reader.epoch(), 4u);
  add(consumed, take(reader, 1000));
  EXPECT_EQ(consumed, files.all);

  // Several ranks need reshard(); another set of files is refused.
  ShardedReaderOptions two;
  two.world_size = 2;
  ShardedRecordReader other(files.paths, two);
  load(other, bytes);
  EXPECT_THROW(other.next_record(), InvalidArgument);
  EXPECT_THROW(other.reshard(2, 2, 1), InvalidArgument);
  ShardedRecordReader fewer({files.paths[0], files.paths[1]}, {});
  EXPECT_THROW(load(fewer, bytes), InvalidArgument);
}

TEST(ShardedReaderElastic, CountersLiveInTheJobStore) {
  std::shared_ptr<JobStore> store = JobStore::in_process(std::chrono::seconds(5));
  auto counter = job_store_counter(store);
  EXPECT_EQ(counter->add("q/epoch/0/g1/0", 3), 3);
  EXPECT_EQ(counter->add("q/epoch/0/g1/0", int64_t{1} << 32), (int64_t{1} << 32) + 3);
  EXPECT_EQ(store->get("q/epoch/0/g1/0"), std::to_string((int64_t{1} << 32) + 3));
  EXPECT_THROW(connect_job_store_counter(std::chrono::seconds(1), EnvMap{}), ConfigError);
}

}  // namespace
}  // namespace sharded_reader_elastic_test
}  // namespace gradwire::data
