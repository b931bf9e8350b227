// TFRecord offset index: random access to the records of an uncompressed TFRecord file.
//
// The index of `data.tfrecord` lives beside it, in `data.tfrecord.index`
// (TFRecordIndexPath), built by `sluice index <files...>` (tools/index_command.cc),
// sluice.io.build_tfrecord_index (Python) or WriteTFRecordIndex. Format, little endian:
//
//   char[8]  magic "SLTFRIDX"
//   uint32   version (1)
//   uint32   reserved (0)
//   uint64   size of the data file when indexed (bytes)
//   int64    mtime of the data file when indexed (ns since the epoch)
//   uint64   record count n
//   uint64   offset[n]      start of each record (its 12-byte header) in the data file
//   uint32   masked crc32c of every byte above
//
// A file that is not such an index (wrong magic or version, a size that does not match the
// count, a CRC mismatch, offsets not strictly increasing or past the data file's size) is
// DataLoss naming the index file. An index whose recorded size or mtime differs from the
// data file's now is stale (IndexFresh): the TFRecord source ignores a stale index with a
// warning and reads the file sequentially (docs/files.md#tfrecord-offset-index).
//
// Only uncompressed files can be indexed (a gzip stream has no random access):
// BuildTFRecordIndex refuses compressed files, and the source ignores indexes of them.
//
// Thread-safety: free functions; a TFRecordIndex is an immutable value once built.
#ifndef SLUICE_FORMATS_TFRECORD_INDEX_H_
#define SLUICE_FORMATS_TFRECORD_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "sluice/status.h"

namespace sluice {

inline constexpr char kTFRecordIndexMagic[] = "SLTFRIDX";  // 8 bytes, no terminator
inline constexpr uint32_t kTFRecordIndexVersion = 1;
inline constexpr char kTFRecordIndexSuffix[] = ".index";

struct TFRecordIndex {
  uint64_t file_size = 0;  // of the data file when indexed
  int64_t mtime_ns = 0;    // of the data file when indexed
  std::vector<uint64_t> offsets;  // start of each record, strictly increasing
};

// `file` + ".index".
std::string TFRecordIndexPath(const std::string& file);

// Reads every record of the uncompressed TFRecord `file` through `env` (null: Env::Default())
// and returns their offsets with the file's size and mtime. A damaged record is an error
// (DataLoss naming the file and offset): an index must cover exactly the records a
// sequential read yields.
Result<TFRecordIndex> BuildTFRecordIndex(const std::string& file, Env* env = nullptr);

// The index's bytes (the format above).
std::string EncodeTFRecordIndex(const TFRecordIndex& index);
// Parses index bytes; `name` (the index file) is named in errors (DataLoss).
Result<TFRecordIndex> DecodeTFRecordIndex(std::string_view bytes, const std::string& name);

// Builds the index of `file` and writes it to TFRecordIndexPath(file), atomically (a
// temporary file renamed over it). Returns the index written.
Result<TFRecordIndex> WriteTFRecordIndex(const std::string& file, Env* env = nullptr);

// Reads TFRecordIndexPath(file): NotFound when there is none, DataLoss when it is not a
// valid index. Does not check freshness.
Result<TFRecordIndex> ReadTFRecordIndex(const std::string& file, Env* env = nullptr);

// The record that starts at `offset` of `file` (an open handle on the uncompressed
// TFRecord file `name`), both checksums verified: DataLoss naming the file and offset on a
// damaged, truncated or implausibly long record.
Result<std::string> ReadTFRecordAt(RandomAccessFile& file, const std::string& name,
                                   uint64_t offset);

// Whether `index` still describes the data file `stat` describes (same size and mtime).
inline bool IndexFresh(const TFRecordIndex& index, const FileStat& stat) {
  return index.file_size == stat.size && index.mtime_ns == stat.mtime_ns;
}

}  // namespace sluice

#endif  // SLUICE_FORMATS_TFRECORD_INDEX_H_
