#include "testing/conformance.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/dataset_internal.h"

namespace sluice::testing {
namespace {

std::string Describe(const std::vector<Element>& es) {
  std::string s;
  for (size_t i = 0; i < es.size() && i < 20; ++i) s += "  " + es[i].DebugString(4) + "\n";
  if (es.size() > 20) s += "  ...(" + std::to_string(es.size()) + " in all)\n";
  return s;
}

bool SameSequence(const std::vector<Element>& a, const std::vector<Element>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].ContentEquals(b[i])) return false;
  }
  return true;
}

bool SameMultiset(std::vector<Element> a, std::vector<Element> b) {
  if (a.size() != b.size()) return false;
  auto key = [](const Element& e) { return e.DebugString(1 << 20); };
  std::vector<std::string> ka, kb;
  for (auto& e : a) ka.push_back(key(e));
  for (auto& e : b) kb.push_back(key(e));
  std::sort(ka.begin(), ka.end());
  std::sort(kb.begin(), kb.end());
  return ka == kb;
}

// Reads up to `n` elements (all when n < 0); records an error status if one occurs.
std::vector<Element> Read(Iterator* it, int64_t n, Status* error) {
  std::vector<Element> out;
  while (n < 0 || static_cast<int64_t>(out.size()) < n) {
    auto e = it->GetNext();
    if (!e.ok()) {
      *error = e.status();
      return out;
    }
    if (!*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

}  // namespace

std::vector<Element> CollectOrDie(const Dataset& ds) {
  auto r = ds.Collect();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<Element>{};
}

void CheckDataset(const Dataset& ds, const std::vector<Element>& expected,
                  const ConformanceOptions& opts) {
  ASSERT_TRUE(ds.ok()) << ds.status();
  const int64_t n = static_cast<int64_t>(expected.size());

  // 1. The sequence, then a sticky end.
  auto it_or = MakeIteratorAsBuilt(ds, opts.runtime);
  ASSERT_TRUE(it_or.ok()) << it_or.status();
  std::unique_ptr<Iterator> it = std::move(it_or).value();
  Status err;
  std::vector<Element> got = Read(it.get(), -1, &err);
  ASSERT_TRUE(err.ok()) << err;
  if (opts.ordered && opts.same_each_iteration) {
    EXPECT_TRUE(SameSequence(got, expected)) << "expected:\n" << Describe(expected) << "got:\n"
                                             << Describe(got);
  } else {
    EXPECT_TRUE(SameMultiset(got, expected)) << "expected (any order):\n" << Describe(expected)
                                             << "got:\n" << Describe(got);
  }
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_FALSE(e->has_value()) << "GetNext after the end returned an element";
  }

  // 2. Cardinality.
  int64_t card = ds.Cardinality();
  EXPECT_TRUE(card == n || card == kUnknownCardinality)
      << "Cardinality() = " << card << " but the dataset has " << n << " elements";

  // 3. Element spec agrees with the elements.
  for (const Element& e : got) {
    Status s = ds.element_spec().Check(e);
    EXPECT_TRUE(s.ok()) << "element " << e.DebugString() << " does not match the spec "
                        << ds.element_spec().ToString() << ": " << s;
    if (!s.ok()) break;
  }

  if (!opts.check_save_restore) return;

  // 4. Save at every position, restore into a fresh iterator, compare with continuing.
  for (int64_t k = 0; k <= n; k += std::max<int64_t>(1, opts.save_restore_stride)) {
    SCOPED_TRACE("save/restore at position " + std::to_string(k));
    auto a = MakeIteratorAsBuilt(ds, opts.runtime);
    ASSERT_TRUE(a.ok()) << a.status();
    std::vector<Element> prefix = Read(a->get(), k, &err);
    ASSERT_TRUE(err.ok()) << err;
    auto ckpt = (*a)->Save();
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    std::vector<Element> rest_a = Read(a->get(), -1, &err);
    ASSERT_TRUE(err.ok()) << err;

    auto b = MakeIteratorAsBuilt(ds, opts.runtime);
    ASSERT_TRUE(b.ok()) << b.status();
    Status rs = (*b)->Restore(*ckpt);
    ASSERT_TRUE(rs.ok()) << rs;
    std::vector<Element> rest_b = Read(b->get(), -1, &err);
    ASSERT_TRUE(err.ok()) << err;
    if (opts.ordered) {
      EXPECT_TRUE(SameSequence(rest_a, rest_b))
          << "continuing:\n" << Describe(rest_a) << "restored:\n" << Describe(rest_b);
    } else {
      EXPECT_TRUE(SameMultiset(rest_a, rest_b))
          << "continuing:\n" << Describe(rest_a) << "restored:\n" << Describe(rest_b);
    }
    std::vector<Element> whole = prefix;
    whole.insert(whole.end(), rest_b.begin(), rest_b.end());
    if (opts.ordered && opts.same_each_iteration) {
      EXPECT_TRUE(SameSequence(whole, expected)) << "prefix + restored rest:\n" << Describe(whole);
    } else {
      EXPECT_TRUE(SameMultiset(whole, expected)) << "prefix + restored rest:\n" << Describe(whole);
    }
    if (k == n / 2) {
      // A corrupted checkpoint is rejected, never crashes.
      std::string bad = *ckpt;
      bad[bad.size() / 2] ^= 0x5a;
      auto c = MakeIteratorAsBuilt(ds, opts.runtime);
      ASSERT_TRUE(c.ok());
      EXPECT_FALSE((*c)->Restore(bad).ok());
      EXPECT_FALSE((*c)->Restore(bad.substr(0, bad.size() / 3)).ok());
    }
  }
}

Dataset FailingAt(int64_t n, int64_t k) {
  return Dataset::Range(n).Map(Function::Map(
      "fail_at", [k](Element e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == k) {
          return InvalidArgumentError("injected failure at " + std::to_string(k));
        }
        return e;
      }));
}

