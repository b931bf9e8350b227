// Small blocks (src/core/small_blocks.h): the size classes, blocks freed on another
// thread coming back to the allocating thread through the shared pool, and a thread's
// lists going to the pool when it exits. Under AddressSanitizer recycling is off (every
// block is malloc's) and only the class test's "not small" half applies.
#include "core/small_blocks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "sluice/element.h"
#include "sluice/tensor.h"

namespace sluice::small_blocks {
namespace {

bool Recycling() { return ClassOf(64) >= 0; }

TEST(SmallBlocks, ClassesAreSixtyFourByteStepsUpToTheLimit) {
  EXPECT_EQ(ClassOf(0), -1);
  EXPECT_EQ(ClassOf(kMaxBytes + 1), -1);
  if (!Recycling()) GTEST_SKIP() << "recycling is off (AddressSanitizer)";
  EXPECT_EQ(ClassOf(1), 0);
  EXPECT_EQ(ClassOf(64), 0);
  EXPECT_EQ(ClassOf(65), 1);
  EXPECT_EQ(ClassOf(kMaxBytes), static_cast<int>(kMaxBytes / kStep) - 1);
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{300}, kMaxBytes}) {
    EXPECT_GE(BlockBytes(ClassOf(bytes)), bytes);
    EXPECT_LT(BlockBytes(ClassOf(bytes)), bytes + kStep);
  }
}

// The class nothing else in this binary uses, so the pool's batches are this test's.
constexpr int kClass = static_cast<int>(kMaxBytes / kStep) - 1;

std::vector<void*> TakeMany(int n) {
  std::vector<void*> blocks;
  for (int i = 0; i < n; ++i) {
    void* p = Take(kClass);
    std::memset(p, 0xab, BlockBytes(kClass));  // the whole block is writable
    blocks.push_back(p);
  }
  return blocks;
}

TEST(SmallBlocks, BlocksFreedOnAnotherThreadComeBackToTheAllocatingThread) {
  if (!Recycling()) GTEST_SKIP() << "recycling is off (AddressSanitizer)";
  const std::vector<void*> first = TakeMany(2000);
  // Another thread frees them all: past its own list's bound they go to the pool in
  // batches (and the rest when it exits).
  std::thread([&] {
    for (void* p : first) Put(p, kClass);
  }).join();
  const std::vector<void*> second = TakeMany(2000);
  const std::set<void*> before(first.begin(), first.end());
  int reused = 0;
  for (void* p : second) reused += before.count(p) > 0 ? 1 : 0;
  EXPECT_EQ(reused, 2000) << "blocks freed on the other thread went back to malloc";
  for (void* p : second) Put(p, kClass);
}

TEST(SmallBlocks, AnElementMadeHereAndFreedThereRecyclesItsMemory) {
  if (!Recycling()) GTEST_SKIP() << "recycling is off (AddressSanitizer)";
  // A scalar element's Buffer and tensor list are small blocks; freeing elements on
  // another thread and making new ones here reuses them (no unbounded growth).
  std::vector<Element> made;
  for (int i = 0; i < 1000; ++i) made.push_back(Element{Tensor::Scalar<int64_t>(i)});
  std::set<const void*> before;
  for (const Element& e : made) before.insert(e[0].raw_data());
  std::thread([moved = std::move(made)]() mutable { moved.clear(); }).join();
  int reused = 0;
  std::vector<Element> again;
  for (int i = 0; i < 1000; ++i) {
    again.push_back(Element{Tensor::Scalar<int64_t>(i)});
    reused += before.count(again.back()[0].raw_data()) > 0 ? 1 : 0;
    EXPECT_EQ(again.back()[0].scalar<int64_t>(), i);
  }
  EXPECT_GT(reused, 900);
}

}  // namespace
}  // namespace sluice::small_blocks
