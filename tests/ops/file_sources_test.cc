// ListFiles and ImageFolder.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "api/dataset_internal.h"
#include "runtime/iterator_base.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::TempDir;
using testing::WriteFile;

std::vector<Element> Strings(const std::vector<std::string>& v) {
  std::vector<Element> out;
  for (const std::string& s : v) out.push_back(Element{Tensor::Scalar(s)});
  return out;
}

std::vector<std::string> StringsOf(const std::vector<Element>& es) {
  std::vector<std::string> out;
  for (const Element& e : es) out.push_back(e[0].scalar<std::string>());
  return out;
}

void MakeDirs(const std::string& path) {
  std::string p;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      mkdir(path.substr(0, i).c_str(), 0755);
    }
  }
}

void Touch(const std::string& path) {
  MakeDirs(path.substr(0, path.rfind('/')));
  WriteFile(path, "x");
}

// ---- ListFiles ----

TEST(ListFilesTest, SortedUnionOfMatches) {
  TempDir dir;
  const std::string d = dir.path();
  for (const char* f : {"b.txt", "a.txt", "c.log", ".hidden.txt", "sub/d.txt"})
    Touch(d + "/" + f);
  Dataset ds = Dataset::ListFiles({d + "/*.txt"}, /*shuffle=*/false);
  ASSERT_TRUE(ds.ok()) << ds.status();
  // `*` matches a leading '.', as TensorFlow's matching does; it never crosses '/'.
  std::vector<std::string> want = {d + "/.hidden.txt", d + "/a.txt", d + "/b.txt"};
  EXPECT_EQ(ds.Cardinality(), 3);
  EXPECT_EQ(ds.element_spec().ToString(), "(string[])");
  CheckDataset(ds, Strings(want));

  // Several patterns: merged, sorted, each file once.
  Dataset many =
      Dataset::ListFiles({d + "/*/*.txt", d + "/a.*", d + "/*.log", d + "/a.txt"}, false);
  ASSERT_TRUE(many.ok()) << many.status();
  CheckDataset(many, Strings({d + "/a.txt", d + "/c.log", d + "/sub/d.txt"}));

  // A directory matches like a file (tf.io.matching_files lists it too); "." and ".."
  // never.
  Dataset star = Dataset::ListFiles({d + "/*"}, false);
  ASSERT_TRUE(star.ok());
  EXPECT_EQ(StringsOf(testing::CollectOrDie(star)),
            (std::vector<std::string>{d + "/.hidden.txt", d + "/a.txt", d + "/b.txt",
                                      d + "/c.log", d + "/sub"}));
}

TEST(ListFilesTest, NoMatchIsAnErrorNamingThePatterns) {
  TempDir dir;
  Dataset ds = Dataset::ListFiles({dir.File("*.nope"), dir.File("x?")}, false);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find(dir.File("*.nope")), std::string::npos)
      << ds.status();
  EXPECT_NE(ds.status().message().find(dir.File("x?")), std::string::npos) << ds.status();
  EXPECT_FALSE(Dataset::ListFiles({}, false).ok());
}

