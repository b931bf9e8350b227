// FixedLengthRecord: records of `record_bytes` bytes after a `header_bytes` header and
// before a `footer_bytes` footer of each file, one string scalar per record (tf.data's
// FixedLengthRecordDataset). A trailing partial record is DataLoss naming its offset,
// after the whole records before it were produced (tf.data rejects such an uncompressed
// file up front with InvalidArgument and yields nothing from it; sluice yields what is
// intact). A file shorter than header + footer is DataLoss too. Files are opened lazily;
// an unopenable file is reported once and skipped. Checkpoint: file index + uncompressed
// offset.
#include "formats/input_stream.h"
#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

constexpr char kOp[] = "FixedLengthRecord";
constexpr int64_t kMaxRecordBytes = int64_t{1} << 31;

struct Layout {
  uint64_t record = 0, header = 0, footer = 0;
};

class FixedLengthRecordDataset : public DatasetNode {
 public:
  FixedLengthRecordDataset(OpArgs args, std::vector<std::string> files, Layout layout,
                           Compression compression, size_t buffer_size)
      : DatasetNode(kOp, std::move(args),
                    ElementSpec{{{DType::kString, PartialShape{}}}}),
        files_(std::move(files)),
        layout_(layout),
        compression_(compression),
        buffer_size_(buffer_size) {}

  int64_t Cardinality() const override { return kUnknownCardinality; }
  const std::vector<std::string>& files() const { return files_; }
  const Layout& layout() const { return layout_; }
  Result<std::unique_ptr<InputStream>> OpenFile(size_t i) const {
    return InputStream::Open(files_[i], compression_, buffer_size_);
  }

 protected:
  Result<std::unique_ptr<IteratorBase>> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::vector<std::string> files_;
  Layout layout_;
  Compression compression_;
  size_t buffer_size_;
};

class FixedLengthRecordIterator : public IteratorBase {
 public:
  FixedLengthRecordIterator(const FixedLengthRecordDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds), layout_(ds->layout()) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    std::string record;
    SLUICE_ASSIGN_OR_RETURN(bool got, Next(&record));
    if (!got) return std::nullopt;
    return Element{Tensor::Scalar<std::string>(std::move(record))};
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    int64_t done = 0;
    while (done < n) {
      SLUICE_ASSIGN_OR_RETURN(bool got, Next(nullptr));
      if (!got) break;
      ++done;
    }
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "file_index", static_cast<int64_t>(index_));
    w->WriteInt(prefix(), "offset", stream_ ? static_cast<int64_t>(stream_->Tell()) : -1);
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.ReadInt(prefix(), "file_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, r.ReadInt(prefix(), "offset"));
    const int64_t n = static_cast<int64_t>(ds_->files().size());
    if (index < 0 || index > n || offset < -1 || (offset >= 0 && index == n) ||
        (offset >= 0 && static_cast<uint64_t>(offset) < layout_.header)) {
      return DataLossError("FixedLengthRecord: invalid checkpoint (file index " +
                           std::to_string(index) + ", offset " + std::to_string(offset) +
                           ")");
    }
    stream_.reset();
    index_ = static_cast<size_t>(index);
    if (offset >= 0) {
      SLUICE_ASSIGN_OR_RETURN(stream_, ds_->OpenFile(index_));
      SLUICE_RETURN_IF_ERROR(stream_->SeekTo(static_cast<uint64_t>(offset)));
    }
    return Status::OK();
  }

 private:
  // The next record into *out (skipped when out is null); false at the end of all files.
  Result<bool> Next(std::string* out) {
    while (true) {
      if (!stream_) {
        if (index_ >= ds_->files().size()) return false;
        SLUICE_RETURN_IF_ERROR(OpenCurrent());
      }
      auto r = NextInFile(out);
      if (!r.ok()) {
        NextFile();  // a damaged file ends here; the next call goes on with the next file
        return r.status().WithContext(kOp);
      }
      if (*r) return true;
      NextFile();
    }
  }

  Status OpenCurrent() {
    auto s = ds_->OpenFile(index_);
    if (!s.ok()) {
      ++index_;  // reported once, then skipped
      return s.status().WithContext(kOp);
    }
    std::unique_ptr<InputStream> stream = std::move(s).value();
    const std::string& name = stream->name();
    std::optional<uint64_t> size = stream->Size();
    if (size && *size < layout_.header + layout_.footer) {
      ++index_;
      return DataLossError(
          std::string(kOp) + ": file " + name + " has " + std::to_string(*size) +
          " bytes, fewer than header_bytes + " +
          "footer_bytes = " + std::to_string(layout_.header + layout_.footer));
    }
    auto skipped = stream->Skip(layout_.header);
    if (!skipped.ok() || *skipped < layout_.header) {
      ++index_;
      if (!skipped.ok()) return skipped.status().WithContext(kOp);
      return DataLossError(
          std::string(kOp) + ": file " + name + " has " + std::to_string(*skipped) +
          " bytes, fewer than header_bytes = " + std::to_string(layout_.header));
    }
    stream_ = std::move(stream);
    return Status::OK();
  }

  // One record of the current file; false at its end.
  Result<bool> NextInFile(std::string* out) {
    const uint64_t off = stream_->Tell();
    const uint64_t want = layout_.record;
    if (std::optional<uint64_t> size = stream_->Size()) {
      const uint64_t limit = *size - layout_.footer;  // size >= header + footer (checked)
      if (off >= limit) return false;
      if (limit - off >= want) {
        if (out == nullptr) {
          SLUICE_RETURN_IF_ERROR(stream_->SeekTo(off + want));
          return true;
        }
        SLUICE_ASSIGN_OR_RETURN(size_t n, stream_->ReadAppend(out, want));
        if (n < want) return Partial(off, n, "the file shrank while being read");
        return true;
      }
      return Partial(off, limit - off, "");
    }
    // Compressed: the size is unknown, so look ahead for the record plus the footer.
    SLUICE_ASSIGN_OR_RETURN(std::string_view v, stream_->Peek(want + layout_.footer));
    if (v.size() == want + layout_.footer) {
      if (out != nullptr) out->assign(v.data(), want);
      SLUICE_RETURN_IF_ERROR(stream_->Skip(want));
      return true;
    }
    if (v.size() == layout_.footer) return false;
    if (v.size() < layout_.footer) {
      return DataLossError("file " + stream_->name() + " ends at uncompressed offset " +
                           std::to_string(off + v.size()) + ", " +
                           std::to_string(layout_.footer - v.size()) +
                           " bytes short of its footer (footer_bytes = " +
                           std::to_string(layout_.footer) + ")");
    }
    return Partial(off, v.size() - layout_.footer, "");
  }

  Status Partial(uint64_t off, uint64_t have, const std::string& why) {
    std::string msg = "trailing partial record at offset " + std::to_string(off) +
                      " in file " + stream_->name() + ": " + std::to_string(have) +
                      " of " + std::to_string(layout_.record) + " bytes (" +
                      std::to_string(layout_.record - have) + " bytes missing)";
    if (layout_.footer > 0)
      msg += " before the " + std::to_string(layout_.footer) + "-byte footer";
    if (!why.empty()) msg += "; " + why;
    return DataLossError(std::move(msg));
  }

  void NextFile() {
    stream_.reset();
    ++index_;
  }

  const FixedLengthRecordDataset* ds_;
  const Layout layout_;
  size_t index_ = 0;
  std::unique_ptr<InputStream> stream_;
};

