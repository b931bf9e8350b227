// TextLine: the lines of text files without their "\n" / "\r\n" endings, one string
// scalar per line (tf.data's TextLineDataset); a last line without a newline is still a
// line. Files are opened lazily, one after another; an unopenable file is reported once
// and skipped, and an I/O or decompression error ends its file. Checkpoint: file index +
// uncompressed offset of the next line.
#include "formats/input_stream.h"
#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

constexpr char kOp[] = "TextLine";

class TextLineDataset : public DatasetNode {
 public:
  TextLineDataset(OpArgs args, std::vector<std::string> files, Compression compression,
                  size_t buffer_size)
      : DatasetNode(kOp, std::move(args),
                    ElementSpec{{{DType::kString, PartialShape{}}}}),
        files_(std::move(files)),
        compression_(compression),
        buffer_size_(buffer_size) {}

  int64_t Cardinality() const override { return kUnknownCardinality; }
  const std::vector<std::string>& files() const { return files_; }
  Result<std::unique_ptr<InputStream>> OpenFile(size_t i) const {
    return InputStream::Open(files_[i], compression_, buffer_size_);
  }

 protected:
  Result<std::unique_ptr<IteratorBase>> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::vector<std::string> files_;
  Compression compression_;
  size_t buffer_size_;
};

class TextLineIterator : public IteratorBase {
 public:
  TextLineIterator(const TextLineDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (true) {
      if (!stream_) {
        if (index_ >= ds_->files().size()) return std::nullopt;
        auto s = ds_->OpenFile(index_);
        if (!s.ok()) {
          ++index_;  // reported once, then skipped
          return s.status().WithContext(kOp);
        }
        stream_ = std::move(s).value();
      }
      std::string line;
      auto got = stream_->ReadLine(&line);
      if (!got.ok()) {
        NextFile();  // the stream cannot go on after an I/O or decompression error
        return got.status().WithContext(kOp);
      }
      if (!*got) {
        NextFile();
        continue;
      }
      return Element{Tensor::Scalar<std::string>(std::move(line))};
    }
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
    if (index < 0 || index > n || offset < -1 || (offset >= 0 && index == n)) {
      return DataLossError("TextLine: invalid checkpoint (file index " +
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
  void NextFile() {
    stream_.reset();
    ++index_;
  }

  const TextLineDataset* ds_;
  size_t index_ = 0;
  std::unique_ptr<InputStream> stream_;
};

Result<std::unique_ptr<IteratorBase>> TextLineDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return std::unique_ptr<IteratorBase>(new TextLineIterator(this, prefix));
}

}  // namespace

void RegisterTextLineDataset(Registry* r) {
  r->RegisterOp(kOp, [](OpArgs args) -> Result<DatasetPtr> {
     if (!args.inputs.empty() || !args.functions.empty()) {
       return InvalidArgumentError("TextLine: takes no inputs or functions");
     }
     SLUICE_ASSIGN_OR_RETURN(
         auto files, GetAttr<std::vector<std::string>>(args.attrs, kOp, "filenames"));
     SLUICE_ASSIGN_OR_RETURN(std::string comp,
                             GetAttrOr<std::string>(args.attrs, kOp, "compression", ""));
     auto c = CompressionFromName(comp);
     if (!c.ok()) return c.status().WithContext(kOp);
     SLUICE_ASSIGN_OR_RETURN(
         int64_t buffer_size,
         GetAttrOr<int64_t>(args.attrs, kOp, "buffer_size",
                            static_cast<int64_t>(InputStream::kDefaultBufferSize)));
     if (buffer_size < 1 || buffer_size > (int64_t{1} << 30)) {
       return InvalidArgumentError("TextLine: buffer_size must be in [1, 2^30], got " +
                                   std::to_string(buffer_size));
     }
     return DatasetPtr(std::make_shared<TextLineDataset>(
         std::move(args), std::move(files), *c, static_cast<size_t>(buffer_size)));
   }).IgnoreError();
}

}  // namespace sluice
