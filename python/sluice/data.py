"""sluice.data: tf.data's Python API over the sluice engine.

Names, arguments and semantics follow tf.data (docs/api.md lists where sluice differs).
Elements come out as numpy arrays that view sluice's memory (no copy, read-only; their
``base`` holds the sluice buffer), scalars as numpy scalars, strings as ``bytes`` (numpy
object arrays of bytes when not scalar), like ``tf.data``'s ``as_numpy_iterator()``.
Structure: an element with named components is a dict, one unnamed component is the array
itself, several are a tuple.

Functions given to map/filter/interleave/... are either kernels (``sluice.image.*``,
``sluice.kernel(...)``: C++, no GIL, parallel, serializable) or Python callables (called
with the GIL held, one at a time, marked stateful so the optimizer never parallelizes,
fuses or reorders them, and not serializable).
"""

import os

from . import _sluice

AUTOTUNE = -1
INFINITE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

Iterator = _sluice.Iterator


def _function(fn, kind):
    """A native Function for `fn`: kernels pass through, Python callables get wrapped."""
    if isinstance(fn, _sluice.Function):
        return fn
    if not callable(fn):
        raise TypeError("sluice: expected a kernel or a callable, got %r" % (fn,))
    if kind == "map":
        return _sluice.py_map_function(fn)
    if kind == "predicate":
        return _sluice.py_predicate(fn)
    return _sluice.py_dataset_function(fn)


def _ds(d):
    if isinstance(d, Dataset):
        return d._ds
    raise TypeError("sluice: expected a sluice.data.Dataset, got %r" % (type(d),))


def _files(filenames):
    if isinstance(filenames, (str, bytes, os.PathLike)):
        return [os.fspath(filenames)]
    return [os.fspath(f) if isinstance(f, os.PathLike) else f for f in filenames]


