// libFuzzer target for the TFRecord offset index (formats/tfrecord_index.h): the index
// file is read from disk, so any bytes may arrive.
//
// Input: the index file's bytes. Besides "no crash, no leak, no hang, no huge allocation
// from a forged count", it checks the decoder's contract: a decoded index has strictly
// increasing offsets below the recorded file size, re-encodes to exactly the input, and an
// error is DataLoss naming the file.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "formats/tfrecord_index.h"

namespace {
void Check(bool ok) {
  if (!ok) abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto index = sluice::DecodeTFRecordIndex(bytes, "fuzz.index");
  if (!index.ok()) {
    Check(index.status().code() == sluice::StatusCode::kDataLoss);
    Check(index.status().message().find("fuzz.index") != std::string::npos);
    return 0;
  }
  for (size_t i = 0; i < index->offsets.size(); ++i) {
    Check(index->offsets[i] < index->file_size);
    Check(i == 0 || index->offsets[i - 1] < index->offsets[i]);
  }
  Check(sluice::EncodeTFRecordIndex(*index) == bytes);
  return 0;
}
