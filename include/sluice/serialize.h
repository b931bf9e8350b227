// Serialization of pipeline definitions: the dataset graph as a protobuf GraphDef
// (src/graph/proto/graph.proto), a stable fingerprint, and hand-written JSON pipeline specs
// (docs/spec.md).
//
//   Dataset ds = Dataset::TFRecord(files).Map(*parse).Batch(128);
//   Result<std::string> bytes = SerializeDataset(ds, GraphFormat::kBinary);
//   Result<Dataset> again = DeserializeDataset(*bytes, GraphFormat::kBinary);  // same elements
//   Result<std::string> fp = DatasetFingerprint(ds);                           // "3f0c...e1"
//   Result<Dataset> spec = LoadPipelineSpec("examples/specs/imagenet.json");
//
// What serializes: every node's op, attributes, inputs and functions, and the dataset's
// Options. A node shared by several consumers is written once. Functions must be registered
// kernels (Function::Kernel); a local C++ callable (Function::Map/Predicate/
// DatasetFunction) makes serialization fail with FailedPrecondition naming the op and the
// function.
//
// Deserialization accepts untrusted bytes: it never crashes or hangs, and every error names
// the node ("node 3 (Batch): ..."). Sizes are bounded (kMaxGraphNodes nodes, kMaxGraphDepth
// levels), tensor contents are checked against shape x dtype, inputs must name earlier
// nodes (so there are no cycles), and an unknown op or kernel is NotFound naming it.
// Rebuilding a node runs its op's own validation (the registry's factory), so a wrongly
// typed attribute is InvalidArgument naming the op and the attribute. Note that some ops
// and kernels touch the file system when built (ListFiles globs, ImageFolder walks its root,
// tokenize reads its vocabulary): deserializing a graph from an untrusted source reads the
// files it names.
//
// Thread-safety: all functions are thread-safe.
#ifndef SLUICE_SERIALIZE_H_
#define SLUICE_SERIALIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/dataset.h"
#include "sluice/status.h"

namespace sluice {

enum class GraphFormat {
  kBinary,  // the GraphDef's protobuf wire format (deterministic: equal graphs, equal bytes)
  kJson,    // protobuf's JSON mapping of the GraphDef (readable, diffable)
};

// The GraphDef version written; readers accept versions 1..kGraphFormatVersion.
inline constexpr uint32_t kGraphFormatVersion = 1;
// Limits on what DeserializeDataset accepts.
inline constexpr int64_t kMaxGraphNodes = 10000;
inline constexpr int64_t kMaxGraphDepth = 1000;  // longest input chain
inline constexpr int kMaxTensorRank = 32;

// The dataset's graph and options. FailedPrecondition when a function is a local callable
// (or a dataset is invalid: its construction error is returned); InvalidArgument when a
// string attribute is not UTF-8 (protobuf strings must be).
Result<std::string> SerializeDataset(const Dataset& dataset, GraphFormat format);

// Rebuilds a dataset from SerializeDataset's output (any version this build reads). The
// result carries the serialized Options. DataLoss for bytes that do not parse;
// InvalidArgument for a malformed graph; NotFound for an unknown op or kernel.
Result<Dataset> DeserializeDataset(std::string_view bytes, GraphFormat format);

// A hex digest (32 characters, 128 bits; not cryptographic) of the canonical graph: op
// names, attributes (file names included), input structure and function names and
// attributes. Attributes named "seed" or "seed2" are left out, so two pipelines built the
// same way fingerprint equal even when their seeds were drawn at random; Options are left
// out too. The digest does not depend on memory addresses, the process or the build, and
// a node shared by two consumers hashes the same as two equal copies of it. Fails like
// SerializeDataset on local callables.
Result<std::string> DatasetFingerprint(const Dataset& dataset);

// Loads a hand-written JSON pipeline spec (docs/spec.md): a nested form
//   {"options": {...}, "dataset": {"op": "Batch", "attrs": {"batch_size": 128},
//                                  "input": {"op": "TFRecord", ...}}}
// or a GraphDef in protobuf's JSON mapping (a top-level "node" list). Errors name the file
// and the JSON path of the offending node ("spec.json: dataset.input.input: ...").
Result<Dataset> LoadPipelineSpec(const std::string& path);
// The same from a JSON string; `source` names it in errors.
Result<Dataset> ParsePipelineSpec(std::string_view json, std::string_view source = "spec");

// A readable multi-line rendering of the graph, output first, inputs indented below their
// consumer; a node shared by several consumers is printed once and then referred to as
// "(see #id)". Local callables are shown as "<local callable 'name'>".
std::string DatasetGraphDebugString(const Dataset& dataset);

}  // namespace sluice

#endif  // SLUICE_SERIALIZE_H_
