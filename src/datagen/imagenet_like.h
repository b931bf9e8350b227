// A synthetic ImageNet-like JPEG set for the image pipelines (`sluice datagen imagenet`,
// `sluice demo`, `sluice bench imagenet`).
//
// GenerateImagenetLike(out_dir, opts) writes
//  * out_dir/train/<wnid>/<wnid>_<index>.JPEG when opts.jpeg_folder: one folder per
//    class, named like ImageNet's WordNet ids with the class id padded to 8 digits
//    ("n00000003"), so torchvision's ImageFolder and Dataset::ImageFolder read it
//    (classes sorted by name = by id). <index> is the image's global index 0..n-1.
//  * out_dir/tfrecord/train-SSSSS-of-NNNNN (TfrecordShardPath) when opts.tfrecord_shards
//    > 0: uncompressed TFRecord files of serialized tf.train.Example protos with features
//      "image/encoded"      bytes  the JPEG file
//      "image/class/label"  int64  the class id, 0..num_classes-1
//      "image/height"       int64
//      "image/width"        int64
//    (map entries serialized in key order). The images are visited in a seeded shuffled
//    order (a Fisher-Yates permutation of 0..n-1); the k-th image of that order goes to
//    shard k mod N, so shard sizes differ by at most one and every shard mixes classes.
//  * out_dir/MANIFEST, last, once everything else is written (its presence marks a
//    complete set): one line per image in index order, tab-separated:
//      <relative path> <label> <width> <height> <quality> <bytes> <hash>
//    where the path is the JPEG's path under out_dir (train/<wnid>/<wnid>_<i>.JPEG, also
//    when no folder is written: it names the image) and the hash is the FNV-1a 64-bit
//    hash of the JPEG bytes as 16 lowercase hex digits.
// Files of an earlier run that match these names (train/n????????/n????????_*.JPEG,
// tfrecord/train-?????-of-?????, MANIFEST) are removed first, so a smaller or
// differently sharded set never mixes with stale files. Nothing else is touched.
//
// The images (what `GenerateImagenetLike` promises; the tests check it):
//  * label of image i: i mod num_classes (balanced classes);
//  * width: a lognormal with median 440 px and sigma 0.2, rounded and clipped to
//    [250, 800] (the middle half falls in about 380..500, 80% in 350..570);
//  * aspect ratio width/height: 4:3 (40%), 3:4 (15%), 1:1 (15%), 3:2 (15%), 2:3 (5%),
//    or log-uniform in [0.6, 2] (10%), each times a jitter exp(N(0, 0.03)); height =
//    round(width / aspect) clipped to [200, 800];
//  * JPEG quality: 70% N(90, 2.5) rounded, 30% uniform in 75..97; clipped to [75, 97];
//  * 4:2:0 chroma subsampling (libjpeg-turbo via EncodeJpeg), baseline, no metadata;
//  * about 2% grayscale (1-channel JPEGs), the rest RGB;
//  * content that compresses and decodes like photographs, not like noise or flat color:
//    a smooth background (a color gradient plus 2..4 low-frequency sinusoids, near a
//    per-class hue so labels are learnable), 4..14 large shapes and 10..200 small ones
//    (rotated ellipses and rectangles with shading, hard or soft antialiased edges, some
//    striped) painted over each other, a per-image three-octave color texture on the
//    shapes and, through a coarse mask, on parts of the background (standard deviation
//    about 18..75 levels), a coarse lighting octave, and triangular film grain of peak
//    amplitude 4..10 levels. A per-image "detail" factor (lognormal) scales texture and
//    clutter, so file sizes spread like ImageNet's: measured over 500 images (seed 1),
//    mean 97 KB at a mean 190k pixels (4.1 bits per pixel), 10th/50th/90th percentiles
//    44/83/178 KB.
//
// Determinism: every image is a pure function of (seed, index): all its randomness comes
// from sluice's Rng keyed by the seed, stream = index, so the output does not depend on
// opts.threads or on scheduling. Same options -> bit-identical files, given the same
// build, libm and libjpeg-turbo: per pixel only IEEE arithmetic (+ - * / sqrt, no
// fast-math) and a fixed sine table; libm's exp/log/sin/cos only per image and shape.
//
// Thread-safety: reentrant; concurrent calls must use different out_dirs.
#ifndef SLUICE_DATAGEN_IMAGENET_LIKE_H_
#define SLUICE_DATAGEN_IMAGENET_LIKE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "sluice/status.h"
#include "sluice/tensor.h"

namespace sluice {

struct ImagenetLikeOptions {
  int64_t num_images = 1000;  // 0..10^9
  int64_t num_classes = 10;   // 1..10^8 (wnids have 8 digits)
  uint64_t seed = 0;
  bool jpeg_folder = true;      // write out_dir/train/<wnid>/*.JPEG
  int64_t tfrecord_shards = 0;  // > 0: write that many TFRecord shards (at most 99999)
  int64_t threads = 0;          // worker threads; 0: the cores available to the process
};

// Called on the calling thread after each image is written, in index order of completion
// (done = 1..total).
using DatagenProgressFn = std::function<void(int64_t done, int64_t total)>;

// Writes the set described above. InvalidArgument for options out of range (or when
// neither jpeg_folder nor tfrecord_shards asks for any output); I/O errors name the file.
Status GenerateImagenetLike(const std::string& out_dir, const ImagenetLikeOptions& opts,
                            DatagenProgressFn progress = nullptr);

// ---- The pieces, for tests and tools ----

// One image's parameters, drawn from the image's own random stream.
struct ImagenetLikeImage {
  int64_t index = 0;
  int64_t label = 0;
  int64_t width = 0;
  int64_t height = 0;
  int channels = 3;  // 1 (grayscale) or 3
  int quality = 90;
};

// "n00000003" for class 3.
std::string ImagenetWnid(int64_t label);
// out_dir/tfrecord/train-SSSSS-of-NNNNN (5-digit, zero-padded shard index and count).
std::string TfrecordShardPath(const std::string& out_dir, int64_t shard,
                              int64_t num_shards);
// The parameters of image `index` of the set generated with (seed, num_classes).
ImagenetLikeImage ImagenetLikeParams(uint64_t seed, int64_t num_classes, int64_t index);
// The pixels (uint8 [height, width, channels]) and the JPEG file of image `index`.
Tensor RenderImagenetLike(uint64_t seed, int64_t num_classes, int64_t index);
Result<std::string> EncodeImagenetLike(uint64_t seed, int64_t num_classes, int64_t index);
// FNV-1a, 64 bits (the MANIFEST's content hash).
uint64_t Fnv1a64(std::string_view data);

}  // namespace sluice

#endif  // SLUICE_DATAGEN_IMAGENET_LIKE_H_
