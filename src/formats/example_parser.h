// Parsing of serialized tf.train.Example and tf.train.SequenceExample protos into tensors
// (tf.io.parse_example / tf.io.parse_single_sequence_example).
//
// The schema is TensorFlow's own (src/formats/proto/{feature,example}.proto, package
// `tensorflow`), so bytes written by TensorFlow parse here and vice versa. The bytes are
// scanned directly (like TensorFlow's fast parser) and each value is copied once into its
// tensor; inputs outside the scanner's unambiguous subset of the wire format go through
// protobuf, so what is accepted and what it means are always protobuf's. proto3 rules
// apply: a feature key that is not valid UTF-8 makes the Example invalid (TensorFlow's
// fast parser does not check), and of two entries with the same key the last wins.
//
// Features:
//  * fixed (tf.io.FixedLenFeature): exactly shape.num_elements() values; the default is
//  used
//    when the key is missing, and a missing key without a default is an error. A present
//    feature with the wrong number of values is an error (defaults never fill in for it).
//  * var (tf.io.VarLenFeature): any number of values, as a 1-D tensor; missing = empty.
//    sluice has no sparse tensors, so where TensorFlow returns a SparseTensor, a batch
//    here gets a dense [batch, longest] tensor padded with 0 / "" (what
//    tf.sparse.to_dense would give).
//  * sequence (tf.io.FixedLenSequenceFeature, SequenceExample only): a feature list of T
//    steps, each with shape.num_elements() values, as a [T, ...shape] tensor. A missing
//    feature list is an error unless allow_missing (then T = 0).
// dtype: int64 (int64_list), float32 (float_list) or string (bytes_list). A Feature with
// no list set counts as an empty list of any type; a list of another type is an error.
//
// Errors are InvalidArgument and start with the caller's name (`who`, e.g. the kernel
// name), then name the key and the example's index in the batch.
//
// Thread-safety: the functions are pure; configs are read-only and may be shared.
#ifndef SLUICE_FORMATS_EXAMPLE_PARSER_H_
#define SLUICE_FORMATS_EXAMPLE_PARSER_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/element.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

namespace sluice {

enum class FeatureKind { kFixed, kVar };

struct FeatureConfig {
  std::string key;
  FeatureKind kind = FeatureKind::kFixed;
  DType dtype = DType::kInvalid;  // kInt64, kFloat32 or kString
  Shape shape;                    // fixed: one example's value shape; var: unused
  Tensor default_value;           // fixed: when the key is missing; invalid = required
};

struct SequenceFeatureConfig {
  std::string key;
  DType dtype = DType::kInvalid;
  Shape shape;  // one step's shape
  bool allow_missing = false;
};

// Checks dtypes and defaults (dtype must match, element count must equal the shape's; the
// default is reshaped to `shape`) and that keys are unique across both lists. `who` names
// the caller in errors.
Status ValidateFeatureConfigs(std::vector<FeatureConfig>* features,
                              const std::vector<SequenceFeatureConfig>& sequence,
                              std::string_view who);

// Parses serialized Examples, returning one tensor per feature (in config order).
//  * batched = false: `serialized` holds one Example; fixed -> `shape`, var -> [n].
//  * batched = true: fixed -> [B, ...shape], var -> [B, longest] padded.
Result<std::vector<Tensor>> ParseExamples(std::span<const std::string> serialized,
                                          bool batched,
                                          const std::vector<FeatureConfig>& features,
                                          std::string_view who);

// Whether `serialized` is an Example the scanner reads without protobuf: every Example
// that protobuf serializes, if its keys are ASCII (for tests).
bool ScansExampleDirectly(std::string_view serialized);

// Parses one serialized SequenceExample: the context features (as an unbatched
// ParseExamples) followed by the sequence features.
Result<std::vector<Tensor>> ParseSequenceExample(
    std::string_view serialized, const std::vector<FeatureConfig>& context,
    const std::vector<SequenceFeatureConfig>& sequence, std::string_view who);

// The output spec for `features` given the shape of the serialized input (rank 0: one
// Example, rank 1: a batch of `batch` (-1 unknown), rank -1: unknown).
std::vector<TensorSpec> ExampleOutputSpecs(const std::vector<FeatureConfig>& features,
                                           int rank, int64_t batch);

}  // namespace sluice

#endif  // SLUICE_FORMATS_EXAMPLE_PARSER_H_
