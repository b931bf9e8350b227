// The native part of the Python package: `sluice._sluice`.
//
// What lives here (the Python files in python/sluice/ add tf.data-style names and kwargs):
//  * Tensor: a Python object owning one sluice::Tensor (a refcount on its Buffer). It is
//    the `base` of every numpy array handed out, implements the buffer protocol and
//    __dlpack__, so numpy and torch see sluice's memory with no copy.
//  * Dataset: sluice::Dataset with snake_case methods taking native Functions.
//  * Function: a registered kernel (kernel(name, attrs)) or a Python callable wrapped as a
//    stateful local function that takes the GIL for each call.
//  * Iterator: GetNext without the GIL; Ctrl-C cancels the pipeline and raises
//    KeyboardInterrupt (see SigintGuard).
//  * Status -> Python exception mapping (classes registered by sluice/errors.py).
//  * _TFRecordWriter and _serialize_example: sluice/io.h for sluice/io.py.
//
// Threading: every call into sluice that can block or run pipeline work releases the GIL;
// Python callables re-acquire it on whichever pipeline thread runs them. Python objects
// captured by C++ functions are released under the GIL (PyRef), from any thread.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "api/builtins.h"
#include "bindings.h"
#include "api/dataset_internal.h"
#include "graph/registry.h"
#include "sluice/dataset.h"
#include "sluice/io.h"

namespace py = pybind11;

