#include "service/journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

TEST(JournalTest, AppendsAndReplaysInOrder) {
  TempDir dir;
  const std::string path = dir.File("journal");
  {
    auto opened = Journal::Open(path);
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_TRUE(opened->second.records.empty());
    for (std::string s : {"one", "", "three"}) ASSERT_TRUE(opened->first.Append(s).ok());
  }
  auto again = Journal::Open(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->second.records, (std::vector<std::string>{"one", "", "three"}));
  EXPECT_EQ(again->second.dropped_bytes, 0);
  ASSERT_TRUE(again->first.Append("four").ok());
  auto third = Journal::Read(path);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->records.size(), 4u);
}

TEST(JournalTest, TornTailIsDroppedAtEveryCut) {
  TempDir dir;
  const std::string path = dir.File("journal");
  {
    auto opened = Journal::Open(path);
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE(opened->first.Append("first record").ok());
    ASSERT_TRUE(opened->first.Append("second record").ok());
  }
  const std::string full = ReadFile(path);
  const size_t first_len = 8 + std::string("first record").size();
  // Every cut inside the second record leaves exactly the first.
  for (size_t cut = first_len; cut < full.size(); ++cut) {
    WriteFile(path, full.substr(0, cut));
    auto opened = Journal::Open(path);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_EQ(opened->second.records, std::vector<std::string>{"first record"}) << cut;
    EXPECT_EQ(opened->second.dropped_bytes, static_cast<int64_t>(cut - first_len));
    EXPECT_EQ(opened->second.dropped_bytes > 0, !opened->second.dropped_reason.empty());
    // The tail was truncated: appending after it replays cleanly.
    ASSERT_TRUE(opened->first.Append("third").ok());
    auto read = Journal::Read(path);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->records, (std::vector<std::string>{"first record", "third"})) << cut;
    EXPECT_EQ(read->dropped_bytes, 0) << cut;  // nothing of the torn tail is left
  }
}

TEST(JournalTest, CorruptPayloadStopsReplay) {
  TempDir dir;
  const std::string path = dir.File("journal");
  {
    auto opened = Journal::Open(path);
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE(opened->first.Append("aaaa").ok());
    ASSERT_TRUE(opened->first.Append("bbbb").ok());
    ASSERT_TRUE(opened->first.Append("cccc").ok());
  }
  std::string data = ReadFile(path);
  data[12 + 8] ^= 1;  // a byte of the second payload
  WriteFile(path, data);
  auto read = Journal::Read(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->records, std::vector<std::string>{"aaaa"});
  EXPECT_NE(read->dropped_reason.find("checksum"), std::string::npos);
}

TEST(JournalTest, AbsurdLengthIsATornTailNotAnAllocation) {
  TempDir dir;
  const std::string path = dir.File("journal");
  WriteFile(path, std::string("\xff\xff\xff\xff\0\0\0\0", 8));
  auto read = Journal::Read(path);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->records.empty());
  EXPECT_EQ(read->dropped_bytes, 8);
}

TEST(JournalTest, UnwritableDirectoryIsAnError) {
  auto opened = Journal::Open("/nonexistent-dir/journal");
  EXPECT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("/nonexistent-dir/journal"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::service
