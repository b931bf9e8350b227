// Internals shared by the serializer (serialize.cc), the fingerprint (fingerprint.cc) and
// the spec loader (serialize_spec.cc): Dataset <-> GraphDef conversion.
//
// Thread-safety: free functions, thread-safe.
#ifndef SLUICE_GRAPH_SERIALIZE_INTERNAL_H_
#define SLUICE_GRAPH_SERIALIZE_INTERNAL_H_

#include <string>
#include <string_view>

#include "graph/dataset_node.h"
#include "graph/proto/graph.pb.h"
#include "sluice/dataset.h"

namespace sluice {

// FailedPrecondition unless every function of `node` is a registered kernel; the error
// names the op and the function and lists the registered kernels.
Status CheckFunctionsSerializable(const DatasetNode& node);

// DatasetFingerprint of any graph: a local callable (not serializable) enters by its
// name, so two pipelines built alike (seeds aside) by the same program agree. What
// checkpoints record to recognize the pipeline they were taken from.
std::string PipelineFingerprint(const DatasetPtr& node);

// The dataset's graph (nodes in topological order, shared nodes once) and options.
Result<graph::GraphDef> DatasetToGraphDef(const Dataset& dataset);
// Validates and rebuilds; see DeserializeDataset in sluice/serialize.h for the checks.
Result<Dataset> DatasetFromGraphDef(const graph::GraphDef& def);

// AttrValue <-> proto, with the checks of DeserializeDataset (tensor sizes, dtypes, ranks).
Status AttrToProto(const AttrValue& value, graph::AttrValue* out);
Result<AttrValue> AttrFromProto(const graph::AttrValue& value);

}  // namespace sluice

#endif  // SLUICE_GRAPH_SERIALIZE_INTERNAL_H_
