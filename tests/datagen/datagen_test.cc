// The image encoders (src/formats/image_encode.cc) and the ImageNet-like generator
// (src/datagen/imagenet_like.h): encodings checked by PIL, the generated set checked for
// determinism, its promised distributions, decodability (sluice's decoder and PIL), and
// the TFRecord and ImageFolder views of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "datagen/imagenet_like.h"
#include "formats/image_codec.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"
#include "testing/python_reference.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::ReadNpy;
using testing::RunReferenceScript;
using testing::TempDir;
using testing::WriteFile;

// ---- encoders ----

// A smooth, photo-like test image: gradients and a low-frequency wave per channel.
Tensor SmoothImage(int64_t h, int64_t w, int64_t channels) {
  Tensor t(DType::kUInt8, Shape{h, w, channels});
  uint8_t* p = t.mutable_data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t c = 0; c < channels; ++c) {
        const double v = 128 + 60 * std::sin(0.11 * x + 0.7 * c) * std::cos(0.07 * y) +
                         40.0 * (x - w / 2.0) / w +
                         30.0 * (y - h / 2.0) / h * (c == 1 ? -1 : 1);
        p[(y * w + x) * channels + c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return t;
}

// Every byte drawn at random: the worst case for lossy codecs, exact for PNG.
Tensor NoiseImage(int64_t h, int64_t w, int64_t channels, uint64_t seed) {
  Tensor t(DType::kUInt8, Shape{h, w, channels});
  Rng rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(rng.Next32());
  }
  return t;
}

double Psnr(const Tensor& a, const Tensor& b) {
  double se = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double d = static_cast<double>(a.data<uint8_t>()[i]) - b.data<uint8_t>()[i];
    se += d * d;
  }
  const double mse = se / a.num_elements();
  return mse == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
}

// Writes `data` to dir/name and decodes it with PIL; *info gets "FORMAT MODE SAMPLING".
Tensor PilDecode(const TempDir& dir, const std::string& name, const std::string& data,
                 std::string* info) {
  WriteFile(dir.File(name), data);
  if (!RunReferenceScript("pil_decode.py", {dir.File(name), dir.File(name + ".npy")})) {
    return Tensor();
  }
  std::string text = ReadFile(dir.File(name + ".npy.txt"));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  *info = text;
  return ReadNpy(dir.File(name + ".npy"));
}

TEST(EncodeJpegTest, PilDecodesWhatWasEncoded) {
  TempDir dir;
  const Tensor rgb = SmoothImage(48, 64, 3);
  for (const char* sub : {"444", "422", "420"}) {
    SCOPED_TRACE(sub);
    Result<std::string> jpeg = EncodeJpeg(rgb, 95, sub);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status();
    EXPECT_EQ(DetectImageFormat(*jpeg), ImageFormat::kJpeg);
    std::string info;
    Tensor back = PilDecode(dir, std::string("rgb") + sub + ".jpg", *jpeg, &info);
    ASSERT_EQ(back.shape(), rgb.shape());
    const std::string sampling = sub == std::string("444")   ? "0"
                                 : sub == std::string("422") ? "1"
                                                             : "2";
    EXPECT_EQ(info, "JPEG RGB " + sampling);
    EXPECT_GT(Psnr(rgb, back), 30.0);
  }
  // Grayscale: a one-component JPEG, PIL mode L.
  const Tensor gray = SmoothImage(33, 47, 1);
  Result<std::string> jpeg = EncodeJpeg(gray, 95);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  std::string info;
  Tensor back = PilDecode(dir, "gray.jpg", *jpeg, &info);
  ASSERT_EQ(back.shape(), gray.shape());
  EXPECT_EQ(info, "JPEG L -1");
  EXPECT_GT(Psnr(gray, back), 30.0);
}

