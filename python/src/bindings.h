// The native module's areas. python/src/module.cc defines the module (tensors, functions,
// datasets, iterators) and calls each Bind* below once; every other area lives in its own
// python/src/<area>_bindings.cc. Bound functions may take and return sluice::Dataset and
// sluice::Options: module.cc registers their Python classes.
#ifndef SLUICE_PYTHON_SRC_BINDINGS_H_
#define SLUICE_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <string_view>
#include <utility>

#include "sluice/status.h"

namespace sluice {
namespace python {

// Raises the sluice exception class for `s` (sluice.errors) when `s` is not OK.
void ThrowIfError(const Status& s);

template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) ThrowIfError(r.status());
  return std::move(r).value();
}

// The status for a Python exception raised in a user function (`what` names it): the
// exception's class and message, its code when it is a sluice error (else
// InvalidArgument), and the exception itself kept so the consumer sees it as __cause__.
// Call with the GIL held.
Status StatusFromPyError(pybind11::error_already_set& e, std::string_view what);

// Area binders, called from PYBIND11_MODULE in module.cc (add one line there per area).
void BindPlumber(pybind11::module_& m);  // python/src/plumber_bindings.cc
void BindService(pybind11::module_& m);  // service_bindings.cc
void BindData(pybind11::module_& m);  // data_bindings.cc: sluice.data helpers
void BindProfiler(pybind11::module_& m);  // python/src/profiler_bindings.cc

}  // namespace python
}  // namespace sluice

#endif  // SLUICE_PYTHON_SRC_BINDINGS_H_
