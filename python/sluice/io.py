"""Record parsing and file kernels, with tf.io's feature descriptions.

    features = {"image/encoded": sluice.io.FixedLenFeature([], "string"),
                "image/class/label": sluice.io.FixedLenFeature([], "int64", default_value=0)}
    ds = sluice.data.TFRecordDataset(files).map(sluice.io.parse_example(features))
    # elements: {"image/encoded": b"...", "image/class/label": 3}
"""

import collections

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



from .kernels import cast  # noqa: E402,F401  (tf.cast lives at the top in tf)