TEST(EncodeJpegTest, QualityTradesSizeForFidelity) {
  const Tensor img = SmoothImage(64, 64, 3);
  Result<std::string> low = EncodeJpeg(img, 20);
  Result<std::string> high = EncodeJpeg(img, 95);
  ASSERT_TRUE(low.ok() && high.ok());
  EXPECT_LT(low->size(), high->size());
  Result<Tensor> low_px = DecodeJpeg(*low);
  Result<Tensor> high_px = DecodeJpeg(*high);
  ASSERT_TRUE(low_px.ok() && high_px.ok());
  EXPECT_LT(Psnr(img, *low_px), Psnr(img, *high_px));
}

TEST(EncodePngTest, RoundTripsExactlyThroughPil) {
  TempDir dir;
  for (int64_t channels : {1, 3}) {
    SCOPED_TRACE(channels);
    const Tensor img = NoiseImage(19, 23, channels, 7 + channels);
    Result<std::string> png = EncodePng(img);
    ASSERT_TRUE(png.ok()) << png.status();
    EXPECT_EQ(DetectImageFormat(*png), ImageFormat::kPng);
    std::string info;
    Tensor back = PilDecode(dir, "img" + std::to_string(channels) + ".png", *png, &info);
    EXPECT_EQ(info, channels == 1 ? "PNG L -1" : "PNG RGB -1");
    ASSERT_EQ(back.shape(), img.shape());
    EXPECT_TRUE(back.ContentEquals(img));
  }
}

TEST(EncodeTest, BadInputsAreRejected) {
  const Tensor ok = SmoothImage(8, 8, 3);
  struct Case {
    std::string name;
    Tensor pixels;
    std::string expect;  // in the message
  };
  Tensor empty(DType::kUInt8, Shape{0, 8, 3});
  std::vector<Case> cases = {
      {"float", Tensor::Zeros(DType::kFloat32, Shape{8, 8, 3}), "uint8"},
      {"rank2", Tensor::Zeros(DType::kUInt8, Shape{8, 8}), "rank 3"},
      {"rank4", Tensor::Zeros(DType::kUInt8, Shape{1, 8, 8, 3}), "rank 3"},
      {"two channels", Tensor::Zeros(DType::kUInt8, Shape{8, 8, 2}), "channels"},
      {"four channels", Tensor::Zeros(DType::kUInt8, Shape{8, 8, 4}), "channels"},
      {"empty", empty, "empty"},
      {"invalid", Tensor(), "uint8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::string> j = EncodeJpeg(c.pixels, 90);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(j.status().message().find("jpeg:"), std::string::npos) << j.status();
    EXPECT_NE(j.status().message().find(c.expect), std::string::npos) << j.status();
    Result<std::string> p = EncodePng(c.pixels);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("png:"), std::string::npos) << p.status();
    EXPECT_NE(p.status().message().find(c.expect), std::string::npos) << p.status();
  }
  for (int q : {0, -5, 101}) {
    Result<std::string> j = EncodeJpeg(ok, q);
    ASSERT_FALSE(j.ok());
    EXPECT_NE(j.status().message().find("quality"), std::string::npos) << j.status();
  }
  Result<std::string> j = EncodeJpeg(ok, 90, "411");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("subsampling"), std::string::npos) << j.status();
  // JPEG's side limit.
  Result<std::string> wide =
      EncodeJpeg(Tensor::Zeros(DType::kUInt8, Shape{1, 70000, 1}), 90);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("65535"), std::string::npos) << wide.status();
}

// ---- the generator ----

// FNV-1a over every file under `root`: sorted relative paths, each followed by its bytes.
std::string TreeHash(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), root).string());
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string& f : files) {
    all += f;
    all.push_back('\0');
    all += ReadFile(root + "/" + f);
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Fnv1a64(all)));
  return std::to_string(files.size()) + " files " + buf;
}

struct ManifestLine {
  std::string path;
  int64_t label, width, height, quality, bytes;
  std::string hash;
};