class TensorSpec:
    """The static type of one component: dtype (numpy name), shape (a tuple with None for
    unknown dims, or None for unknown rank) and name (None when positional)."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __eq__(self, o):
        return (isinstance(o, TensorSpec) and (self.name, self.dtype, self.shape) ==
                (o.name, o.dtype, o.shape))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%s%s)" % (
            self.shape, self.dtype, "" if self.name is None else ", name=%r" % self.name)


def _structure(spec_list):
    specs = [TensorSpec(n, d, s) for n, d, s in spec_list]
    if not specs:
        return None
    if specs[0].name is not None:
        return {s.name: s for s in specs}
    if len(specs) == 1:
        return specs[0]
    return tuple(specs)


class _OptionGroup:
    _fields = ()

    def __init__(self, **kw):
        for f in self._fields:
            object.__setattr__(self, f, None)
        for k, v in kw.items():
            setattr(self, k, v)

    def __setattr__(self, k, v):
        if k not in self._fields:
            raise AttributeError("sluice: %s has no option %r (options: %s)" %
                                 (type(self).__name__, k, ", ".join(self._fields)))
        object.__setattr__(self, k, v)

    def _to_dict(self):
        return {f: getattr(self, f) for f in self._fields}

    def _load(self, d):
        for f in self._fields:
            if f in d:
                object.__setattr__(self, f, d[f])

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (f, getattr(self, f)) for f in self._fields if getattr(self, f) is not None))


class AutotuneOptions(_OptionGroup):
    """enabled, cpu_budget (threads), ram_budget (bytes; -1 unlimited), initial_parallelism."""
    _fields = ("enabled", "cpu_budget", "ram_budget", "initial_parallelism")


class ThreadingOptions(_OptionGroup):
    _fields = ("private_threadpool_size",)


class FileOptions(_OptionGroup):
    """Confines the files a pipeline touches (docs/files.md): allowed_roots (lists of
    directories the pipeline may read under) and allowed_write_roots (where it may also
    write, e.g. Cache files). None: not confined."""
    _fields = ("allowed_roots", "allowed_write_roots")

    def __setattr__(self, k, v):
        if k in self._fields and v is not None:
            if isinstance(v, (str, bytes)):
                raise TypeError("%s must be a list of directories, not a string" % k)
            v = [str(p) for p in v]
        super().__setattr__(k, v)


class OptimizationOptions:
    """apply_default_optimizations, plus one boolean per optimizer pass by name
    (``options.optimization.map_fusion = True``), as in tf.data."""

    def __init__(self):
        object.__setattr__(self, "apply_default_optimizations", None)
        object.__setattr__(self, "_passes", {})

    def __setattr__(self, k, v):
        if k == "apply_default_optimizations":
            object.__setattr__(self, k, v)
        elif v is None:
            self._passes.pop(k, None)
        else:
            self._passes[k] = bool(v)

    def __getattr__(self, k):
        if k.startswith("__"):
            raise AttributeError(k)
        return self.__dict__["_passes"].get(k)

    def _to_dict(self):
        return {"apply_default_optimizations": self.apply_default_optimizations,
                "passes": dict(self._passes)}

    def _load(self, d):
        object.__setattr__(self, "apply_default_optimizations", d.get("apply_default_optimizations"))
        self._passes.update(d.get("passes", {}))

    def __repr__(self):
        return "OptimizationOptions(apply_default_optimizations=%r, %r)" % (
            self.apply_default_optimizations, self._passes)


class Options:
    """tf.data.Options: how a pipeline runs. Unset fields (None) take sluice's defaults;
    ``Dataset.with_options`` merges (fields set here win)."""

    def __init__(self):
        self.deterministic = None
        self.inline_execution = None
        self.autotune = AutotuneOptions()
        self.optimization = OptimizationOptions()
        self.threading = ThreadingOptions()
        self.files = FileOptions()

    def _to_dict(self):
        return {"deterministic": self.deterministic, "inline_execution": self.inline_execution,
                "autotune": self.autotune._to_dict(), "optimization": self.optimization._to_dict(),
                "threading": self.threading._to_dict(), "files": self.files._to_dict()}

    @classmethod
    def _from_dict(cls, d):
        o = cls()
        o.deterministic = d.get("deterministic")
        o.inline_execution = d.get("inline_execution")
        o.autotune._load(d.get("autotune", {}))
        o.optimization._load(d.get("optimization", {}))
        o.threading._load(d.get("threading", {}))
        o.files._load(d.get("files", {}))
        return o

    def __eq__(self, o):
        return isinstance(o, Options) and self._to_dict() == o._to_dict()

    def __repr__(self):
        return "Options(deterministic=%r, autotune=%r, optimization=%r, threading=%r)" % (
            self.deterministic, self.autotune, self.optimization, self.threading)


class Dataset:
    """An immutable pipeline definition (tf.data.Dataset). Construction errors (bad
    arguments) are raised when the dataset is made."""

    __slots__ = ("_ds",)

    def __init__(self, native):
        native.check()  # raises the construction error, naming the operator
        self._ds = native

    # ---- sources ----
    @staticmethod
    def range(*args):
        """range(stop), range(start, stop[, step]) of int64 scalars."""
        if not 1 <= len(args) <= 3:
            raise TypeError("range() takes 1 to 3 arguments")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            args[0], args[1], args[2] if len(args) == 3 else 1)
        return Dataset(_sluice.Dataset.range(int(start), int(stop), int(step)))

    @staticmethod
    def from_tensors(tensors):
        return Dataset(_sluice.Dataset.from_tensors(tensors))

    @staticmethod
    def from_tensor_slices(tensors):
        """Slices numpy arrays (or a tuple / dict of them) along dimension 0 (copied once)."""
        return Dataset(_sluice.Dataset.from_tensor_slices(tensors))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        return Dataset(_sluice.Dataset.list_files(_files(file_pattern),
                                                  True if shuffle is None else bool(shuffle), seed))

    @staticmethod
    def zip(*datasets):
        if len(datasets) == 1 and isinstance(datasets[0], (tuple, list)):
            datasets = datasets[0]
        return Dataset(_sluice.Dataset.zip([_ds(d) for d in datasets]))

    @staticmethod
    def idx(path):
        """Rows of an IDX (MNIST format) file, gzipped or not (a sluice extension)."""
        return Dataset(_sluice.Dataset.idx(os.fspath(path)))

    @staticmethod
    def image_folder(root, extensions=()):
        """(path, label) for root/<class>/<file>, classes numbered in name order."""
        return Dataset(_sluice.Dataset.image_folder(os.fspath(root), list(extensions)))

    # ---- transformations ----
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        return Dataset(self._ds.map(_function(map_func, "map"), num_parallel_calls, deterministic))

    def filter(self, predicate, num_parallel_calls=None, deterministic=None):
        return Dataset(self._ds.filter(_function(predicate, "predicate"), num_parallel_calls,
                                       deterministic))

    def flat_map(self, map_func):
        return Dataset(self._ds.flat_map(_function(map_func, "dataset")))

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None):
        """map_func returns a sluice Dataset per element (a Python function or a kernel)."""
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = os.cpu_count() or 1
        return Dataset(self._ds.interleave(_function(map_func, "dataset"), int(cycle_length),
                                           1 if block_length is None else int(block_length),
                                           num_parallel_calls, deterministic))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None):
        return Dataset(self._ds.batch(int(batch_size), bool(drop_remainder), num_parallel_calls,
                                      deterministic))

    def map_and_batch(self, map_func, batch_size, num_parallel_calls=AUTOTUNE,
                      drop_remainder=False, deterministic=None):
        """map then batch, fused: results are written straight into the batch."""
        return Dataset(self._ds.map_and_batch(_function(map_func, "map"), int(batch_size),
                                              int(num_parallel_calls), bool(drop_remainder),
                                              deterministic))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        return Dataset(self._ds.padded_batch(int(batch_size), padded_shapes, padding_values,
                                             bool(drop_remainder)))

    def unbatch(self):
        return Dataset(self._ds.unbatch())

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        return Dataset(self._ds.shuffle(int(buffer_size), seed,
                                        True if reshuffle_each_iteration is None
                                        else bool(reshuffle_each_iteration)))

    def prefetch(self, buffer_size):
        return Dataset(self._ds.prefetch(int(buffer_size)))

    def repeat(self, count=None):
        return Dataset(self._ds.repeat(-1 if count is None else int(count)))

    def take(self, count):
        return Dataset(self._ds.take(int(count)))

    def skip(self, count):
        return Dataset(self._ds.skip(int(count)))

    def shard(self, num_shards, index):
        return Dataset(self._ds.shard(int(num_shards), int(index)))

    def concatenate(self, dataset):
        return Dataset(self._ds.concatenate(_ds(dataset)))

    def enumerate(self, start=0):
        return Dataset(self._ds.enumerate(int(start)))

    def cache(self, filename=""):
        return Dataset(self._ds.cache(os.fspath(filename)))

    def scan(self, initial_state, scan_func):
        return Dataset(self._ds.scan(initial_state, _function(scan_func, "map")))

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """Windows with every component stacked ([window, ...]), see docs/api.md."""
        return Dataset(self._ds.window(int(size), -1 if shift is None else int(shift),
                                       int(stride), bool(drop_remainder)))

    def group_by_window(self, key_func, reduce_func, window_size):
        return Dataset(self._ds.group_by_window(_function(key_func, "map"),
                                                _function(reduce_func, "dataset"),
                                                int(window_size)))

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, drop_remainder=False):
        return Dataset(self._ds.bucket_by_sequence_length(
            _function(element_length_func, "map"), list(bucket_boundaries),
            list(bucket_batch_sizes), padded_shapes, padding_values,
            bool(pad_to_bucket_boundary), bool(drop_remainder)))

    def ignore_errors(self):
        return Dataset(self._ds.ignore_errors())

    def reduce(self, initial_state, reduce_func):
        return self._ds.reduce(initial_state, _function(reduce_func, "map"))

    def apply(self, transformation_func):
        return transformation_func(self)

    # ---- options and introspection ----
    def with_options(self, options):
        return Dataset(self._ds.with_options(options._to_dict()))

    def options(self):
        return Options._from_dict(self._ds.options())

    def cardinality(self):
        return self._ds.cardinality()

    @property
    def element_spec(self):
        return _structure(self._ds.element_spec)

    def __repr__(self):
        return "<sluice Dataset element_spec=%s>" % self._ds.element_spec_string

    # ---- iteration ----
    def __iter__(self):
        """A checkpointable iterator yielding numpy values (see as_numpy_iterator)."""
        return self._ds.make_iterator(0)

    def as_numpy_iterator(self):
        return self._ds.make_iterator(0)

    def make_iterator(self):
        """Same as iter(ds): an Iterator with save()/restore(), cancel(), stats()."""
        return self._ds.make_iterator(0)

    def _tensor_iterator(self):
        # Yields sluice.Tensor objects (DLPack exporters) instead of numpy arrays.
        return self._ds.make_iterator(1)

    def __len__(self):
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True


def _record_dataset(kind, filenames, compression_type, num_parallel_reads):
    if isinstance(filenames, Dataset):
        fn = _sluice.Dataset.file_source_function(kind, compression_type)
        n = num_parallel_reads or 1
        if n == 1:
            return Dataset(filenames._ds.flat_map(fn))
        return Dataset(filenames._ds.interleave(fn, int(n if n > 0 else os.cpu_count()), 1,
                                                int(n), None))
    files = _files(filenames)
    if num_parallel_reads and num_parallel_reads != 1 and len(files) > 1:
        n = int(num_parallel_reads)
        fn = _sluice.Dataset.file_source_function(kind, compression_type)
        src = _sluice.Dataset.from_tensor_slices(files)
        return Dataset(src.interleave(fn, n if n > 0 else (os.cpu_count() or 1), 1, n, True))
    if kind == "TextLine":
        return Dataset(_sluice.Dataset.text_line(files, compression_type))
    return Dataset(_sluice.Dataset.tfrecord(files, compression_type))


def TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    """Records of TFRecord files (bytes); CRCs are verified. num_parallel_reads > 1 reads
    files concurrently (a deterministic parallel interleave, as in tf.data)."""
    return _record_dataset("TFRecord", filenames, compression_type or None, num_parallel_reads)


def TextLineDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    """Lines of text files without line endings (bytes)."""
    return _record_dataset("TextLine", filenames, compression_type or None, num_parallel_reads)


def FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None, footer_bytes=None,
                             buffer_size=None, compression_type=None, num_parallel_reads=None):
    return Dataset(_sluice.Dataset.fixed_length_record(
        _files(filenames), int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0),
        compression_type or None))


__all__ = ["Dataset", "Options", "AutotuneOptions", "OptimizationOptions", "ThreadingOptions",
           "FileOptions",
           "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "Iterator",
           "TensorSpec", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