Result<std::unique_ptr<IteratorBase>> FixedLengthRecordDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return std::unique_ptr<IteratorBase>(new FixedLengthRecordIterator(this, prefix));
}

}  // namespace

void RegisterFixedLengthRecordDataset(Registry* r) {
  r->RegisterOp(kOp, [](OpArgs args) -> Result<DatasetPtr> {
     if (!args.inputs.empty() || !args.functions.empty()) {
       return InvalidArgumentError("FixedLengthRecord: takes no inputs or functions");
     }
     const AttrMap& a = args.attrs;
     SLUICE_ASSIGN_OR_RETURN(auto files,
                             GetAttr<std::vector<std::string>>(a, kOp, "filenames"));
     SLUICE_ASSIGN_OR_RETURN(int64_t record, GetAttr<int64_t>(a, kOp, "record_bytes"));
     SLUICE_ASSIGN_OR_RETURN(int64_t header,
                             GetAttrOr<int64_t>(a, kOp, "header_bytes", 0));
     SLUICE_ASSIGN_OR_RETURN(int64_t footer,
                             GetAttrOr<int64_t>(a, kOp, "footer_bytes", 0));
     SLUICE_ASSIGN_OR_RETURN(std::string comp,
                             GetAttrOr<std::string>(a, kOp, "compression", ""));
     SLUICE_ASSIGN_OR_RETURN(
         int64_t buffer_size,
         GetAttrOr<int64_t>(a, kOp, "buffer_size",
                            static_cast<int64_t>(InputStream::kDefaultBufferSize)));
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
     if (buffer_size < 1 || buffer_size > (int64_t{1} << 30)) {
       return InvalidArgumentError(
           "FixedLengthRecord: buffer_size must be in [1, 2^30], got " +
           std::to_string(buffer_size));
     }
     auto c = CompressionFromName(comp);
     if (!c.ok()) return c.status().WithContext(kOp);
     Layout layout{static_cast<uint64_t>(record), static_cast<uint64_t>(header),
                   static_cast<uint64_t>(footer)};
     return DatasetPtr(std::make_shared<FixedLengthRecordDataset>(
         std::move(args), std::move(files), layout, *c,
         static_cast<size_t>(buffer_size)));
   }).IgnoreError();
}

}  // namespace sluice