void CheckTransform(const Transform& t, const std::vector<Element>& expected_on_empty) {
  {
    SCOPED_TRACE("error propagation");
    Dataset ds = t(FailingAt(10, 3));
    ASSERT_TRUE(ds.ok()) << ds.status();
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it.ok()) << it.status();
    bool saw = false;
    for (int i = 0; i < 200; ++i) {
      auto e = (*it)->GetNext();
      if (!e.ok()) {
        if (e.status().message().find("injected failure at 3") != std::string::npos) saw = true;
        else ADD_FAILURE() << "unexpected error: " << e.status();
        continue;
      }
      if (!e->has_value()) break;
    }
    EXPECT_TRUE(saw) << "the injected error did not surface";
  }
  {
    SCOPED_TRACE("empty input");
    Dataset ds = t(Dataset::Range(0));
    ASSERT_TRUE(ds.ok()) << ds.status();
    auto got = ds.Collect();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameSequence(*got, expected_on_empty)) << Describe(*got);
  }
}

std::vector<Element> Ints(const std::vector<int64_t>& values) {
  std::vector<Element> out;
  for (int64_t v : values) out.push_back(Element{Tensor::Scalar<int64_t>(v)});
  return out;
}

int64_t IntOf(const Element& e) {
  EXPECT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].dtype(), DType::kInt64);
  return e[0].scalar<int64_t>();
}

std::vector<int64_t> IntsOf(const std::vector<Element>& es) {
  std::vector<int64_t> v;
  for (const Element& e : es) v.push_back(IntOf(e));
  return v;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "sluice_test_XXXXXX").string();
  char* p = mkdtemp(tmpl.data());
  EXPECT_NE(p, nullptr);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream f(path, std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f << contents;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string SluiceBinary() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string self(buf, n > 0 ? n : 0);
  return self.substr(0, self.rfind('/')) + "/sluice";
}

int WaitForPortFile(const std::string& file, int64_t timeout_ms) {
  for (int64_t waited = 0;; waited += 50) {
    std::ifstream f(file);
    int port = 0;
    if (f >> port && port > 0) return port;
    if (waited >= timeout_ms) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string SourceDir() {
  const char* d = std::getenv("SLUICE_SOURCE_DIR");
  return d ? d : ".";
}

}  // namespace sluice::testing