namespace sluice {
namespace python {
namespace {

// ---------------------------------------------------------------------------------------
// Python object references that may be dropped from any thread.

bool PythonAlive() { return Py_IsInitialized() && !_Py_IsFinalizing(); }

struct PyRef {
  explicit PyRef(py::object o) : obj(o.release().ptr()) {}
  PyRef(const PyRef&) = delete;
  ~PyRef() {
    if (obj == nullptr || !PythonAlive()) return;  // at exit: leak rather than crash
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(obj);
    PyGILState_Release(s);
  }
  py::handle get() const { return obj; }
  PyObject* obj;
};
using PyRefPtr = std::shared_ptr<PyRef>;

// ---------------------------------------------------------------------------------------
// Errors.

// StatusCode (int) -> exception class; filled by errors.py through _register_errors.
PyObject* g_error_classes[17] = {};

// Python exceptions raised inside user functions, kept so the sluice error that reaches
// the consumer can name them as its __cause__. Keyed by a token embedded in the message.
std::mutex g_py_errors_mu;
std::deque<std::pair<int64_t, PyRefPtr>> g_py_errors;
int64_t g_next_py_error = 1;
constexpr size_t kMaxKeptPyErrors = 64;
constexpr char kPyErrorTag[] = "[python exception #";

[[noreturn]] void ThrowStatus(const Status& s) {
  int code = static_cast<int>(s.code());
  PyObject* cls = (code >= 0 && code < 17 && g_error_classes[code]) ? g_error_classes[code]
                                                                   : PyExc_RuntimeError;
  PyRefPtr cause;
  const std::string& msg = s.message();
  if (size_t at = msg.find(kPyErrorTag); at != std::string::npos) {
    int64_t token = std::atoll(msg.c_str() + at + sizeof(kPyErrorTag) - 1);
    std::lock_guard<std::mutex> l(g_py_errors_mu);
    for (auto& [t, ref] : g_py_errors) {
      if (t == token) cause = ref;
    }
  }
  py::object exc = py::reinterpret_borrow<py::object>(cls)(msg);
  exc.attr("code") = py::str(std::string(StatusCodeName(s.code())));
  if (cause) {
    exc.attr("__cause__") = py::reinterpret_borrow<py::object>(cause->get());
  }
  PyErr_SetObject(cls, exc.ptr());
  throw py::error_already_set();
}

template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(r).value();
}
void Check(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

// Turns the Python exception being handled into a Status for the pipeline, keeping the
// exception object for ThrowStatus. Requires the GIL.
Status StatusFromPythonError(py::error_already_set& e, std::string_view what) {
  if (e.matches(PyExc_KeyboardInterrupt)) {
    return CancelledError(std::string(what) + ": interrupted");
  }
  // The fetched exception holds its traceback apart from the value: attach it, so the
  // __cause__ the consumer sees still shows the failing line of the user's function.
  if (e.trace() && PyExceptionInstance_Check(e.value().ptr())) {
    py::object tb =
        py::reinterpret_steal<py::object>(PyException_GetTraceback(e.value().ptr()));
    if (!tb) PyException_SetTraceback(e.value().ptr(), e.trace().ptr());
  }
  int64_t token;
  {
    std::lock_guard<std::mutex> l(g_py_errors_mu);
    token = g_next_py_error++;
    g_py_errors.emplace_back(token, std::make_shared<PyRef>(e.value()));
    if (g_py_errors.size() > kMaxKeptPyErrors) g_py_errors.pop_front();
  }
  std::string text = py::str(e.value());
  std::string type = py::str(e.type().attr("__name__"));
  // An error raised inside the function that is itself a sluice error keeps its code.
  StatusCode code = StatusCode::kInvalidArgument;
  if (py::hasattr(e.value(), "code")) {
    py::object c = e.value().attr("code");
    if (py::isinstance<py::str>(c)) {
      std::string name = c.cast<std::string>();
      for (int i = 1; i < 17; ++i) {
        if (StatusCodeName(static_cast<StatusCode>(i)) == name) code = static_cast<StatusCode>(i);
      }
    }
  }
  return Status(code, std::string(what) + ": " + type + ": " + text + " " + kPyErrorTag +
                          std::to_string(token) + "]");
}

// ---------------------------------------------------------------------------------------
// Tensors <-> numpy.

struct PyTensor {
  Tensor t;
};

const char* BufferFormat(DType d) {
  switch (d) {
    case DType::kBool: return "?";
    case DType::kUInt8: return "B";
    case DType::kInt8: return "b";
    case DType::kInt16: return "h";
    case DType::kInt32: return "i";
    case DType::kInt64: return "q";
    case DType::kFloat16: return "e";
    case DType::kFloat32: return "f";
    case DType::kFloat64: return "d";
    default: return nullptr;
  }
}

std::vector<py::ssize_t> ShapeOf(const Tensor& t) {
  std::vector<py::ssize_t> s(t.rank());
  for (int i = 0; i < t.rank(); ++i) s[i] = t.dim(i);
  return s;
}

std::vector<py::ssize_t> StridesOf(const Tensor& t) {
  std::vector<py::ssize_t> st(t.rank());
  py::ssize_t s = static_cast<py::ssize_t>(DTypeSize(t.dtype()));
  for (int i = t.rank() - 1; i >= 0; --i) {
    st[i] = s;
    s *= t.dim(i);
  }
  return st;
}

// A numpy array over `t`'s memory (read-only; its base is a PyTensor) or, for strings and
// bfloat16, a copy. With `unwrap_scalars`, rank-0 tensors become numpy scalars (bytes for
// strings), as tf.data's as_numpy_iterator gives.
py::object ToNumpy(const Tensor& t, bool unwrap_scalars) {
  if (t.dtype() == DType::kString) {
    if (unwrap_scalars && t.rank() == 0) {
      const std::string& s = t.scalar<std::string>();
      return py::bytes(s.data(), s.size());
    }
    py::array out(py::dtype("O"), ShapeOf(t));
    PyObject** dst = static_cast<PyObject**>(out.mutable_data());
    const std::string* src = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(src[i].data(), src[i].size());
      if (b == nullptr) throw py::error_already_set();
      Py_XDECREF(dst[i]);
      dst[i] = b;
    }
    return out;
  }
  if (t.dtype() == DType::kBFloat16) {  // numpy has no bfloat16: widen to float32 (a copy)
    py::array_t<float> out(ShapeOf(t));
    float* dst = out.mutable_data();
    const BFloat16* src = t.data<BFloat16>();
    for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = src[i].ToFloat();
    if (unwrap_scalars && t.rank() == 0) return out[py::tuple()];
    return out;
  }
  const char* fmt = BufferFormat(t.dtype());
  if (fmt == nullptr) throw py::type_error("sluice: cannot convert a tensor of dtype " +
                                           std::string(DTypeName(t.dtype())) + " to numpy");
  // By name, not by the buffer format: "q" would make numpy.longlong scalars, a type
  // distinct from numpy.int64 on LP64 systems.
  py::dtype dt(std::string(DTypeName(t.dtype())));
  if (t.raw_data() == nullptr) {
    py::array out(dt, ShapeOf(t));
    return out;
  }
  py::object base = py::cast(PyTensor{t});
  // The data of the base's own copy: a small tensor's data is inline (tensor.h), so it
  // lives in that copy, not in `t`.
  const Tensor& held = base.cast<const PyTensor&>().t;
  py::array out(dt, ShapeOf(held), StridesOf(held), held.raw_data(), base);
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  if (unwrap_scalars && t.rank() == 0) return out[py::tuple()];
  return out;
}

Result<DType> DTypeFromNumpy(const py::dtype& dt) {
  char kind = dt.kind();
  size_t size = dt.itemsize();
  switch (kind) {
    case 'b': return DType::kBool;
    case 'u':
      if (size == 1) return DType::kUInt8;
      break;
    case 'i':
      if (size == 1) return DType::kInt8;
      if (size == 2) return DType::kInt16;
      if (size == 4) return DType::kInt32;
      if (size == 8) return DType::kInt64;
      break;
    case 'f':
      if (size == 2) return DType::kFloat16;
      if (size == 4) return DType::kFloat32;
      if (size == 8) return DType::kFloat64;
      break;
    case 'S': case 'U': case 'O': return DType::kString;
  }
  return InvalidArgumentError("sluice: numpy dtype " + std::string(py::str(py::handle(dt))) +
                              " has no sluice equivalent");
}

bool IsTextLike(py::handle o) {
  return py::isinstance<py::bytes>(o) || py::isinstance<py::str>(o);
}

std::string ToBytes(py::handle o) {
  if (py::isinstance<py::bytes>(o)) return o.cast<std::string>();
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();  // UTF-8
  if (py::isinstance<py::array>(o) || py::hasattr(o, "tobytes")) {
    return py::bytes(o.attr("tobytes")()).cast<std::string>();
  }
  throw py::type_error("sluice: expected bytes or str in a string tensor, got " +
                       std::string(py::str(o.get_type())));
}

// Copies a Python value (PyTensor, numpy array, scalar, bytes, nested lists) into a tensor.
Tensor FromPython(py::handle o) {
  if (py::isinstance<PyTensor>(o)) return o.cast<PyTensor&>().t;
  if (IsTextLike(o)) return Tensor::Scalar(ToBytes(o));
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(o);
  DType d = Unwrap(DTypeFromNumpy(a.dtype()));
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  Tensor t = Unwrap(Tensor::Allocate(d, Shape(dims)));
  if (d == DType::kString) {
    py::object flat = a.attr("ravel")();
    std::string* dst = t.mutable_data<std::string>();
    int64_t i = 0;
    for (py::handle item : flat) dst[i++] = ToBytes(item);
    return t;
  }
  py::array c = np.attr("ascontiguousarray")(a);
  if (t.nbytes() > 0) std::memcpy(t.mutable_data<char>(), c.data(), t.nbytes());
  return t;
}

// tf.data's structure rules: a dict is named components, a tuple is positional
// components, anything else (lists included, as in tf) is one component.
Element ElementFromPython(py::handle o) {
  if (py::isinstance<py::dict>(o)) {
    std::vector<std::string> names;
    std::vector<Tensor> ts;
    for (auto [k, v] : o.cast<py::dict>()) {
      names.push_back(py::str(k));
      ts.push_back(FromPython(v));
    }
    return Element(std::move(ts), MakeNames(std::move(names)));
  }
  if (py::isinstance<py::tuple>(o)) {
    std::vector<Tensor> ts;
    for (py::handle v : o.cast<py::tuple>()) ts.push_back(FromPython(v));
    return Element(std::move(ts));
  }
  return Element{FromPython(o)};
}

// How elements come out: numpy arrays (scalars unwrapped), or PyTensor objects (the torch
// adapter turns those into tensors through DLPack).
enum class OutMode { kNumpy = 0, kTensor = 1 };

py::object ComponentToPython(const Tensor& t, OutMode mode) {
  if (mode == OutMode::kTensor && t.dtype() != DType::kString &&
      t.dtype() != DType::kBFloat16) {
    return py::cast(PyTensor{t});
  }
  return ToNumpy(t, /*unwrap_scalars=*/mode == OutMode::kNumpy);
}

py::object ElementToPython(const Element& e, OutMode mode) {
  if (e.names()) {
    py::dict d;
    const auto& names = *e.names();
    for (size_t i = 0; i < e.size(); ++i) d[py::str(names[i])] = ComponentToPython(e[i], mode);
    return d;
  }
  if (e.size() == 1) return ComponentToPython(e[0], mode);
  py::tuple t(e.size());
  for (size_t i = 0; i < e.size(); ++i) t[i] = ComponentToPython(e[i], mode);
  return t;
}

// Calls fn the tf.data way: fn(dict), fn(*tuple) or fn(x).
py::object CallWithElement(py::handle fn, const Element& e) {
  py::object arg = ElementToPython(e, OutMode::kNumpy);
  if (py::isinstance<py::tuple>(arg)) return fn(*arg);
  return fn(arg);
}

// ---------------------------------------------------------------------------------------
// DLPack (the v0.6 ABI every framework reads).

struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr int32_t kDLCPU = 1;

struct DLContext {
  Tensor tensor;  // keeps the buffer alive
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

void DeleteDL(DLManagedTensor* m) { delete static_cast<DLContext*>(m->manager_ctx); }

py::capsule ToDLPack(const Tensor& t) {
  DLDataType dt{0, static_cast<uint8_t>(DTypeSize(t.dtype()) * 8), 1};
  switch (t.dtype()) {
    case DType::kBool: dt.code = 6; break;  // kDLBool
    case DType::kUInt8: dt.code = 1; break;
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
      dt.code = 0;
      break;
    case DType::kFloat16: case DType::kFloat32: case DType::kFloat64: dt.code = 2; break;
    case DType::kBFloat16: dt.code = 4; break;
    default:
      throw py::type_error("sluice: DLPack cannot carry a tensor of dtype " +
                           std::string(DTypeName(t.dtype())));
  }
  auto* ctx = new DLContext{t, t.shape().ToVector(), {}, {}};
  ctx->strides.resize(t.rank());
  int64_t s = 1;
  for (int i = t.rank() - 1; i >= 0; --i) {
    ctx->strides[i] = s;
    s *= t.dim(i);
  }
  static char empty_data[64];
  DLTensor& d = ctx->managed.dl_tensor;
  // The context's copy's data (inline for a small tensor, so not `t`'s).
  const Tensor& held = ctx->tensor;
  d.data = held.raw_data() ? const_cast<void*>(held.raw_data()) : empty_data;
  d.device = {kDLCPU, 0};
  d.ndim = t.rank();
  d.dtype = dt;
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &DeleteDL;
  return py::capsule(&ctx->managed, "dltensor", [](PyObject* cap) {
    // Not consumed (a consumer renames it "used_dltensor" and owns it): free it here.
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      m->deleter(m);
    }
  });
}

// ---------------------------------------------------------------------------------------
// Attributes: Python values -> AttrValue. Explicitly typed values come from sluice/attr.py
// as objects with `_sluice_attr` = (kind, value).

DType DTypeFromPython(py::handle o) {
  if (py::isinstance<py::str>(o)) return Unwrap(DTypeFromName(o.cast<std::string>()));
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(o));
  return Unwrap(DTypeFromNumpy(dt));
}

bool LooksLikeDType(py::handle o) {
  if (py::isinstance<py::dtype>(o)) return true;
  if (PyType_Check(o.ptr())) {
    py::module_ np = py::module_::import("numpy");
    return PyObject_IsSubclass(o.ptr(), np.attr("generic").ptr()) == 1;
  }
  return false;
}

PartialShape ShapeFromPython(py::handle o) {
  if (o.is_none()) return PartialShape::UnknownRank();
  std::vector<int64_t> dims;
  for (py::handle d : o) dims.push_back(d.is_none() ? PartialShape::kUnknownDim : d.cast<int64_t>());
  return PartialShape(std::move(dims));
}

AttrValue AttrFromPython(py::handle o) {
  if (py::hasattr(o, "_sluice_attr")) {
    py::tuple kv = o.attr("_sluice_attr");
    std::string kind = kv[0].cast<std::string>();
    py::handle v = kv[1];
    if (kind == "int") return v.cast<int64_t>();
    if (kind == "float") return v.cast<double>();
    if (kind == "ints") return v.cast<std::vector<int64_t>>();
    if (kind == "floats") return v.cast<std::vector<double>>();
    if (kind == "strings") return v.cast<std::vector<std::string>>();
    if (kind == "dtype") return DTypeFromPython(v);
    if (kind == "dtypes") {
      std::vector<DType> out;
      for (py::handle d : v) out.push_back(DTypeFromPython(d));
      return out;
    }
    if (kind == "shape") return ShapeFromPython(v);
    if (kind == "shapes") {
      std::vector<PartialShape> out;
      for (py::handle s : v) out.push_back(ShapeFromPython(s));
      return out;
    }
    if (kind == "tensor") return FromPython(v);
    if (kind == "tensors") {
      std::vector<Tensor> out;
      for (py::handle t : v) out.push_back(t.is_none() ? Tensor() : FromPython(t));
      return out;
    }
    throw py::value_error("sluice: unknown attribute kind '" + kind + "'");
  }
  if (py::isinstance<py::bool_>(o)) return o.cast<bool>();
  if (py::isinstance<py::int_>(o)) return o.cast<int64_t>();
  if (py::isinstance<py::float_>(o)) return o.cast<double>();
  if (py::isinstance<py::str>(o) || py::isinstance<py::bytes>(o)) return o.cast<std::string>();
  if (LooksLikeDType(o)) return DTypeFromPython(o);
  if (py::isinstance<py::array>(o)) return FromPython(o);
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
    py::sequence seq = o.cast<py::sequence>();
    bool all_int = true, all_num = true, all_str = true, all_dtype = true;
    for (py::handle v : seq) {
      bool is_int = py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v);
      all_int &= is_int;
      all_num &= is_int || py::isinstance<py::float_>(v);
      all_str &= py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v);
      all_dtype &= LooksLikeDType(v);
    }
    if (all_int) return seq.cast<std::vector<int64_t>>();  // also the empty list
    if (all_num) return seq.cast<std::vector<double>>();
    if (all_str) return seq.cast<std::vector<std::string>>();
    if (all_dtype) {
      std::vector<DType> out;
      for (py::handle d : seq) out.push_back(DTypeFromPython(d));
      return out;
    }
  }
  throw py::type_error("sluice: cannot use a " + std::string(py::str(o.get_type())) +
                       " as a kernel attribute; wrap it with sluice.attr.*");
}

