"""Record parsing and file kernels, with tf.io's feature descriptions, and writing
TFRecord files of tf.train.Example records (tf.io.TFRecordWriter).

    with sluice.io.TFRecordWriter("train.tfrecord.gz", "GZIP") as w:
        w.write(sluice.io.serialize_example({"image/encoded": jpeg, "image/class/label": 3}))

    features = {"image/encoded": sluice.io.FixedLenFeature([], "string"),
                "image/class/label": sluice.io.FixedLenFeature([], "int64", default_value=0)}
    ds = (sluice.data.TFRecordDataset(files, compression_type="GZIP")
          .map(sluice.io.parse_example(features)))
    # elements: {"image/encoded": b"...", "image/class/label": 3}
"""

import collections
import os

from . import _sluice
from . import attr
from .kernels import kernel


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, list(shape), dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A variable-length feature: a dense 1-D tensor (sluice has no sparse tensors)."""


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing"])):
    def __new__(cls, shape, dtype, allow_missing=False):
        return super().__new__(cls, list(shape), dtype, allow_missing)


def _dtype_name(d):
    import numpy as np
    if isinstance(d, str):
        return d
    return np.dtype(d).name


def _checked_array(value, dtype):
    """np.asarray(value, dtype), but an integer the dtype cannot hold is an error naming
    the value and the dtype (numpy 1.x would silently wrap 300 to 44 for uint8)."""
    import numpy as np
    target = np.dtype(dtype)
    if target.kind in "iu":
        given = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
        if given.dtype.kind in "iuO" and given.size:
            info = np.iinfo(target)
            for v in given.ravel().tolist():
                if isinstance(v, int) and not info.min <= v <= info.max:
                    raise ValueError("sluice: value %d is out of range for dtype %s" %
                                     (v, target.name))
    return np.asarray(value, dtype=target)


def _feature_attrs(features, prefix=""):
    import numpy as np
    keys, kinds, dtypes, shapes, defaults = [], [], [], [], []
    for key, f in features.items():
        keys.append(key)
        dtypes.append(_dtype_name(f.dtype))
        if isinstance(f, VarLenFeature):
            kinds.append("var")
            shapes.append([])
            defaults.append(None)
        else:
            kinds.append("fixed")
            shapes.append(f.shape)
            if f.default_value is None:
                defaults.append(None)
            elif dtypes[-1] == "string":
                defaults.append(np.array(f.default_value, dtype=object).reshape(f.shape))
            else:
                defaults.append(_checked_array(f.default_value, dtypes[-1]).reshape(f.shape))
    out = {prefix + "keys": attr.strings(keys), prefix + "kinds": attr.strings(kinds),
           prefix + "dtypes": attr.dtypes(dtypes), prefix + "shapes": attr.shapes(shapes)}
    if any(d is not None for d in defaults):
        out[prefix + "defaults"] = attr.tensors(defaults)
    return out


def parse_example(features, component=None):
    """tf.io.parse_example: a serialized tf.train.Example (string scalar, or a vector for a
    batch) -> one named component per feature."""
    return kernel("parse_example", component=component, **_feature_attrs(features))


def parse_sequence_example(context_features=None, sequence_features=None, component=None):
    attrs = {}
    if context_features:
        attrs.update(_feature_attrs(context_features, "context_"))
    if sequence_features:
        keys = list(sequence_features)
        attrs["sequence_keys"] = attr.strings(keys)
        attrs["sequence_dtypes"] = attr.dtypes([_dtype_name(f.dtype) for f in sequence_features.values()])
        attrs["sequence_shapes"] = attr.shapes([f.shape for f in sequence_features.values()])
        allow = [k for k, f in sequence_features.items() if f.allow_missing]
        if allow:
            attrs["sequence_allow_missing"] = attr.strings(allow)
    return kernel("parse_sequence_example", component=component, **attrs)


def read_file(component=None):
    """The contents of the file named by a string component (tf.io.read_file)."""
    return kernel("read_file", component=component)



class TFRecordOptions:
    """tf.io.TFRecordOptions: how a TFRecord file is compressed. compression_type is
    "" or None (none), "GZIP" or "ZLIB" (what TFRecordDataset's compression_type takes)."""

    def __init__(self, compression_type=None):
        self.compression_type = compression_type

    @classmethod
    def get_compression_type_string(cls, options):
        """The compression name of `options` (a TFRecordOptions, a string or None)."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type or ""
        if isinstance(options, str):
            return options
        raise TypeError("sluice: options must be a TFRecordOptions, a string or None, got %r"
                        % (options,))

    def __repr__(self):
        return "TFRecordOptions(compression_type=%r)" % (self.compression_type,)


class TFRecordWriter:
    """tf.io.TFRecordWriter: writes records (bytes) to a TFRecord file that
    sluice.data.TFRecordDataset, and TensorFlow, read back.

    `options`: "" / None, "GZIP", "ZLIB" or a TFRecordOptions. The file is created (or
    truncated) at once; errors raise sluice.Error subclasses naming the file (e.g.
    NotFoundError for a missing directory). write/flush after close raise
    FailedPreconditionError; close is idempotent. A context manager: the file is closed
    on leaving the block. A writer that is garbage-collected unclosed is closed then (an
    error at that point is logged, not raised).
    """

    def __init__(self, path, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        self._writer = _sluice._TFRecordWriter(os.fspath(path), compression)

    def write(self, record):
        """Appends one record: bytes (or bytes-like, or str, written as UTF-8)."""
        if isinstance(record, str):
            record = record.encode("utf-8")
        elif not isinstance(record, bytes):
            record = bytes(memoryview(record))
        self._writer.write(record)

    def flush(self):
        """Makes every record written so far visible to readers of the file."""
        self._writer.flush()

    def close(self):
        """Finishes the file (the compressed stream's end) and closes it."""
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __repr__(self):
        return "sluice.io.TFRecordWriter(%r)" % (self._writer.path,)


def build_tfrecord_index(filenames):
    """Writes the offset index beside each uncompressed TFRecord file (``FILE.index``, as
    ``sluice index FILE...`` does) and returns their record counts. With an index beside
    every file, ``TFRecordDataset(files)`` knows its length and serves rows by index, so
    ``global_shuffle()`` and ``shuffle(len(ds))`` (an index shuffle) work over it. Rebuild
    after changing a file: a stale index is ignored with a warning."""
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    return [_sluice._write_tfrecord_index(os.fspath(f)) for f in filenames]


def _example_feature(key, value):
    """(key, kind, values) for _sluice._serialize_example."""
    import numpy as np
    if isinstance(value, (bytes, str, int, float, np.generic)):
        value = [value]
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None:
        value = list(value)
        if not value:
            raise ValueError("sluice: feature %r: an empty list has no type; pass "
                             "np.array([], dtype=np.int64 / np.float32 / object)" % (key,))
        if all(isinstance(v, (bytes, str, np.bytes_, np.str_)) for v in value):
            return key, "bytes", [v.encode("utf-8") if isinstance(v, str) else bytes(v)
                                  for v in value]
        if any(isinstance(v, (bytes, str)) for v in value):
            raise TypeError("sluice: feature %r mixes bytes/str with numbers" % (key,))
        arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "biu":
        if kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise ValueError("sluice: feature %r: value %d does not fit int64"
                             % (key, int(arr.max())))
        return key, "int64", arr.astype(np.int64).ravel().tolist()
    if kind == "f":
        return key, "float", arr.astype(np.float32).ravel().tolist()
    if kind in "SUO":
        out = []
        for v in arr.ravel().tolist():
            if isinstance(v, str):
                v = v.encode("utf-8")
            if not isinstance(v, bytes):
                raise TypeError("sluice: feature %r: expected bytes or str, got %r" % (key, v))
            out.append(v)
        return key, "bytes", out
    raise TypeError("sluice: feature %r: values of dtype %s cannot be stored in an Example "
                    "(int64, float or bytes)" % (key, arr.dtype))


def serialize_example(features):
    """A serialized tf.train.Example (bytes), as tf.train.Example(...).SerializeToString()
    gives, from a dict of feature name -> value(s):

        sluice.io.serialize_example({"x": [1, 2, 3], "label": 7, "w": 0.5, "img": jpeg})

    Ints and bools (and numpy integer arrays) become an int64_list, floats a float_list
    (stored as float32), bytes and str (UTF-8) a bytes_list; a scalar is a list of one and
    an array is flattened. An empty list needs a typed numpy array. parse_example reads
    the result back; the bytes are deterministic (features in key order).
    """
    return _sluice._serialize_example([_example_feature(str(k), v) for k, v in features.items()])


from .kernels import cast  # noqa: E402,F401  (tf.cast lives at the top in tf)
