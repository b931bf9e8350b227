// TextLine: the lines of text files without their "\n" / "\r\n" endings, one string
// scalar per line (tf.data's TextLineDataset); a last line without a newline is still a
// line. A line longer than kMaxLineBytes (64 MiB; e.g. a file with no newline such as
// /dev/zero) is a ResourceExhausted error naming the file and the line's offset, and ends
// that file. Files are read one after another (ops/sources/file_sequence.h); an I/O or
// decompression error ends its file. Checkpoint: file index + uncompressed offset of the
// next line.
#include "formats/input_stream.h"
#include "ops/ops.h"
#include "ops/sources/file_sequence.h"

namespace sluice {
namespace {

constexpr char kOp[] = "TextLine";
constexpr size_t kMaxLineBytes = size_t{64} << 20;

class TextLineReader : public StreamRecordReader {
 public:
  using StreamRecordReader::StreamRecordReader;

  Result<bool> ReadRecord(std::string* record) override {
    if (record == nullptr) {
      scratch_.clear();
      record = &scratch_;
    }
    return stream().ReadLine(record, kMaxLineBytes);
  }

 private:
  std::string scratch_;  // skipped lines
};

class TextLineDataset : public FileSequenceDataset {
 public:
  TextLineDataset(OpArgs args, FileSourceAttrs attrs)
      : FileSequenceDataset(kOp, std::move(args), std::move(attrs)) {}

  Result<std::unique_ptr<RecordFileReader>> OpenFile(Env* env, size_t i) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> s, OpenStream(env, i));
    return std::unique_ptr<RecordFileReader>(new TextLineReader(std::move(s)));
  }
};

}  // namespace

void RegisterTextLineDataset(Registry* r) {
  r->RegisterOp(FileSourceOpDef(kOp, "Lines of text files, without their line endings (string scalars)."), [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(FileSourceAttrs attrs, ParseFileSourceAttrs(kOp, args));
     return DatasetPtr(
         std::make_shared<TextLineDataset>(std::move(args), std::move(attrs)));
   });
}

}  // namespace sluice