AttrMap AttrsFromPython(const py::dict& d) {
  AttrMap attrs;
  for (auto [k, v] : d) attrs[py::str(k).cast<std::string>()] = AttrFromPython(v);
  return attrs;
}

py::object AttrToPython(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DType>) {
          return py::str(std::string(DTypeName(x)));
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          py::list l;
          for (DType d : x) l.append(py::str(std::string(DTypeName(d))));
          return l;
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          return py::str(x.ToString());
        } else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) {
          py::list l;
          for (const auto& s : x) l.append(py::str(s.ToString()));
          return l;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return x.valid() ? ToNumpy(x, false) : py::none().cast<py::object>();
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          py::list l;
          for (const auto& t : x) l.append(t.valid() ? ToNumpy(t, false) : py::none());
          return l;
        } else {
          return py::cast(x);
        }
      },
      v);
}

// ---------------------------------------------------------------------------------------
// Python callables as functions: stateful (the optimizer never parallelizes or fuses them)
// and not serializable. Each call takes the GIL.

std::string CallableName(py::handle fn) {
  if (py::hasattr(fn, "__qualname__")) return py::str(fn.attr("__qualname__"));
  return py::str(fn.get_type().attr("__name__"));
}

Function PyMapFunction(py::object fn) {
  std::string name = "py:" + CallableName(fn);
  auto ref = std::make_shared<PyRef>(fn);
  return Function::Map(
      name,
      [ref, name](Element&& e, FunctionContext&) -> Result<Element> {
        py::gil_scoped_acquire gil;
        try {
          py::object out = CallWithElement(ref->get(), e);
          return ElementFromPython(out);
        } catch (py::error_already_set& err) {
          return StatusFromPythonError(err, "python function '" + name + "'");
        } catch (std::exception& err) {
          return InvalidArgumentError("python function '" + name + "': " + err.what());
        }
      },
      {.is_random = false, .skippable = false, .stateful = true});
}

