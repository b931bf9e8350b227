// FixedLengthRecord: records of `record_bytes` bytes after a `header_bytes` header and
// before a `footer_bytes` footer of each file, one string scalar per record (tf.data's
// FixedLengthRecordDataset). A trailing partial record is DataLoss naming its offset,
// after the whole records before it were produced (tf.data rejects such an uncompressed
// file up front with InvalidArgument and yields nothing from it; sluice yields what is
// intact). A file shorter than header + footer is DataLoss too. Files are read one after
// another (ops/sources/file_sequence.h). Checkpoint: file index + uncompressed offset.
#include "formats/input_stream.h"
#include "graph/attr.h"
#include "ops/ops.h"
#include "ops/sources/file_sequence.h"

namespace sluice {
namespace {

constexpr char kOp[] = "FixedLengthRecord";
constexpr int64_t kMaxRecordBytes = int64_t{1} << 31;

struct Layout {
  uint64_t record = 0, header = 0, footer = 0;
};

class FixedLengthRecordReader : public StreamRecordReader {
 public:
  FixedLengthRecordReader(std::unique_ptr<InputStream> stream, Layout layout)
      : StreamRecordReader(std::move(stream)), layout_(layout) {}

  // Checks the file holds a header and a footer and moves past the header.
  Status Start() override {
    const std::string& name = stream().name();
    std::optional<uint64_t> size = stream().Size();
    if (size && *size < layout_.header + layout_.footer) {
      return DataLossError("file " + name + " has " + std::to_string(*size) +
                           " bytes, fewer than header_bytes + " + "footer_bytes = " +
                           std::to_string(layout_.header + layout_.footer));
    }
    SLUICE_ASSIGN_OR_RETURN(uint64_t skipped, stream().Skip(layout_.header));
    if (skipped < layout_.header) {
      return DataLossError(
          "file " + name + " has " + std::to_string(skipped) +
          " bytes, fewer than header_bytes = " + std::to_string(layout_.header));
    }
    return Status::OK();
  }

  Result<bool> ReadRecord(std::string* out) override {
    const uint64_t off = stream().Tell();
    const uint64_t want = layout_.record;
    if (std::optional<uint64_t> size = stream().Size()) {
      const uint64_t limit = *size - layout_.footer;  // size >= header + footer (checked)
      if (off >= limit) return false;
      if (limit - off >= want) {
        if (out == nullptr) {
          SLUICE_RETURN_IF_ERROR(stream().SeekTo(off + want));
          return true;
        }
        SLUICE_ASSIGN_OR_RETURN(size_t n, stream().ReadAppend(out, want));
        if (n < want) return Partial(off, n, "the file shrank while being read");
        return true;
      }
      return Partial(off, limit - off, "");
    }
    // Compressed: the size is unknown, so look ahead for the record plus the footer.
    SLUICE_ASSIGN_OR_RETURN(std::string_view v, stream().Peek(want + layout_.footer));
    if (v.size() == want + layout_.footer) {
      if (out != nullptr) out->assign(v.data(), want);
      SLUICE_RETURN_IF_ERROR(stream().Skip(want));
      return true;
    }
    if (v.size() == layout_.footer) return false;
    if (v.size() < layout_.footer) {
      return DataLossError("file " + stream().name() + " ends at uncompressed offset " +
                           std::to_string(off + v.size()) + ", " +
                           std::to_string(layout_.footer - v.size()) +
                           " bytes short of its footer (footer_bytes = " +
                           std::to_string(layout_.footer) + ")");
    }
    return Partial(off, v.size() - layout_.footer, "");
  }

 private:
  Status Partial(uint64_t off, uint64_t have, const std::string& why) {
    std::string msg = "trailing partial record at offset " + std::to_string(off) +
                      " in file " + stream().name() + ": " + std::to_string(have) +
                      " of " + std::to_string(layout_.record) + " bytes (" +
                      std::to_string(layout_.record - have) + " bytes missing)";
    if (layout_.footer > 0)
      msg += " before the " + std::to_string(layout_.footer) + "-byte footer";
    if (!why.empty()) msg += "; " + why;
    return DataLossError(std::move(msg));
  }

  const Layout layout_;
};

class FixedLengthRecordDataset : public FileSequenceDataset {
 public:
  FixedLengthRecordDataset(OpArgs args, FileSourceAttrs attrs, Layout layout)
      : FileSequenceDataset(kOp, std::move(args), std::move(attrs)), layout_(layout) {}

  Result<std::unique_ptr<RecordFileReader>> OpenFile(Env* env, size_t i) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> s, OpenStream(env, i));
    return std::unique_ptr<RecordFileReader>(
        new FixedLengthRecordReader(std::move(s), layout_));
  }
  // A checkpoint never points into the header.
  uint64_t min_offset() const override { return layout_.header; }

 private:
  const Layout layout_;
};

}  // namespace

void RegisterFixedLengthRecordDataset(Registry* r) {
  r->RegisterOp(
      FileSourceOpDef(kOp, "Fixed-size records between a header and a footer (string scalars).")
          .Attr("record_bytes", AttrType::kInt, "Bytes per record, in [1, 2^31].")
          .Attr("header_bytes", AttrType::kInt, int64_t{0}, "Bytes skipped at each file's start.")
          .Attr("footer_bytes", AttrType::kInt, int64_t{0}, "Bytes ignored at each file's end."),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(FileSourceAttrs attrs, ParseFileSourceAttrs(kOp, args));
     const AttrMap& a = args.attrs;
     SLUICE_ASSIGN_OR_RETURN(int64_t record, GetAttr<int64_t>(a, kOp, "record_bytes"));
     SLUICE_ASSIGN_OR_RETURN(int64_t header,
                             GetAttrOr<int64_t>(a, kOp, "header_bytes", 0));
     SLUICE_ASSIGN_OR_RETURN(int64_t footer,
                             GetAttrOr<int64_t>(a, kOp, "footer_bytes", 0));
     if (record <= 0 || record > kMaxRecordBytes) {
       return InvalidArgumentError(
           "FixedLengthRecord: record_bytes must be in [1, 2^31], got " +
           std::to_string(record));
     }
     if (header < 0 || header > (int64_t{1} << 62)) {
       return InvalidArgumentError("FixedLengthRecord: header_bytes must be >= 0, got " +
                                   std::to_string(header));
     }
     if (footer < 0 || footer > kMaxRecordBytes) {
       return InvalidArgumentError(
           "FixedLengthRecord: footer_bytes must be in [0, 2^31], got " +
           std::to_string(footer));
     }
     Layout layout{static_cast<uint64_t>(record), static_cast<uint64_t>(header),
                   static_cast<uint64_t>(footer)};
     return DatasetPtr(std::make_shared<FixedLengthRecordDataset>(
         std::move(args), std::move(attrs), layout));
   });
}

}  // namespace sluice
