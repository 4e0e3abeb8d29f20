// The desync report's pure parts: progress records as text and what a set of records says about
// a failed collective (who is behind, who called something else).
#include "comm/diagnostics/desync_report.h"

#include <gtest/gtest.h>

namespace gradwire {
namespace {

ProgressRecord record(uint64_t issued, std::vector<std::string> recent) {
  ProgressRecord r;
  r.issued = issued;
  r.recent = std::move(recent);
  return r;
}

const std::string kAllreduce = "allreduce(sum) of 1024 Float elements";
const std::string kBroadcast = "broadcast(root 0) of 1024 Float elements";

DesyncInput input_at(uint64_t sequence, std::vector<std::optional<ProgressRecord>> records) {
  DesyncInput input;
  input.rank = 0;
  input.sequence = sequence;
  input.description = kAllreduce;
  input.records = std::move(records);
  for (size_t r = 0; r < input.records.size(); ++r) {
    input.rank_names.push_back("rank " + std::to_string(r) + " (pid " + std::to_string(100 + r) +
                               " on node)");
  }
  return input;
}

TEST(ProgressRecord, RoundTripsThroughText) {
  auto original = record(42, {kBroadcast, "barrier", kAllreduce});
  auto decoded = decode_progress(encode_progress(original));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->issued, 42u);
  EXPECT_EQ(decoded->recent, original.recent);
  auto empty = decode_progress(encode_progress(ProgressRecord{}));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->issued, 0u);
  EXPECT_TRUE(empty->recent.empty());
}

TEST(ProgressRecord, NewlinesInDescriptionsDoNotBreakTheRecord) {
  auto decoded = decode_progress(encode_progress(record(1, {"odd\nname"})));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->recent, std::vector<std::string>{"odd name"});
}

TEST(ProgressRecord, ForeignOrDamagedTextIsNotARecord) {
  EXPECT_FALSE(decode_progress("").has_value());
  EXPECT_FALSE(decode_progress("127.0.0.1 4242").has_value());
  EXPECT_FALSE(decode_progress("gwprog1\n").has_value());
  EXPECT_FALSE(decode_progress("gwprog1\n-3").has_value());
  EXPECT_FALSE(decode_progress("gwprog1\n1 0\na\nb").has_value());  // more history than issued
}

TEST(ProgressRecord, DescribesOnlyTheCollectivesItCarries) {
  auto r = record(10, {"#8", "#9", "#10"});
  EXPECT_EQ(r.description_of(10), "#10");
  EXPECT_EQ(r.description_of(8), "#8");
  EXPECT_FALSE(r.description_of(7).has_value());
  EXPECT_FALSE(r.description_of(11).has_value());
  EXPECT_FALSE(r.description_of(0).has_value());
}

TEST(DesyncReport, NamesTheRankThatNeverReachedTheCollective) {
  auto input =
      input_at(7, {record(7, {kAllreduce}), record(6, {kBroadcast}), record(7, {kAllreduce})});
  auto findings = find_desync(input);
  EXPECT_EQ(findings.behind, std::vector<int>{1});
  EXPECT_TRUE(findings.different.empty());
  const auto text = desync_report(input);
  EXPECT_NE(text.find("this rank (0) is at #7 of the communicator, " + kAllreduce),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Rank 1 (pid 101 on node) never reached #7: its last collective was #6, " +
                      kBroadcast),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("rank 2"), std::string::npos) << text;
}

TEST(DesyncReport, SaysWhenARankIssuedNothingYet) {
  const auto text = desync_report(input_at(1, {record(1, {kAllreduce}), record(0, {})}));
  EXPECT_NE(text.find("Rank 1 (pid 101 on node) never reached #1: it has issued no collective"),
            std::string::npos)
      << text;
}

TEST(DesyncReport, NamesTheRankThatCalledADifferentCollective) {
  auto input = input_at(5, {record(5, {kAllreduce}), record(5, {kBroadcast})});
  EXPECT_EQ(find_desync(input).different, std::vector<int>{1});
  const auto text = desync_report(input);
  EXPECT_NE(text.find("Rank 1 (pid 101 on node) called " + kBroadcast + " as #5 instead"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("same collectives in the same order"), std::string::npos) << text;
}

TEST(DesyncReport, ComparesARankThatRanAheadFromItsHistory) {
  // Rank 1 issued #5 (a broadcast) and two more since.
  auto input =
      input_at(5, {record(5, {kAllreduce}), record(7, {kBroadcast, "barrier", "barrier"})});
  EXPECT_EQ(find_desync(input).different, std::vector<int>{1});
  // Too far ahead to compare: not blamed.
  auto far = input_at(5, {record(5, {kAllreduce}), record(20, {"barrier"})});
  EXPECT_FALSE(find_desync(far).found_culprit());
}

TEST(DesyncReport, NamesARankWhoseRecordStoppedChanging) {
  auto input = input_at(3, {record(3, {kAllreduce}), record(3, {kAllreduce}), record(2, {"x"})});
  input.silent = {false, true, true};
  input.watched = std::chrono::milliseconds(750);
  auto findings = find_desync(input);
  EXPECT_EQ(findings.silent, std::vector<int>{1});
  EXPECT_EQ(findings.behind, std::vector<int>{2});
  const auto text = desync_report(input);
  EXPECT_NE(text.find("Rank 1 (pid 101 on node) issued #3 too, but its progress record did not "
                      "change in 750 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Rank 2 (pid 102 on node) never reached #3: its last collective was #2, x; "
                      "its progress record did not change"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("looks stopped or hung"), std::string::npos) << text;
}

TEST(ProgressRecord, CarriesItsHeartbeats) {
  auto r = record(4, {"a"});
  r.beats = 17;
  auto decoded = decode_progress(encode_progress(r));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->beats, 17u);
  EXPECT_FALSE(decode_progress("gwprog1\n4\na").has_value());  // no heartbeat count
}

TEST(DesyncReport, WithNobodyBehindItSaysSo) {
  const auto text = desync_report(input_at(3, {record(3, {kAllreduce}), record(3, {kAllreduce})}));
  EXPECT_NE(text.find("Every rank issued #3 as the same collective"), std::string::npos) << text;
}

TEST(DesyncReport, SaysWhoseProgressCouldNotBeRead) {
  auto input = input_at(3, {record(3, {kAllreduce}), std::nullopt, record(2, {kAllreduce})});
  input.read_problem = "the rendezvous store did not answer";
  auto findings = find_desync(input);
  EXPECT_EQ(findings.unread, std::vector<int>{1});
  EXPECT_EQ(findings.behind, std::vector<int>{2});
  const auto text = desync_report(input);
  EXPECT_NE(text.find("The progress of rank 1 (pid 101 on node) could not be read (the rendezvous "
                      "store did not answer)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Rank 2 (pid 102 on node) never reached #3"), std::string::npos) << text;
}

}  // namespace
}  // namespace gradwire