std::vector<ManifestLine> ReadManifest(const std::string& dir) {
  std::vector<ManifestLine> out;
  std::istringstream in(ReadFile(dir + "/MANIFEST"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    ManifestLine m;
    f >> m.path >> m.label >> m.width >> m.height >> m.quality >> m.bytes >> m.hash;
    EXPECT_FALSE(f.fail()) << line;
    out.push_back(m);
  }
  return out;
}

// The set most tests look at: seed 1, 20 images of 10 classes, JPEG folder + 3 shards.
class GeneratedSetTest : public ::testing::Test {
 protected:
  static constexpr int64_t kImages = 20;
  static constexpr int64_t kShards = 3;
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ImagenetLikeOptions o;
    o.num_images = kImages;
    o.seed = 1;
    o.tfrecord_shards = kShards;
    o.threads = 3;
    int64_t calls = 0, last = 0;
    status_ = new Status(
        GenerateImagenetLike(dir_->path(), o, [&](int64_t done, int64_t total) {
          ++calls;
          EXPECT_EQ(done, last + 1);
          EXPECT_EQ(total, kImages);
          last = done;
        }));
    progress_calls_ = calls;
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete status_;
  }
  void SetUp() override { ASSERT_TRUE(status_->ok()) << *status_; }
  static std::string Dir() { return dir_->path(); }

  static TempDir* dir_;
  static Status* status_;
  static int64_t progress_calls_;
};
TempDir* GeneratedSetTest::dir_ = nullptr;
Status* GeneratedSetTest::status_ = nullptr;
int64_t GeneratedSetTest::progress_calls_ = 0;

TEST_F(GeneratedSetTest, ManifestMatchesTheGoldenHash) {
  // Pins the generator's output: any change to the pixels, the parameters or the MANIFEST
  // format changes this hash. The JPEG bytes depend on the encoder: the value holds for
  // Debian's libjpeg-turbo 2.1.5 (libturbojpeg0 1:2.1.5-2) and glibc's libm on x86-64.
  // Update it deliberately when the generator changes.
  const std::string manifest = ReadFile(Dir() + "/MANIFEST");
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Fnv1a64(manifest)));
  EXPECT_EQ(std::string(buf), "9ae1b9ee29a6d515") << manifest;
  EXPECT_EQ(progress_calls_, kImages);
}

TEST_F(GeneratedSetTest, SameSeedSameFilesWhateverTheThreadCount) {
  TempDir other;
  ImagenetLikeOptions o;
  o.num_images = kImages;
  o.seed = 1;
  o.tfrecord_shards = kShards;
  o.threads = 1;
  ASSERT_TRUE(GenerateImagenetLike(other.path(), o).ok());
  const std::string hash = TreeHash(Dir());
  EXPECT_EQ(TreeHash(other.path()), hash);
  // kImages JPEGs + kShards shards + MANIFEST.
  EXPECT_EQ(hash.substr(0, hash.find(' ')), std::to_string(kImages + kShards + 1));

  TempDir seed2;
  o.seed = 2;
  o.threads = 2;
  ASSERT_TRUE(GenerateImagenetLike(seed2.path(), o).ok());
  EXPECT_NE(TreeHash(seed2.path()), hash);
  // Each image differs, not only some.
  const auto a = ReadManifest(Dir()), b = ReadManifest(seed2.path());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i].hash, b[i].hash) << i;
}

TEST_F(GeneratedSetTest, ImagesArePureFunctionsOfSeedAndIndex) {
  const auto manifest = ReadManifest(Dir());
  for (int64_t i : {0, 7, 19}) {
    Result<std::string> jpeg = EncodeImagenetLike(1, 10, i);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status();
    EXPECT_EQ(*jpeg, ReadFile(Dir() + "/" + manifest[i].path)) << i;
    const ImagenetLikeImage p = ImagenetLikeParams(1, 10, i);
    EXPECT_EQ(p.width, manifest[i].width);
    EXPECT_EQ(p.height, manifest[i].height);
    EXPECT_EQ(p.quality, manifest[i].quality);
    EXPECT_EQ(p.label, manifest[i].label);
  }
}