Function PyPredicate(py::object fn) {
  std::string name = "py:" + CallableName(fn);
  auto ref = std::make_shared<PyRef>(fn);
  return Function::Predicate(
      name,
      [ref, name](const Element& e, FunctionContext&) -> Result<bool> {
        py::gil_scoped_acquire gil;
        try {
          py::object out = CallWithElement(ref->get(), e);
          int truth = PyObject_IsTrue(out.ptr());
          if (truth < 0) throw py::error_already_set();
          return truth == 1;
        } catch (py::error_already_set& err) {
          return StatusFromPythonError(err, "python predicate '" + name + "'");
        } catch (std::exception& err) {
          return InvalidArgumentError("python predicate '" + name + "': " + err.what());
        }
      },
      {.is_random = false, .skippable = false, .stateful = true});
}

Dataset DatasetFromPython(py::handle o);

Function PyDatasetFunction(py::object fn) {
  std::string name = "py:" + CallableName(fn);
  auto ref = std::make_shared<PyRef>(fn);
  return Function::DatasetFunction(
      name,
      [ref, name](Element&& e, FunctionContext&) -> Result<Dataset> {
        py::gil_scoped_acquire gil;
        try {
          py::object out = CallWithElement(ref->get(), e);
          return DatasetFromPython(out);
        } catch (py::error_already_set& err) {
          return StatusFromPythonError(err, "python dataset function '" + name + "'");
        } catch (std::exception& err) {
          return InvalidArgumentError("python dataset function '" + name + "': " + err.what());
        }
      },
      {.is_random = false, .skippable = false, .stateful = true});
}

// The native Dataset of a sluice.data.Dataset (which keeps it in `_ds`) or of a native one.
Dataset DatasetFromPython(py::handle o) {
  if (py::isinstance<Dataset>(o)) return o.cast<Dataset>();
  if (py::hasattr(o, "_ds")) return o.attr("_ds").cast<Dataset>();
  throw py::type_error("sluice: expected a sluice.data.Dataset, got " +
                       std::string(py::str(o.get_type())));
}

// A record-file source per file name (for num_parallel_reads and datasets of file names).
Function FileSourceFunction(std::string op, Compression c) {
  return Function::DatasetFunction(
      op + "_per_file",
      [op, c](Element&& e, FunctionContext&) -> Result<Dataset> {
        if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].rank() != 0) {
          return InvalidArgumentError(op + ": expected file names (string scalars), got " +
                                      ElementSpec::Of(e).ToString());
        }
        std::vector<std::string> files{e[0].scalar<std::string>()};
        if (op == "TextLine") return Dataset::TextLine(files, c);
        return Dataset::TFRecord(files, c);
      },
      {.is_random = false, .skippable = true});
}

// ---------------------------------------------------------------------------------------
// Options <-> dict.

template <typename T>
void SetOpt(std::optional<T>* dst, const py::dict& d, const char* key) {
  if (d.contains(key) && !d[key].is_none()) *dst = d[key].cast<T>();
}

Options OptionsFromDict(const py::dict& d) {
  Options o;
  SetOpt(&o.deterministic, d, "deterministic");
  SetOpt(&o.inline_execution, d, "inline_execution");
  if (d.contains("autotune")) {
    py::dict a = d["autotune"];
    SetOpt(&o.autotune.enabled, a, "enabled");
    SetOpt(&o.autotune.cpu_budget, a, "cpu_budget");
    SetOpt(&o.autotune.ram_budget, a, "ram_budget");
    SetOpt(&o.autotune.initial_parallelism, a, "initial_parallelism");
  }
  if (d.contains("optimization")) {
    py::dict a = d["optimization"];
    SetOpt(&o.optimization.apply_default_optimizations, a, "apply_default_optimizations");
    if (a.contains("passes")) {
      for (auto [k, v] : a["passes"].cast<py::dict>()) {
        o.optimization.Set(py::str(k), v.cast<bool>());
      }
    }
  }
  if (d.contains("threading")) {
    py::dict a = d["threading"];
    SetOpt(&o.threading.private_threadpool_size, a, "private_threadpool_size");
  }
  if (d.contains("files")) {
    py::dict a = d["files"];
    SetOpt(&o.files.allowed_roots, a, "allowed_roots");
    SetOpt(&o.files.allowed_write_roots, a, "allowed_write_roots");
  }
  return o;
}

template <typename T>
py::object OptToPy(const std::optional<T>& v) {
  return v ? py::cast(*v) : py::none().cast<py::object>();
}

py::dict OptionsToDict(const Options& o) {
  py::dict d, a, opt, th, passes, files;
  d["deterministic"] = OptToPy(o.deterministic);
  d["inline_execution"] = OptToPy(o.inline_execution);
  a["enabled"] = OptToPy(o.autotune.enabled);
  a["cpu_budget"] = OptToPy(o.autotune.cpu_budget);
  a["ram_budget"] = OptToPy(o.autotune.ram_budget);
  a["initial_parallelism"] = OptToPy(o.autotune.initial_parallelism);
  opt["apply_default_optimizations"] = OptToPy(o.optimization.apply_default_optimizations);
  for (const auto& [k, v] : o.optimization.passes) passes[py::str(k)] = v;
  opt["passes"] = passes;
  th["private_threadpool_size"] = OptToPy(o.threading.private_threadpool_size);
  d["autotune"] = a;
  d["optimization"] = opt;
  d["threading"] = th;
  files["allowed_roots"] = OptToPy(o.files.allowed_roots);
  files["allowed_write_roots"] = OptToPy(o.files.allowed_write_roots);
  d["files"] = files;
  return d;
}

// ---------------------------------------------------------------------------------------
// Ctrl-C while the main thread waits in GetNext.
//
// Python's own SIGINT handler only sets a flag that the main thread reads between
// bytecodes, which it never reaches while blocked in C++. So sluice puts a C handler in
// place of Python's (once, while SIGINT's Python-level handler is a callable): outside
// GetNext it hands the signal to Python exactly as Python's own would
// (PyErr_SetInterruptEx, which is async-signal-safe, trips the handler and writes the
// wakeup fd); while the main thread is in GetNext it wakes a watcher thread (sem_post)
// that cancels the iterator being waited on, so GetNext returns promptly, and the signal
// is handed to Python after the call, which raises KeyboardInterrupt (or runs the user's
// handler) at its next PyErr_CheckSignals.
// Installing once, rather than around each call, keeps system calls off the per-element
// path (three sigaction calls per `next` cost about a microsecond). When the Python-level
// handler changes (signal.signal), the next call installs the stand-in again; set to
// SIG_IGN or SIG_DFL, sluice leaves SIGINT alone. Only the main thread does this; Python
// delivers signals only there anyway.