TEST(ListFilesTest, ShuffleIsSeededAndReshufflesEachIteration) {
  TempDir dir;
  std::vector<std::string> sorted;
  for (int i = 0; i < 20; ++i) {
    std::string f = dir.File("f" + std::to_string(100 + i));
    Touch(f);
    sorted.push_back(f);
  }
  Dataset ds = Dataset::ListFiles({dir.File("f*")}, /*shuffle=*/true, /*seed=*/42);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds.Cardinality(), 20);
  // Restoring reproduces the same permutation at every position.
  CheckDataset(ds, Strings(sorted), {.same_each_iteration = false});

  Dataset fresh = Dataset::ListFiles({dir.File("f*")}, true, 42);
  std::vector<std::string> first = StringsOf(testing::CollectOrDie(fresh));
  std::vector<std::string> second = StringsOf(testing::CollectOrDie(fresh));
  EXPECT_NE(first, sorted);  // shuffled (20! orders; a fixed seed)
  EXPECT_NE(first, second);  // each iteration reshuffles
  std::vector<std::string> a = first, b = second;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, sorted);  // permutations of the listing
  EXPECT_EQ(b, sorted);
  // The same seed gives the same sequence of orders.
  Dataset again = Dataset::ListFiles({dir.File("f*")}, true, 42);
  EXPECT_EQ(StringsOf(testing::CollectOrDie(again)), first);
  EXPECT_EQ(StringsOf(testing::CollectOrDie(again)), second);
  Dataset other = Dataset::ListFiles({dir.File("f*")}, true, 43);
  EXPECT_NE(StringsOf(testing::CollectOrDie(other)), first);

  // Repeat epochs reshuffle too (the epoch is mixed into the iterator context's seed).
  Dataset twice = Dataset::ListFiles({dir.File("f*")}, true, 42).Repeat(2);
  ASSERT_TRUE(twice.ok()) << twice.status();
  std::vector<std::string> all = StringsOf(testing::CollectOrDie(twice));
  ASSERT_EQ(all.size(), 40u);
  std::vector<std::string> e1(all.begin(), all.begin() + 20),
      e2(all.begin() + 20, all.end());
  EXPECT_NE(e1, e2);
  std::sort(e2.begin(), e2.end());
  EXPECT_EQ(e2, sorted);
}

TEST(ListFilesTest, SkipIsPositional) {
  TempDir dir;
  std::vector<std::string> files;
  for (int i = 0; i < 10; ++i) {
    files.push_back(dir.File("g" + std::to_string(i)));
    Touch(files.back());
  }
  Dataset ds = Dataset::ListFiles({dir.File("g*")}, false);
  auto it = NodeOf(ds)->MakeIterator(IteratorContext{}, "Root");
  ASSERT_TRUE(it.ok());
  auto k = (*it)->Skip(7);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, 7);
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e)[0].scalar<std::string>(), files[7]);
  k = (*it)->Skip(5);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, 2);
}

// ---- ImageFolder ----

struct Labeled {
  std::string path;
  int64_t label;
};

std::vector<Element> LabeledElements(const std::vector<Labeled>& v) {
  std::vector<Element> out;
  for (const Labeled& l : v) {
    out.push_back(Element({Tensor::Scalar(l.path), Tensor::Scalar<int64_t>(l.label)},
                          MakeNames({"path", "label"})));
  }
  return out;
}

