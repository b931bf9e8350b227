// Checkpoints are bound to their pipeline: a checkpoint records the fingerprint of the
// graph its iterator ran, and restoring it into a different pipeline is refused with an
// error naming both fingerprints (it used to succeed and, for a changed cast, produce
// int32 batches from a float32 pipeline).
#include <gtest/gtest.h>

#include "api/dataset_internal.h"
#include "runtime/checkpoint.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

Function Cast(DType dtype) {
  auto f = Function::Kernel("cast", {{"dtype", dtype}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Saves `from` after `n` elements and restores into a fresh iterator of `to`.
Status SaveAndRestore(const Dataset& from, const Dataset& to, int n = 2) {
  auto a = from.MakeIterator();
  if (!a.ok()) return a.status();
  for (int i = 0; i < n; ++i) {
    auto e = (*a)->GetNext();
    if (!e.ok()) return e.status();
  }
  auto ckpt = (*a)->Save();
  if (!ckpt.ok()) return ckpt.status();
  auto b = to.MakeIterator();
  if (!b.ok()) return b.status();
  return (*b)->Restore(*ckpt);
}

void ExpectRefused(const Dataset& from, const Dataset& to) {
  Status s = SaveAndRestore(from, to);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("different pipeline"), std::string::npos) << s;
  // Both fingerprints (32 hex digits each) are shown, and they differ.
  const size_t first = s.message().find("fingerprint is ");
  const size_t second = s.message().find("pipeline's is ");
  ASSERT_NE(first, std::string::npos) << s;
  ASSERT_NE(second, std::string::npos) << s;
  EXPECT_NE(s.message().substr(first + 15, 32), s.message().substr(second + 14, 32)) << s;
}

TEST(CheckpointFingerprintTest, ADifferentPipelineIsRefused) {
  Dataset r = Dataset::Range(100);
  ExpectRefused(r.Batch(3), r.Batch(4));
  ExpectRefused(r.Shuffle(10, 1), r.Shuffle(20, 1));
  ExpectRefused(r.Map(Cast(DType::kInt32)).Batch(4),
                r.Map(Cast(DType::kFloat32)).Batch(4));
  ExpectRefused(r.Take(50), Dataset::Range(99).Take(50));
}

TEST(CheckpointFingerprintTest, TheSamePipelineBuiltAgainRestores) {
  // Seeds are not part of the fingerprint: an unseeded shuffle built again (as a
  // restarted program does) restores, and local callables are recognized by their names.
  Function twice =
      Function::Map("twice", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(2 * e[0].scalar<int64_t>())};
      });
  auto build = [&] { return Dataset::Range(100).Map(twice).Shuffle(10, 7).Batch(3); };
  EXPECT_TRUE(SaveAndRestore(build(), build()).ok());
  auto unseeded = [] { return Dataset::Range(100).Shuffle(10).Batch(3); };
  Status s = SaveAndRestore(unseeded(), unseeded());
  EXPECT_TRUE(s.ok()) << s;
  // And continuing gives what the saved iterator gives.
  Dataset ds = build();
  auto a = ds.MakeIterator();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->GetNext().ok());
  auto ckpt = (*a)->Save();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  auto b = build().MakeIterator();
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->Restore(*ckpt).ok());
  for (int i = 0; i < 5; ++i) {
    auto x = (*a)->GetNext();
    auto y = (*b)->GetNext();
    ASSERT_TRUE(x.ok() && y.ok());
    ASSERT_TRUE(x->has_value() && y->has_value());
    EXPECT_TRUE((**x)[0].ContentEquals((**y)[0]));
  }
}

// A checkpoint of Range(10) written by hand: Root's own entries and Range's position.
std::string HandWritten(std::optional<int64_t> version, const std::string& fingerprint) {
  CheckpointWriter w;
  if (version) {
    w.WriteInt("Root", "version", *version);
    w.WriteString("Root", "fingerprint", fingerprint);
  }
  w.WriteInt("Root", "instance", 0);
  w.WriteString("Root", "op", "Range");
  w.WriteInt("Root", "next", 4);
  return w.Serialize();
}

TEST(CheckpointFingerprintTest, VersionsAreChecked) {
  Dataset ds = Dataset::Range(10);
  auto it = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(it.ok());
  // Version 1 (no fingerprint) restores as before.
  Status s = (*it)->Restore(HandWritten(std::nullopt, ""));
  ASSERT_TRUE(s.ok()) << s;
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ(testing::IntOf(**e), 4);
  // A later version is refused.
  s = (*it)->Restore(HandWritten(3, ""));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("version 3"), std::string::npos) << s;
  // Version 2 with another pipeline's fingerprint is refused.
  s = (*it)->Restore(HandWritten(2, "00000000000000000000000000000000"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  // A checkpoint this iterator wrote carries version 2 and its fingerprint.
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok());
  auto r = CheckpointReader::Parse(*ckpt);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->ReadInt("Root", "version"), 2);
  EXPECT_EQ(r->ReadString("Root", "fingerprint")->size(), 32u);
}

}  // namespace
}  // namespace sluice