TEST_F(GeneratedSetTest, EveryImageDecodesAndLooksLikeAPhoto) {
  const auto manifest = ReadManifest(Dir());
  ASSERT_EQ(manifest.size(), static_cast<size_t>(kImages));
  double bytes = 0, pixels = 0;
  for (size_t i = 0; i < manifest.size(); ++i) {
    const ManifestLine& m = manifest[i];
    SCOPED_TRACE(m.path);
    EXPECT_EQ(m.label, static_cast<int64_t>(i) % 10);
    const std::string jpeg = ReadFile(Dir() + "/" + m.path);
    EXPECT_EQ(static_cast<int64_t>(jpeg.size()), m.bytes);
    Result<ImageInfo> info = ReadJpegInfo(jpeg);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->width, m.width);
    EXPECT_EQ(info->height, m.height);
    Result<Tensor> px = DecodeJpeg(jpeg, {.channels = 1});
    ASSERT_TRUE(px.ok()) << px.status();
    ASSERT_EQ(px->shape(), (Shape{m.height, m.width, 1}));
    // Photo-like: far from flat, and neighbouring pixels correlated (white noise would
    // give ~0, a flat image an undefined correlation and no variance).
    const uint8_t* p = px->data<uint8_t>();
    const int64_t n = m.height * m.width;
    double mean = 0;
    for (int64_t k = 0; k < n; ++k) mean += p[k];
    mean /= n;
    double var = 0, cov = 0;
    for (int64_t y = 0; y < m.height; ++y) {
      for (int64_t x = 0; x + 1 < m.width; ++x) {
        const double a = p[y * m.width + x] - mean, b = p[y * m.width + x + 1] - mean;
        var += a * a;
        cov += a * b;
      }
    }
    const double stddev = std::sqrt(var / n);
    EXPECT_GT(stddev, 15.0);
    EXPECT_GT(cov / var, 0.3);
    bytes += m.bytes;
    pixels += m.width * m.height;
  }
  // Compressed like photographs at these qualities: neither flat (< 1 bpp) nor noise
  // (> 8 bpp).
  const double bpp = 8 * bytes / pixels;
  EXPECT_GT(bpp, 1.5);
  EXPECT_LT(bpp, 8.0);
}

TEST_F(GeneratedSetTest, PilAgreesWithTheManifest) {
  // Sizes, modes, 4:2:0, the quantization table of the stated quality, hashes, paths.
  EXPECT_TRUE(RunReferenceScript("datagen_check.py", {Dir()}));
}

TEST_F(GeneratedSetTest, TfrecordShardsParseBack) {
  std::vector<std::string> shards;
  for (int64_t s = 0; s < kShards; ++s)
    shards.push_back(TfrecordShardPath(Dir(), s, kShards));
  EXPECT_EQ(fs::path(shards[1]).filename().string(), "train-00001-of-00003");
  Result<Function> parse = Function::Kernel(
      "parse_example",
      {{"keys", std::vector<std::string>{"image/encoded", "image/class/label",
                                         "image/height", "image/width"}},
       {"kinds", std::vector<std::string>{"fixed", "fixed", "fixed", "fixed"}},
       {"dtypes",
        std::vector<DType>{DType::kString, DType::kInt64, DType::kInt64, DType::kInt64}},
       {"shapes", std::vector<PartialShape>{{}, {}, {}, {}}}});
  ASSERT_TRUE(parse.ok()) << parse.status();

  std::map<std::string, size_t> by_hash;  // content hash -> index
  const auto manifest = ReadManifest(Dir());
  for (size_t i = 0; i < manifest.size(); ++i) by_hash[manifest[i].hash] = i;
  std::set<size_t> seen;
  std::vector<size_t> order;
  for (int64_t s = 0; s < kShards; ++s) {
    Result<std::vector<Element>> records =
        Dataset::TFRecord({shards[s]}).Map(*parse).Collect();
    ASSERT_TRUE(records.ok()) << records.status();
    // Round-robin: 20 = 7 + 7 + 6.
    EXPECT_EQ(records->size(), s < 2 ? 7u : 6u);
    for (const Element& e : *records) {
      const std::string& jpeg = e[0].scalar<std::string>();
      char buf[17];
      std::snprintf(buf, sizeof(buf), "%016llx",
                    static_cast<unsigned long long>(Fnv1a64(jpeg)));
      auto it = by_hash.find(buf);
      ASSERT_NE(it, by_hash.end()) << "a record that is no MANIFEST image";
      const ManifestLine& m = manifest[it->second];
      EXPECT_EQ(e[1].scalar<int64_t>(), m.label);
      EXPECT_EQ(e[2].scalar<int64_t>(), m.height);
      EXPECT_EQ(e[3].scalar<int64_t>(), m.width);
      EXPECT_EQ(jpeg, ReadFile(Dir() + "/" + m.path));
      EXPECT_TRUE(seen.insert(it->second).second) << "image " << it->second << " twice";
      order.push_back(it->second);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kImages));
  // A shuffled order, not shard s = {s, s + 3, ...}.
  std::vector<size_t> strided;
  for (int64_t s = 0; s < kShards; ++s) {
    for (int64_t i = s; i < kImages; i += kShards) strided.push_back(i);
  }
  EXPECT_NE(order, strided);
}