TEST(ImageFolderTest, ClassesFilesAndTorchvisionOrder) {
  TempDir dir;
  const std::string r = dir.path();
  // torchvision lists directories sorted by full path: "cat/a" < "cat/a-b" < "cat/a/z".
  for (const char* f :
       {"cat/b.JPG", "cat/a.jpg", "cat/notes.txt", "cat/a/1.jpg", "cat/a-b/2.jpeg",
        "cat/a/z/3.jpg", "dog/y.jpg", "dog/x.png", "bird/nest/egg.Jpg"}) {
    Touch(r + "/" + f);
  }
  WriteFile(r + "/README", "a file at the top is not a class");
  Dataset ds = Dataset::ImageFolder(r, {"jpg", ".JPEG"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<Labeled> want = {
      {r + "/bird/nest/egg.Jpg", 0}, {r + "/cat/a.jpg", 1},
      {r + "/cat/b.JPG", 1},         {r + "/cat/a/1.jpg", 1},
      {r + "/cat/a-b/2.jpeg", 1},    {r + "/cat/a/z/3.jpg", 1},
      {r + "/dog/y.jpg", 2},
  };
  EXPECT_EQ(ds.Cardinality(), 7);
  EXPECT_EQ(ds.element_spec().ToString(), "(path: string[], label: int64[])");
  CheckDataset(ds, LabeledElements(want));
  auto first = testing::CollectOrDie(ds)[0];
  ASSERT_TRUE(first.names() != nullptr);
  EXPECT_EQ(*first.names(), (std::vector<std::string>{"path", "label"}));

  // No extensions: every file.
  Dataset all = Dataset::ImageFolder(r);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all.Cardinality(), 9);
  auto elems = testing::CollectOrDie(all);
  ASSERT_EQ(elems.size(), 9u);
  EXPECT_EQ(elems[3][0].scalar<std::string>(),
            r + "/cat/notes.txt");  // after a.jpg, b.JPG
  EXPECT_EQ(elems[7][0].scalar<std::string>(), r + "/dog/x.png");
  EXPECT_EQ(elems[8][1].scalar<int64_t>(), 2);

  // A trailing slash on root does not double it.
  auto slash = Dataset::ImageFolder(r + "/", {"jpg"});
  ASSERT_TRUE(slash.ok()) << slash.status();
  EXPECT_EQ(testing::CollectOrDie(slash)[0][0].scalar<std::string>(),
            r + "/bird/nest/egg.Jpg");

  // Classes without a matching file are an error naming them (as in torchvision).
  auto png = Dataset::ImageFolder(r, {"png"});
  ASSERT_FALSE(png.ok());
  EXPECT_NE(png.status().message().find("'bird', 'cat'"), std::string::npos)
      << png.status();
}

TEST(ImageFolderTest, SymlinkedClassesAndCycles) {
  TempDir dir;
  const std::string r = dir.path() + "/root";
  Touch(dir.path() + "/elsewhere/p.jpg");
  Touch(r + "/a/q.jpg");
  ASSERT_EQ(symlink((dir.path() + "/elsewhere").c_str(), (r + "/b").c_str()), 0);
  ASSERT_EQ(symlink(r.c_str(), (r + "/a/loop").c_str()), 0);  // a cycle back to root
  Dataset ds = Dataset::ImageFolder(r, {"jpg"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto got = testing::CollectOrDie(ds);
  // root/a/loop/a is root/a again (walked once), root/a/loop/b leads into elsewhere.
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0][0].scalar<std::string>(), r + "/a/q.jpg");
  EXPECT_EQ(got[1][0].scalar<std::string>(), r + "/a/loop/b/p.jpg");
  EXPECT_EQ(got[1][1].scalar<int64_t>(), 0);
  EXPECT_EQ(got[2][0].scalar<std::string>(), r + "/b/p.jpg");
  EXPECT_EQ(got[2][1].scalar<int64_t>(), 1);
}

TEST(ImageFolderTest, Errors) {
  TempDir dir;
  Dataset missing = Dataset::ImageFolder(dir.File("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("nope")), std::string::npos);

  Touch(dir.File("flat/x.jpg"));
  Dataset no_classes = Dataset::ImageFolder(dir.File("flat"));
  ASSERT_FALSE(no_classes.ok());
  EXPECT_NE(no_classes.status().message().find("no class directories"), std::string::npos)
      << no_classes.status();
  EXPECT_FALSE(Dataset::ImageFolder(dir.File("flat/x.jpg")).ok());  // not a directory

  MakeDirs(dir.File("r/empty"));
  Touch(dir.File("r/full/x.jpg"));
  Dataset empty_class = Dataset::ImageFolder(dir.File("r"));
  ASSERT_FALSE(empty_class.ok());
  EXPECT_NE(empty_class.status().message().find("'empty'"), std::string::npos)
      << empty_class.status();
  EXPECT_FALSE(Dataset::ImageFolder(dir.File("r"), {""}).ok());
}

TEST(ImageFolderTest, SkipIsPositional) {
  TempDir dir;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i)
      Touch(dir.File("c" + std::to_string(c) + "/" + std::to_string(i)));
  }
  Dataset ds = Dataset::ImageFolder(dir.path());
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto it = NodeOf(ds)->MakeIterator(IteratorContext{}, "Root");
  ASSERT_TRUE(it.ok());
  ASSERT_EQ(*(*it)->Skip(6), 6);
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e)[0].scalar<std::string>(), dir.File("c1/2"));
  EXPECT_EQ((**e)[1].scalar<int64_t>(), 1);
  EXPECT_EQ(*(*it)->Skip(100), 5);
}

}  // namespace
}  // namespace sluice