std::atomic<bool> g_sigint{false};
sem_t g_sigint_sem;
std::mutex g_cancel_mu;
Iterator* g_waiting = nullptr;  // GUARDED_BY(g_cancel_mu): the iterator the main thread waits on
unsigned long g_main_thread = 0;

// Whether the main thread is inside a guarded GetNext.
std::atomic<bool> g_in_next{false};

void OnSigint(int) {
  if (!g_in_next.load()) {
    PyErr_SetInterruptEx(SIGINT);
    return;
  }
  // Inside GetNext, Python functions of the pipeline may run on this thread: tripping the
  // signal now would raise KeyboardInterrupt inside one of them. Finish hands it over.
  g_sigint.store(true);
  sem_post(&g_sigint_sem);
}

void StartWatcher() {
  static std::once_flag once;
  std::call_once(once, [] {
    sem_init(&g_sigint_sem, 0, 0);
    std::thread([] {
      while (true) {
        if (sem_wait(&g_sigint_sem) != 0) continue;
        std::lock_guard<std::mutex> l(g_cancel_mu);
        if (g_waiting != nullptr && g_sigint.load()) g_waiting->Cancel();
      }
    }).detach();
  });
}

// Whether the stand-in handler is installed for SIGINT's current Python-level handler,
// installing it when needed. GIL held, main thread.
bool SigintStandInInstalled() {
  static PyObject* getsignal = nullptr;          // _signal.getsignal, never released
  static PyObject* installed_for = nullptr;      // the Python handler seen at install
  if (getsignal == nullptr) {
    // _signal's, not signal's: the latter maps the result to an enum through a raised
    // and caught ValueError on every call.
    getsignal = py::object(py::module_::import("_signal").attr("getsignal")).release().ptr();
  }
  py::object h = py::reinterpret_steal<py::object>(PyObject_CallFunction(getsignal, "i", SIGINT));
  if (!h) {
    PyErr_Clear();
    return false;
  }
  if (h.ptr() == installed_for) return true;
  if (!PyCallable_Check(h.ptr())) return false;  // SIG_IGN, SIG_DFL, None
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return false;
  if (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL) return false;
  if (current.sa_handler != &OnSigint) {
    StartWatcher();
    struct sigaction ours{};
    ours.sa_handler = &OnSigint;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGINT, &ours, nullptr) != 0) return false;
  }
  Py_XDECREF(installed_for);
  installed_for = h.release().ptr();
  return true;
}

class SigintGuard {
 public:
  // Call with the GIL held; the blocking call then runs without it.
  explicit SigintGuard(Iterator* it) {
    if (PyThread_get_thread_ident() != g_main_thread) return;
    if (!SigintStandInInstalled()) return;
    g_sigint.store(false);
    {
      std::lock_guard<std::mutex> l(g_cancel_mu);
      g_waiting = it;
    }
    g_in_next.store(true);
    active_ = true;
  }
  // Stops standing guard. True when a SIGINT arrived meanwhile (now pending in Python).
  bool Finish() {
    if (!active_) return false;
    active_ = false;
    g_in_next.store(false);
    {
      std::lock_guard<std::mutex> l(g_cancel_mu);
      g_waiting = nullptr;
    }
    if (!g_sigint.exchange(false)) return false;
    PyErr_SetInterruptEx(SIGINT);
    return true;
  }
  ~SigintGuard() { (void)Finish(); }

 private:
  bool active_ = false;
};

// Incremented in every child of a fork: an iterator compares it with the value it was
// made under, instead of calling getpid() on each `next`.
std::atomic<uint64_t> g_fork_generation{0};

// ---------------------------------------------------------------------------------------
// Iterator.

class PyIterator;
// Every PyIterator alive, so that the interpreter's exit can stop their pipelines first
// (CloseAllAtExit). Changed and read with the GIL held.
std::set<PyIterator*>& LiveIterators() {
  static auto* live = new std::set<PyIterator*>();
  return *live;
}

class PyIterator {
 public:
  PyIterator(std::unique_ptr<Iterator> it, OutMode mode)
      : it_(std::move(it)), mode_(mode), pid_(getpid()), fork_generation_(g_fork_generation) {
    LiveIterators().insert(this);
  }
  ~PyIterator() {
    LiveIterators().erase(this);
    Close();
  }

  // Called by atexit, before the interpreter finalizes: a pipeline thread that runs a
  // Python function after that point would be ended by pthread_exit in the middle of
  // sluice's frames. An iterator in use by another (daemon) thread is cancelled, the
  // others are closed (their threads joined).
  static void CloseAllAtExit() {
    const std::vector<PyIterator*> live(LiveIterators().begin(), LiveIterators().end());
    for (PyIterator* it : live) {
      if (it->busy_) {
        it->Cancel();
      } else {
        it->Close();
      }
    }
  }

  py::object Next() {
    if (!it_) throw py::stop_iteration();
    Unforked();
    busy_ = true;
    struct Done {
      bool* busy;
      ~Done() { *busy = false; }
    } done{&busy_};
    if (interrupted_) {
      ThrowStatus(CancelledError("sluice iterator: interrupted by Ctrl-C; make a new one"));
    }
    std::optional<Result<std::optional<Element>>> r;
    bool signalled = false;
    {
      SigintGuard guard(it_.get());
      {
        py::gil_scoped_release nogil;
        r.emplace(it_->GetNext());
      }
      signalled = guard.Finish();
    }
    if (signalled) {
      interrupted_ = true;
      Cancel();
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      // The user's handler did not raise: go on unless the call was cut short.
      if (!r->ok() && r->status().code() == StatusCode::kCancelled) {
        throw py::stop_iteration();
      }
    }
    if (!r->ok()) ThrowStatus(r->status());
    if (!r->value()) throw py::stop_iteration();
    return ElementToPython(*r->value(), mode_);
  }

  py::bytes Save() {
    Live();
    std::optional<Result<std::string>> r;
    {
      py::gil_scoped_release nogil;
      r.emplace(it_->Save());
    }
    return py::bytes(Unwrap(std::move(*r)));
  }

  void Restore(const std::string& checkpoint) {
    Live();
    Status s;
    {
      py::gil_scoped_release nogil;
      s = it_->Restore(checkpoint);
    }
    Check(s);
  }

  void Cancel() {
    if (!it_) return;
    py::gil_scoped_release nogil;  // Cancel may wait for a running function
    it_->Cancel();
  }

  // Joins the pipeline's threads without the GIL (they may be waiting for it).
  void Close() {
    if (!it_) return;
    if (getpid() != pid_) {
      // A forked child (a DataLoader worker, multiprocessing) holds a copy of an iterator
      // whose threads stayed in the parent: joining them would wait forever, and its
      // memory is the parent's copy. Leave it.
      (void)it_.release();
      return;
    }
    if (PythonAlive() && PyGILState_Check()) {
      py::gil_scoped_release nogil;
      it_.reset();
    } else {
      it_.reset();
    }
  }