TEST_F(GeneratedSetTest, ImageFolderSeesTheClasses) {
  Result<std::vector<Element>> files =
      Dataset::ImageFolder(Dir() + "/train", {".JPEG"}).Collect();
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), static_cast<size_t>(kImages));
  std::set<int64_t> labels;
  for (const Element& e : *files) {
    const std::string path = e[0].scalar<std::string>();
    const int64_t label = e[1].scalar<int64_t>();
    labels.insert(label);
    // ImageFolder numbers the sorted class folders; ours are n<label, 8 digits>.
    EXPECT_EQ(fs::path(path).parent_path().filename().string(), ImagenetWnid(label))
        << path;
  }
  EXPECT_EQ(labels.size(), 10u);
  EXPECT_EQ(ImagenetWnid(3), "n00000003");
}

TEST(ImagenetLikeTest, ParametersFollowTheStatedDistributions) {
  // Parameters only (no pixels), so many images are cheap.
  constexpr int kN = 3000;
  std::vector<int64_t> widths;
  int gray = 0, q_near_90 = 0, four_three = 0, three_four = 0, square = 0;
  std::set<int> qualities;
  for (int i = 0; i < kN; ++i) {
    const ImagenetLikeImage p = ImagenetLikeParams(5, 7, i);
    EXPECT_EQ(p.index, i);
    EXPECT_EQ(p.label, i % 7);
    ASSERT_GE(p.width, 250);
    ASSERT_LE(p.width, 800);
    ASSERT_GE(p.height, 200);
    ASSERT_LE(p.height, 800);
    ASSERT_GE(p.quality, 75);
    ASSERT_LE(p.quality, 97);
    ASSERT_TRUE(p.channels == 1 || p.channels == 3);
    widths.push_back(p.width);
    gray += p.channels == 1;
    q_near_90 += std::abs(p.quality - 90) <= 3;
    qualities.insert(p.quality);
    const double aspect = static_cast<double>(p.width) / p.height;
    four_three += std::abs(aspect / (4.0 / 3) - 1) < 0.1;
    three_four += std::abs(aspect / 0.75 - 1) < 0.1;
    square += std::abs(aspect - 1) < 0.1;
  }
  std::sort(widths.begin(), widths.end());
  const int64_t q1 = widths[kN / 4], median = widths[kN / 2], q3 = widths[3 * kN / 4];
  EXPECT_GT(q1, 350);
  EXPECT_LT(q3, 520);
  EXPECT_NEAR(median, 440, 20);
  EXPECT_LT(widths[kN / 100], 330);       // there is a spread below...
  EXPECT_GT(widths[kN * 99 / 100], 600);  // ...and above
  EXPECT_NEAR(gray / static_cast<double>(kN), 0.02, 0.01);
  EXPECT_GT(q_near_90, kN * 6 / 10);  // mostly around 90
  EXPECT_GE(qualities.size(), 20u);   // but spread over 75..97
  EXPECT_TRUE(qualities.count(75) && qualities.count(97));
  // The modes (within 10%: the jitter, plus a little from the log-uniform share and
  // from 2:3 images whose height was clipped to 800).
  EXPECT_NEAR(four_three / static_cast<double>(kN), 0.45, 0.05);
  EXPECT_NEAR(three_four / static_cast<double>(kN), 0.18, 0.04);
  EXPECT_NEAR(square / static_cast<double>(kN), 0.17, 0.04);
  EXPECT_GT(four_three + three_four + square, kN * 7 / 10);
}

