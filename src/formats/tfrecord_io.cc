// sluice::io::TFRecordWriter (include/sluice/io.h): the public face of the internal
// TFRecordWriter (formats/tfrecord.h), which does the framing and writes through the Env.
#include "core/logging.h"
#include "formats/tfrecord.h"
#include "sluice/dataset.h"
#include "sluice/io.h"

namespace sluice::io {

struct TFRecordWriter::Impl {
  std::string path;
  std::unique_ptr<sluice::TFRecordWriter> writer;
  int64_t records = 0;
  bool closed = false;
  Status close_status;
  Status error;  // the first Write/Flush error; later calls return it (errors are sticky)

  // `s` with the file named, once.
  Status Named(const Status& s, const std::string& what) const {
    if (s.ok()) return s;
    std::string context = "TFRecordWriter: " + what;
    if (s.message().find(path) == std::string::npos) context += " of " + path;
    return s.WithContext(context);
  }

  Status Close() {
    if (closed) return close_status;
    closed = true;
    close_status = Named(writer->Close(), "closing");
    return close_status;
  }
};

Result<TFRecordWriter> TFRecordWriter::Open(const std::string& path,
                                            const TFRecordOptions& options) {
  Result<Compression> compression = CompressionFromName(options.compression);
  if (!compression.ok()) {
    return compression.status().WithContext("TFRecordWriter: opening " + path);
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  Result<std::unique_ptr<sluice::TFRecordWriter>> w =
      sluice::TFRecordWriter::Open(path, *compression, options.env);
  if (!w.ok()) return impl->Named(w.status(), "opening");
  impl->writer = std::move(*w);
  return TFRecordWriter(std::move(impl));
}

TFRecordWriter::TFRecordWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TFRecordWriter::TFRecordWriter(TFRecordWriter&& other) noexcept = default;

TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&& other) noexcept {
  if (this != &other) {
    if (impl_ != nullptr && !impl_->closed) {
      Status s = impl_->Close();
      if (!s.ok()) {
        SLUICE_LOG(kError) << s.ToString();
      }
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

TFRecordWriter::~TFRecordWriter() {
  if (impl_ == nullptr || impl_->closed) return;
  Status s = impl_->Close();
  if (!s.ok()) {
    SLUICE_LOG(kError) << s.ToString() << " (in the destructor)";
  }
}

Status TFRecordWriter::Write(std::string_view record) {
  if (impl_ == nullptr) return FailedPreconditionError("TFRecordWriter: moved from");
  if (impl_->closed) {
    return FailedPreconditionError("TFRecordWriter: write to " + impl_->path +
                                   " after Close()");
  }
  const uint64_t offset = impl_->writer->offset();
  if (record.size() > TFRecordReader::kMaxRecordLength) {
    return InvalidArgumentError(
        "TFRecordWriter: record " + std::to_string(impl_->records) + " of " +
        impl_->path + " has " + std::to_string(record.size()) +
        " bytes, more than the limit of " +
        std::to_string(TFRecordReader::kMaxRecordLength) + "; nothing written");
  }
  if (!impl_->error.ok()) return impl_->error;
  impl_->error = impl_->Named(impl_->writer->Write(record),
                              "writing record " + std::to_string(impl_->records) +
                                  " at offset " + std::to_string(offset));
  SLUICE_RETURN_IF_ERROR(impl_->error);
  ++impl_->records;
  return Status::OK();
}

Status TFRecordWriter::Flush() {
  if (impl_ == nullptr) return FailedPreconditionError("TFRecordWriter: moved from");
  if (impl_->closed) {
    return FailedPreconditionError("TFRecordWriter: flush of " + impl_->path +
                                   " after Close()");
  }
  if (!impl_->error.ok()) return impl_->error;
  impl_->error = impl_->Named(impl_->writer->Flush(), "flushing");
  return impl_->error;
}

Status TFRecordWriter::Close() {
  if (impl_ == nullptr) return Status::OK();
  return impl_->Close();
}

const std::string& TFRecordWriter::path() const {
  static const std::string kNone;
  return impl_ != nullptr ? impl_->path : kNone;
}

int64_t TFRecordWriter::records_written() const {
  return impl_ != nullptr ? impl_->records : 0;
}

}  // namespace sluice::io
