// Iterator checkpoints: a flat key -> typed value map, serialized compactly.
//
// Keys are "<iterator prefix>:<name>", so every iterator writes under its own place in the
// tree and a checkpoint from another pipeline fails with NotFound naming the missing key.
//
// Wire format (little endian): "SLCKPT01", varint entry count, then per entry: varint key
// length, key, type byte, varint value length, value; finally a fixed32 masked crc32c of all
// preceding bytes. Corrupt or truncated checkpoints are rejected with DataLoss.
//
// Thread-safety: none; one writer or reader per thread.
#ifndef SLUICE_RUNTIME_CHECKPOINT_H_
#define SLUICE_RUNTIME_CHECKPOINT_H_

#include <map>
#include <string>
#include <string_view>

#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice {

class CheckpointWriter {
 public:
  void WriteInt(std::string_view prefix, std::string_view key, int64_t v);
  void WriteString(std::string_view prefix, std::string_view key, std::string_view v);
  void WriteTensor(std::string_view prefix, std::string_view key, const Tensor& t);
  void WriteElement(std::string_view prefix, std::string_view key, const Element& e);

  size_t num_entries() const { return entries_.size(); }
  std::string Serialize() const;

 private:
  std::map<std::string, std::string, std::less<>> entries_;  // key -> type byte + payload
};

class CheckpointReader {
 public:
  static Result<CheckpointReader> Parse(std::string_view bytes);

  bool Contains(std::string_view prefix, std::string_view key) const;
  Result<int64_t> ReadInt(std::string_view prefix, std::string_view key) const;
  Result<std::string> ReadString(std::string_view prefix, std::string_view key) const;
  Result<Tensor> ReadTensor(std::string_view prefix, std::string_view key) const;
  Result<Element> ReadElement(std::string_view prefix, std::string_view key) const;

 private:
  Result<std::string_view> Find(std::string_view prefix, std::string_view key,
                                char type) const;
  std::map<std::string, std::string, std::less<>> entries_;
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_CHECKPOINT_H_
