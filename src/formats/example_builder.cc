// sluice::io::ExampleBuilder (include/sluice/io.h): fills TensorFlow's own
// tensorflow::Example message (formats/proto/example.proto, the schema the parser and
// the datagen use) and serializes it deterministically.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "formats/proto/example.pb.h"
#include "sluice/io.h"

namespace sluice::io {

struct ExampleBuilder::Impl {
  tensorflow::Example example;

  // The feature `key`, emptied (a key added again is replaced).
  tensorflow::Feature& Fresh(std::string_view key) {
    tensorflow::Feature& f =
        (*example.mutable_features()->mutable_feature())[std::string(key)];
    f.Clear();
    return f;
  }
};

ExampleBuilder::ExampleBuilder() : impl_(std::make_unique<Impl>()) {}
ExampleBuilder::~ExampleBuilder() = default;
ExampleBuilder::ExampleBuilder(ExampleBuilder&&) noexcept = default;
ExampleBuilder& ExampleBuilder::operator=(ExampleBuilder&&) noexcept = default;

ExampleBuilder& ExampleBuilder::AddInt64(std::string_view key, int64_t value) {
  return AddInt64(key, std::span<const int64_t>(&value, 1));
}

ExampleBuilder& ExampleBuilder::AddInt64(std::string_view key,
                                         std::span<const int64_t> values) {
  if (impl_ == nullptr) impl_ = std::make_unique<Impl>();
  auto* list = impl_->Fresh(key).mutable_int64_list();
  list->mutable_value()->Add(values.begin(), values.end());
  return *this;
}

ExampleBuilder& ExampleBuilder::AddInt64(std::string_view key,
                                         std::initializer_list<int64_t> values) {
  return AddInt64(key, std::span<const int64_t>(values.begin(), values.size()));
}

ExampleBuilder& ExampleBuilder::AddFloat(std::string_view key, float value) {
  return AddFloat(key, std::span<const float>(&value, 1));
}

ExampleBuilder& ExampleBuilder::AddFloat(std::string_view key,
                                         std::span<const float> values) {
  if (impl_ == nullptr) impl_ = std::make_unique<Impl>();
  auto* list = impl_->Fresh(key).mutable_float_list();
  list->mutable_value()->Add(values.begin(), values.end());
  return *this;
}

ExampleBuilder& ExampleBuilder::AddFloat(std::string_view key,
                                         std::initializer_list<float> values) {
  return AddFloat(key, std::span<const float>(values.begin(), values.size()));
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key, std::string_view value) {
  return AddBytes(key, {value});
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key,
                                         std::span<const std::string> values) {
  if (impl_ == nullptr) impl_ = std::make_unique<Impl>();
  auto* list = impl_->Fresh(key).mutable_bytes_list();
  for (const std::string& v : values) list->add_value(v);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key,
                                         std::initializer_list<std::string_view> values) {
  if (impl_ == nullptr) impl_ = std::make_unique<Impl>();
  auto* list = impl_->Fresh(key).mutable_bytes_list();
  for (std::string_view v : values) list->add_value(std::string(v));
  return *this;
}

std::string ExampleBuilder::Serialize() const {
  std::string out;
  if (impl_ == nullptr) return out;  // moved from: an empty Example
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);  // map entries in key order
    impl_->example.SerializeToCodedStream(&cos);
  }
  return out;
}

void ExampleBuilder::Clear() {
  if (impl_ == nullptr) impl_ = std::make_unique<Impl>();
  impl_->example.Clear();
}

}  // namespace sluice::io