TEST(ImagenetLikeTest, FileSizesSpreadLikeImagenets) {
  // 30 images: mean size in ImageNet's range, sizes spread (busy and calm images).
  std::vector<double> kb;
  double bytes = 0, pixels = 0;
  for (int i = 0; i < 30; ++i) {
    Result<std::string> jpeg = EncodeImagenetLike(11, 10, i);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status();
    const ImagenetLikeImage p = ImagenetLikeParams(11, 10, i);
    kb.push_back(jpeg->size() / 1000.0);
    bytes += jpeg->size();
    pixels += p.width * p.height;
  }
  std::sort(kb.begin(), kb.end());
  const double mean_kb = bytes / 1000 / kb.size();
  EXPECT_GT(mean_kb, 60);
  EXPECT_LT(mean_kb, 150);
  EXPECT_GT(kb.back() / kb.front(), 3.0);
  EXPECT_GT(8 * bytes / pixels, 2.5);
  EXPECT_LT(8 * bytes / pixels, 6.5);
}

TEST(ImagenetLikeTest, StaleFilesOfAnEarlierRunAreRemoved) {
  TempDir dir;
  const std::string keep = dir.File("train/notes.txt");
  ImagenetLikeOptions o;
  o.num_images = 9;
  o.num_classes = 3;
  o.tfrecord_shards = 4;
  ASSERT_TRUE(GenerateImagenetLike(dir.path(), o).ok());
  WriteFile(keep, "mine");
  o.num_images = 4;
  o.tfrecord_shards = 2;
  ASSERT_TRUE(GenerateImagenetLike(dir.path(), o).ok());
  std::vector<std::string> shards, jpegs;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("train-", 0) == 0) shards.push_back(name);
    if (e.path().extension() == ".JPEG") jpegs.push_back(name);
  }
  std::sort(shards.begin(), shards.end());
  EXPECT_EQ(shards,
            (std::vector<std::string>{"train-00000-of-00002", "train-00001-of-00002"}));
  EXPECT_EQ(jpegs.size(), 4u);
  EXPECT_EQ(ReadManifest(dir.path()).size(), 4u);
  EXPECT_EQ(ReadFile(keep), "mine");  // not ours: left alone
}

TEST(ImagenetLikeTest, BadOptionsAreRejected) {
  TempDir dir;
  auto code = [&](ImagenetLikeOptions o) {
    return GenerateImagenetLike(dir.path(), o).code();
  };
  ImagenetLikeOptions o;
  o.num_classes = 0;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o = {};
  o.num_images = -1;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o = {};
  o.tfrecord_shards = -2;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o = {};
  o.threads = -1;
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o = {};
  o.jpeg_folder = false;  // and no shards: nothing to write
  Status s = GenerateImagenetLike(dir.path(), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nothing to write"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(dir.File("MANIFEST")));
  // An unwritable destination is an error naming the path, not a crash.
  WriteFile(dir.File("file"), "x");
  o = {};
  o.num_images = 2;
  s = GenerateImagenetLike(dir.File("file") + "/sub", o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir.File("file")), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