  Iterator& Live() {
    if (!it_) throw py::value_error("sluice: the iterator is closed");
    Unforked();
    return *it_;
  }

  // An iterator cannot be used in a process forked from the one that made it: its
  // threads are not there.
  void Unforked() const {
    if (g_fork_generation.load(std::memory_order_relaxed) != fork_generation_ &&
        getpid() != pid_) {
      ThrowStatus(FailedPreconditionError(
          "sluice iterator: made in process " + std::to_string(pid_) +
          " and used in " + std::to_string(getpid()) +
          " (a fork); make the iterator in the process that reads it"));
    }
  }
  OutMode mode() const { return mode_; }

 private:
  std::unique_ptr<Iterator> it_;
  OutMode mode_;
  bool interrupted_ = false;
  bool busy_ = false;  // in Next (changed with the GIL held)
  pid_t pid_;          // the process that made it
  uint64_t fork_generation_;  // g_fork_generation when it was made
};

py::list SpecToPython(const ElementSpec& spec) {
  py::list out;
  if (spec.unknown) return out;
  for (size_t i = 0; i < spec.size(); ++i) {
    py::object shape = py::none();
    if (spec[i].shape.rank_known()) {
      py::list dims;
      for (int64_t d : spec[i].shape.dims()) {
        if (d < 0) dims.append(py::none()); else dims.append(d);
      }
      shape = py::tuple(dims);
    }
    py::object name = spec.names ? py::str((*spec.names)[i]).cast<py::object>() : py::none();
    out.append(py::make_tuple(name, std::string(DTypeName(spec[i].dtype)), shape));
  }
  return out;
}

std::optional<bool> OptBool(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  return o.cast<bool>();
}

std::optional<int64_t> OptInt(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  return o.cast<int64_t>();
}

std::vector<std::string> Strings(py::handle o) {
  if (IsTextLike(o)) return {ToBytes(o)};
  std::vector<std::string> out;
  for (py::handle v : o) out.push_back(ToBytes(v));
  return out;
}

Compression CompressionArg(const py::object& o) {
  if (o.is_none()) return Compression::kNone;
  return Unwrap(CompressionFromName(o.cast<std::string>()));
}

std::vector<Tensor> TensorList(const py::object& o) {
  std::vector<Tensor> out;
  if (o.is_none()) return out;
  if (!py::isinstance<py::tuple>(o) && !py::isinstance<py::list>(o)) return {FromPython(o)};
  for (py::handle v : o) out.push_back(v.is_none() ? Tensor() : FromPython(v));
  return out;
}

std::vector<PartialShape> ShapeList(const py::object& o) {
  std::vector<PartialShape> out;
  if (o.is_none()) return out;
  // One shape for a one-component element, or one per component.
  py::sequence seq = o.cast<py::sequence>();
  bool single = true;
  for (py::handle v : seq) single &= v.is_none() || py::isinstance<py::int_>(v);
  if (single) return {ShapeFromPython(o)};
  for (py::handle v : seq) out.push_back(ShapeFromPython(v));
  return out;
}

template <typename F>
auto NoGil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

}  // namespace
}  // namespace python
}  // namespace sluice

namespace sluice {
namespace python {
void ThrowIfError(const Status& s) { Check(s); }
Status StatusFromPyError(py::error_already_set& e, std::string_view what) {
  return StatusFromPythonError(e, what);
}
}  // namespace python
}  // namespace sluice

using namespace sluice;          // NOLINT
using namespace sluice::python;  // NOLINT

