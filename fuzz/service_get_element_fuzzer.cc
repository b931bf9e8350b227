// libFuzzer target: GetElementRequest as the worker receives it (untrusted bytes),
// through the transport-free Worker::GetElement (fuzz/service_fuzz.h). Never a crash, a
// hang or an unbounded allocation; an element answer decodes.
#include <cstddef>
#include <cstdint>

#include "service/element_codec.h"
#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GetElementRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  GetElementResponse resp;
  sluice::Status s = h.worker->GetElement(req, &resp);
  if (s.ok() && !resp.end_of_sequence() && !resp.skip())
    fuzz::Check(DecodeResponseElement(resp).ok());
  return 0;
}
