// libFuzzer target for the record readers: InputStream (all compressions, tiny to default
// buffers) and TFRecordReader with continuation after errors (damage, resync,
// truncation).
//
// Input: byte 0 picks the compression (value % 3: none, gzip, zlib) and the buffer size
// (value / 3: 0 = default, else that many bytes); the rest is the file's content.
// Besides "no crash, no leak, no hang", it checks the contracts the ops rely on: after an
// error the reader has made progress, the end is sticky, and SeekTo(offset of a returned
// record) on a fresh reader returns the same record (what checkpoint restore does).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/input_stream.h"
#include "formats/tfrecord.h"

namespace {

using sluice::Compression;
using sluice::InputStream;
using sluice::TFRecordReader;

void Check(bool ok) {
  if (!ok) abort();
}

TFRecordReader Reader(std::string_view bytes, Compression c, size_t buffer) {
  TFRecordReader::Options o;
  o.compression = c;
  o.buffer_size = buffer;
  o.resync_probe_budget = 1 << 20;
  return TFRecordReader(InputStream::FromMemory("fuzz", bytes, c, buffer), o);
}

void FuzzRecords(std::string_view bytes, Compression c, size_t buffer) {
  TFRecordReader reader = Reader(bytes, c, buffer);
  std::vector<std::pair<uint64_t, std::string>> kept;
  bool ended = false;
  for (int i = 0; i < (1 << 20) && !ended; ++i) {
    const uint64_t before = reader.offset();
    auto rec = reader.ReadRecord();
    if (!rec.ok()) {
      Check(!rec.status().message().empty());
      Check(reader.done() || reader.offset() > before);  // progress after an error
      continue;
    }
    if (!rec->has_value()) {
      ended = true;
      break;
    }
    if (kept.size() < 4) kept.emplace_back(reader.last_record_offset(), std::move(**rec));
  }
  Check(ended);
  auto again = reader.ReadRecord();
  Check(again.ok() && !again->has_value());  // the end is sticky

  for (const auto& [offset, data] : kept) {
    TFRecordReader fresh = Reader(bytes, c, buffer);
    Check(fresh.SeekTo(offset).ok());
    auto rec = fresh.ReadRecord();
    Check(rec.ok() && rec->has_value() && **rec == data);
  }
}

void FuzzLines(std::string_view bytes, Compression c, size_t buffer) {
  auto in = InputStream::FromMemory("fuzz", bytes, c, buffer);
  std::string line;
  for (int i = 0; i < (1 << 20); ++i) {
    const uint64_t before = in->Tell();
    auto got = in->ReadLine(&line);
    if (!got.ok() || !*got) break;
    Check(in->Tell() > before);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Compression c = data[0] % 3 == 0   ? Compression::kNone
                        : data[0] % 3 == 1 ? Compression::kGzip
                                           : Compression::kZlib;
  const size_t buffer = data[0] / 3 == 0 ? InputStream::kDefaultBufferSize : data[0] / 3;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  FuzzRecords(bytes, c, buffer);
  FuzzLines(bytes, c, buffer);
  return 0;
}
