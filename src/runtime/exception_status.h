// No exception crosses the API or kills a pipeline thread: the places where foreign code
// runs (op construction, iterators behind the public Iterator, functions, the parallel
// runners) catch what escapes and turn it into a Status with StatusFromException.
#ifndef SLUICE_RUNTIME_EXCEPTION_STATUS_H_
#define SLUICE_RUNTIME_EXCEPTION_STATUS_H_

#include <cxxabi.h>

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "sluice/status.h"

// Thread cancellation unwinds the stack with abi::__forced_unwind: pthread_exit, which
// Python calls on a thread that asks for the GIL while the interpreter is finalizing (a
// pipeline thread running a Python function when the program exits). Swallowing it
// aborts the process ("FATAL: exception not rethrown"), so every catch-all in sluice
// rethrows it first:   try { ... } SLUICE_RETHROW_FORCED_UNWIND catch (...) { ... }
#define SLUICE_RETHROW_FORCED_UNWIND \
  catch (abi::__forced_unwind&) {    \
    throw;                           \
  }

namespace sluice {

// Call only inside a catch block: the exception being handled as a Status prefixed by
// `what` (`what: ...`). std::bad_alloc is ResourceExhausted ("out of memory"); anything
// else is Internal with its what().
inline Status StatusFromException(std::string_view what) {
  const std::string where = std::string(what) + ": ";
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(where + "out of memory");
  } catch (const std::exception& e) {
    return InternalError(where + "uncaught exception: " + e.what());
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return InternalError(where + "uncaught exception");
  }
}

}  // namespace sluice

#endif  // SLUICE_RUNTIME_EXCEPTION_STATUS_H_