PYBIND11_MODULE(_sluice, m) {
  m.doc() = "sluice native module (see the sluice package)";
  // pybind11's numpy support looks numpy's C API up in a function-local static on first
  // use; the lookup imports numpy, which lets other threads take the GIL. A pipeline
  // thread holding the GIL that reached the same static would then wait on its guard
  // while the thread inside waits for the GIL: a deadlock. So initialize it here, once,
  // under the import's GIL, before any pipeline thread can need it.
  py::module_::import("numpy");
  (void)py::detail::npy_api::get();
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { PyIterator::CloseAllAtExit(); }));
  pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); });
  g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();

  // What escapes a binding besides Python errors becomes a sluice error, not pybind11's
  // generic RuntimeError: running out of memory is ResourceExhausted, anything else
  // Internal with its what().
  py::register_exception_translator([](std::exception_ptr p) {
    Status s;
    try {
      if (p) std::rethrow_exception(p);
      return;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::bad_alloc&) {
      s = ResourceExhaustedError("sluice: out of memory");
    } catch (const std::exception& e) {
      s = InternalError(std::string("sluice: uncaught exception: ") + e.what());
    }
    try {
      ThrowStatus(s);
    } catch (py::error_already_set& e) {
      e.restore();
    }
  });
  m.def("_register_errors", [](py::dict classes) {
    for (auto [k, v] : classes) {
      int code = k.cast<int>();
      if (code <= 0 || code >= 17) continue;
      Py_XINCREF(v.ptr());
      Py_XDECREF(g_error_classes[code]);
      g_error_classes[code] = v.ptr();
    }
  });
  m.def("status_code_names", [] {
    py::dict d;
    for (int i = 0; i < 17; ++i) d[py::int_(i)] = std::string(StatusCodeName(static_cast<StatusCode>(i)));
    return d;
  });
  m.def("_raise_status", [](int code, std::string msg) {
    ThrowStatus(Status(static_cast<StatusCode>(code), std::move(msg)));
  }, "Raises the exception sluice maps `code` to (tests).");

  // ---- Tensor ----
  py::class_<PyTensor>(m, "Tensor", py::buffer_protocol(),
                       "One sluice tensor: holds a reference on its buffer. numpy arrays "
                       "handed out by sluice have one of these as their base.")
      .def_buffer([](PyTensor& p) -> py::buffer_info {
        const char* fmt = BufferFormat(p.t.dtype());
        if (fmt == nullptr) {
          throw py::type_error("sluice: a " + std::string(DTypeName(p.t.dtype())) +
                               " tensor has no buffer view; use numpy()");
        }
        static char empty[64];
        void* ptr = p.t.raw_data() ? const_cast<void*>(p.t.raw_data()) : empty;
        return py::buffer_info(ptr, static_cast<py::ssize_t>(DTypeSize(p.t.dtype())), fmt,
                               p.t.rank(), ShapeOf(p.t), StridesOf(p.t), /*readonly=*/true);
      })
      .def(py::init([](py::object value) { return PyTensor{FromPython(value)}; }),
           "Copies a value (numpy array, scalar, bytes) into a new sluice tensor.")
      .def_property_readonly("dtype", [](const PyTensor& p) { return std::string(DTypeName(p.t.dtype())); })
      .def_property_readonly("shape", [](const PyTensor& p) { return py::tuple(py::cast(ShapeOf(p.t))); })
      .def_property_readonly("nbytes", [](const PyTensor& p) { return p.t.nbytes(); })
      .def_property_readonly("data_ptr", [](const PyTensor& p) {
        return reinterpret_cast<uintptr_t>(p.t.raw_data());
      }, "Address of the first element (for zero-copy checks).")
      .def_property_readonly("buffer_use_count", [](const PyTensor& p) {
        return p.t.buffer() ? p.t.buffer()->use_count() : 0;
      }, "References on the underlying sluice buffer.")
      .def("numpy", [](const PyTensor& p) { return ToNumpy(p.t, false); },
           "A read-only numpy view (a copy for string and bfloat16 tensors).")
      .def("__dlpack__", [](const PyTensor& p, py::object stream) { return ToDLPack(p.t); },
           py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const PyTensor&) { return py::make_tuple(kDLCPU, 0); })
      .def("__repr__", [](const PyTensor& p) { return "sluice.Tensor(" + p.t.DebugString() + ")"; });

  // ---- Function ----
  py::class_<Function>(m, "Function")
      .def_property_readonly("name", &Function::name)
      .def_property_readonly("serializable", &Function::serializable)
      .def_property_readonly("is_random", &Function::is_random)
      .def_property_readonly("stateful", [](const Function& f) { return f.traits().stateful; })
      .def_property_readonly("attrs", [](const Function& f) {
        py::dict d;
        for (const auto& [k, v] : f.attrs()) d[py::str(k)] = AttrToPython(v);
        return d;
      })
      .def("__call__", [](const Function& f, py::args args) {
        // Applies the function to one element given as arguments (tests, interactive use).
        Element in;
        if (args.size() == 1) in = ElementFromPython(args[0]);
        else in = ElementFromPython(py::tuple(args));
        FunctionContext ctx(0, 0);
        if (f.kind() == Function::Kind::kPredicate) {
          Result<bool> r = NoGil([&] { return f.Test(in, ctx); });
          return py::cast(Unwrap(std::move(r)));
        }
        if (f.kind() != Function::Kind::kElement) {
          throw py::type_error("sluice: only element and predicate functions can be called");
        }
        Result<Element> r = NoGil([&] { return f(std::move(in), ctx); });
        return ElementToPython(Unwrap(std::move(r)), OutMode::kNumpy);
      })
      .def("__repr__", [](const Function& f) {
        std::string s = "<sluice function " + f.name();
        for (const auto& [k, v] : f.attrs()) s += " " + k + "=" + AttrValueDebugString(v);
        return s + ">";
      });

  m.def("kernel", [](const std::string& name, py::dict attrs) {
    return Unwrap(Function::Kernel(name, AttrsFromPython(attrs)));
  }, py::arg("name"), py::arg("attrs") = py::dict(),
        "A registered kernel by name with attributes (see docs/kernels.md).");
  m.def("kernel_names", [] { return BuiltinRegistry().KernelNames(); });
  m.def("op_names", [] { return BuiltinRegistry().OpNames(); });
  m.def("py_map_function", &PyMapFunction);
  m.def("py_predicate", &PyPredicate);
  m.def("py_dataset_function", &PyDatasetFunction);

  // ---- Iterator ----
  py::class_<PyIterator>(m, "Iterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyIterator::Next)
      .def("get_next", &PyIterator::Next)
      .def("save", &PyIterator::Save, "A binary checkpoint of the iterator's position.")
      .def("restore", &PyIterator::Restore, py::arg("checkpoint"),
           "Restores a checkpoint from save() on a fresh iterator of the same dataset.")
      .def("cancel", &PyIterator::Cancel)
      .def("close", &PyIterator::Close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyIterator& self, py::args) { self.Close(); })
      .def_property_readonly("element_spec", [](PyIterator& self) {
        return SpecToPython(self.Live().element_spec());
      })
      .def("tuned_parameters", [](PyIterator& self) {
        py::list out;
        for (const TunedParameter& p : self.Live().TunedParameters()) {
          py::dict d;
          d["prefix"] = p.prefix; d["name"] = p.name; d["value"] = p.value;
          d["min"] = p.min; d["max"] = p.max; d["op"] = p.op;
          out.append(d);
        }
        return out;
      })
      .def("stats", [](PyIterator& self) {
        // The stats plane in its one schema (include/sluice/stats.h), as a dict.
        const std::string json = StatsToJson(self.Live().Snapshot());
        return py::module_::import("json").attr("loads")(json);
      });

  // ---- Dataset ----
  py::class_<Dataset>(m, "Dataset")
      .def_static("range", [](int64_t a, int64_t b, int64_t c) { return Dataset::Range(a, b, c); })
      .def_static("from_tensors", [](py::object o) { return Dataset::FromTensors(ElementFromPython(o)); })
      .def_static("from_tensor_slices", [](py::object o) { return Dataset::FromTensorSlices(ElementFromPython(o)); })
      .def_static("list_files", [](py::object patterns, bool shuffle, py::object seed) {
        return Dataset::ListFiles(Strings(patterns), shuffle, OptInt(seed));
      })
      .def_static("text_line", [](py::object files, py::object comp) {
        return Dataset::TextLine(Strings(files), CompressionArg(comp));
      })
      .def_static("tfrecord", [](py::object files, py::object comp) {
        return Dataset::TFRecord(Strings(files), CompressionArg(comp));
      })
      .def_static("fixed_length_record", [](py::object files, int64_t rb, int64_t hb, int64_t fb, py::object comp) {
        return Dataset::FixedLengthRecord(Strings(files), rb, hb, fb, CompressionArg(comp));
      })
      .def_static("idx", [](std::string path) { return Dataset::Idx(std::move(path)); })
      .def_static("image_folder", [](std::string root, std::vector<std::string> ext) {
        return Dataset::ImageFolder(std::move(root), std::move(ext));
      })
      .def_static("zip", [](std::vector<Dataset> ds) { return Dataset::Zip(std::move(ds)); })
      .def_static("file_source_function", [](std::string op, py::object comp) {
        return FileSourceFunction(op, CompressionArg(comp));
      })
      .def("map", [](const Dataset& d, const Function& f, py::object npc, py::object det) {
        if (npc.is_none()) return d.Map(f);
        return d.Map(f, npc.cast<int64_t>(), OptBool(det));
      })
      .def("filter", [](const Dataset& d, const Function& f, py::object npc, py::object det) {
        if (npc.is_none()) return d.Filter(f);
        return d.Filter(f, npc.cast<int64_t>(), OptBool(det));
      })
      .def("flat_map", &Dataset::FlatMap)
      .def("interleave", [](const Dataset& d, const Function& f, int64_t cycle, int64_t block,
                            py::object npc, py::object det) {
        if (npc.is_none()) return d.Interleave(f, cycle, block);
        return d.Interleave(f, cycle, block, npc.cast<int64_t>(), OptBool(det));
      })
      .def("batch", [](const Dataset& d, int64_t bs, bool drop, py::object npc, py::object det) {
        if (npc.is_none()) return d.Batch(bs, drop);
        return d.Batch(bs, drop, npc.cast<int64_t>(), OptBool(det));
      })
      .def("map_and_batch", [](const Dataset& d, const Function& f, int64_t bs, int64_t npc,
                               bool drop, py::object det) {
        return d.MapAndBatch(f, bs, npc, drop, OptBool(det));
      })
      .def("padded_batch", [](const Dataset& d, int64_t bs, py::object shapes, py::object values, bool drop) {
        return d.PaddedBatch(bs, ShapeList(shapes), TensorList(values), drop);
      })
      .def("prefetch", &Dataset::Prefetch)
      .def("unbatch", &Dataset::Unbatch)
      .def("shuffle", [](const Dataset& d, int64_t buf, py::object seed, bool reshuffle) {
        return d.Shuffle(buf, OptInt(seed), reshuffle);
      })
      .def("global_shuffle", [](const Dataset& d, py::object seed, bool reshuffle) {
        return d.GlobalShuffle(OptInt(seed), reshuffle);
      })
      .def("repeat", &Dataset::Repeat)
      .def("take", &Dataset::Take)
      .def("skip", &Dataset::Skip)
      .def("shard", &Dataset::Shard)
      .def("concatenate", &Dataset::Concatenate)
      .def("enumerate", &Dataset::Enumerate)
      .def("cache", &Dataset::Cache)
      .def("scan", [](const Dataset& d, py::object init, const Function& f) {
        return d.Scan(ElementFromPython(init), f);
      })
      .def("window", &Dataset::Window)
      .def("group_by_window", &Dataset::GroupByWindow)
      .def("bucket_by_sequence_length", [](const Dataset& d, const Function& f, std::vector<int64_t> bounds,
                                           std::vector<int64_t> sizes, py::object shapes,
                                           py::object values, bool pad_to_boundary, bool drop) {
        return d.BucketBySequenceLength(f, std::move(bounds), std::move(sizes), ShapeList(shapes),
                                        TensorList(values), pad_to_boundary, drop);
      })
      .def("ignore_errors", &Dataset::IgnoreErrors)
      .def("reduce", [](const Dataset& d, py::object init, const Function& f) {
        Element e = ElementFromPython(init);
        Result<Element> r = NoGil([&] { return d.Reduce(std::move(e), f); });
        return ElementToPython(Unwrap(std::move(r)), OutMode::kNumpy);
      })
      .def("with_options", [](const Dataset& d, py::dict o) { return d.WithOptions(OptionsFromDict(o)); })
      .def("options", [](const Dataset& d) { return OptionsToDict(d.options()); })
      .def("cardinality", &Dataset::Cardinality)
      .def_property_readonly("element_spec", [](const Dataset& d) { return SpecToPython(d.element_spec()); })
      .def_property_readonly("element_spec_string", [](const Dataset& d) { return d.element_spec().ToString(); })
      .def("check", [](const Dataset& d) { Check(d.status()); })
      .def_property_readonly("ok", [](const Dataset& d) { return d.status().ok(); })
      .def("make_iterator", [](const Dataset& d, int mode) {
        Check(d.status());
        Result<std::unique_ptr<Iterator>> it = NoGil([&] { return d.MakeIterator(); });
        return std::make_unique<PyIterator>(Unwrap(std::move(it)), static_cast<OutMode>(mode));
      }, py::arg("mode") = 0)
      .def("make_iterator_with", [](const Dataset& d, int mode, int64_t cpu_budget,
                                    int64_t ram_budget, bool autotune, bool inline_execution) {
        Check(d.status());
        Options o;
        o.autotune.cpu_budget = cpu_budget;
        o.autotune.ram_budget = ram_budget;
        o.autotune.enabled = autotune;
        o.inline_execution = inline_execution;
        Result<std::unique_ptr<Iterator>> it =
            NoGil([&] { return MakeIteratorAsBuilt(d, o); });
        return std::make_unique<PyIterator>(Unwrap(std::move(it)), static_cast<OutMode>(mode));
      }, "An iterator over the graph as built (no rewrites) with explicit runtime settings.")
      .def("collect", [](const Dataset& d) {
        Result<std::vector<Element>> r = NoGil([&] { return d.Collect(); });
        py::list out;
        for (const Element& e : Unwrap(std::move(r))) out.append(ElementToPython(e, OutMode::kNumpy));
        return out;
      });

  // ---- io (sluice/io.py adds tf.io's names and argument handling) ----
  py::class_<io::TFRecordWriter>(m, "_TFRecordWriter")
      .def(py::init([](const std::string& path, const std::string& compression) {
             Result<io::TFRecordWriter> w =
                 NoGil([&] { return io::TFRecordWriter::Open(path, {compression}); });
             return std::make_unique<io::TFRecordWriter>(Unwrap(std::move(w)));
           }),
           py::arg("path"), py::arg("compression"))
      .def("write", [](io::TFRecordWriter& w, const py::bytes& record) {
        char* p = nullptr;
        Py_ssize_t n = 0;
        if (PyBytes_AsStringAndSize(record.ptr(), &p, &n) != 0) throw py::error_already_set();
        const std::string_view data(p, static_cast<size_t>(n));  // `record` stays alive
        Check(NoGil([&] { return w.Write(data); }));
      }, py::arg("record"))
      .def("flush", [](io::TFRecordWriter& w) { Check(NoGil([&] { return w.Flush(); })); })
      .def("close", [](io::TFRecordWriter& w) { Check(NoGil([&] { return w.Close(); })); })
      .def_property_readonly("path", &io::TFRecordWriter::path)
      .def_property_readonly("records_written", &io::TFRecordWriter::records_written);
  m.def("_write_tfrecord_index", [](const std::string& path) {
    Result<int64_t> n = NoGil([&] { return io::WriteTFRecordIndex(path); });
    return Unwrap(std::move(n));
  }, py::arg("path"));
  m.def("_serialize_example", [](const std::vector<py::tuple>& features) {
    io::ExampleBuilder b;
    for (const py::tuple& f : features) {
      const std::string key = f[0].cast<std::string>();
      const std::string kind = f[1].cast<std::string>();
      if (kind == "int64") {
        b.AddInt64(key, f[2].cast<std::vector<int64_t>>());
      } else if (kind == "float") {
        b.AddFloat(key, f[2].cast<std::vector<float>>());
      } else if (kind == "bytes") {
        std::vector<std::string> values;
        for (py::handle v : f[2]) values.push_back(v.cast<py::bytes>());
        b.AddBytes(key, values);
      } else {
        throw py::value_error("sluice: unknown feature kind '" + kind + "'");
      }
    }
    return py::bytes(b.Serialize());
  }, "A serialized tf.train.Example of (key, 'int64'|'float'|'bytes', values) triples.");
  BindPlumber(m);
  sluice::python::BindService(m);
  BindProfiler(m);
  BindData(m);
}
