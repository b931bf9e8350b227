"""Registered kernels as map/filter functions.

A kernel is a C++ function with a name and typed attributes (docs/kernels.md): it runs
without the GIL, in parallel, is serializable (it can travel to service workers) and is
visible to the optimizer (fusion). ``kernel(name, **attrs)`` makes any registered kernel;
``sluice.image``, ``sluice.text`` and ``sluice.io`` add named wrappers with typed
arguments. A kernel object can also be called directly on values:
``sluice.image.decode_jpeg()(jpeg_bytes)`` returns a numpy array.
"""

from . import _sluice


def kernel(name, **attrs):
    """The registered kernel `name` with `attrs` (an unknown name or a bad attribute raises
    NotFoundError / InvalidArgumentError naming it)."""
    return _sluice.kernel(name, {k: v for k, v in attrs.items() if v is not None})


def kernel_names():
    """Names of every registered kernel."""
    return list(_sluice.kernel_names())


def _pair(v):
    if v is None:
        return None
    if isinstance(v, int):
        return [v, v]
    return [int(x) for x in v]


def _floats(v):
    if v is None:
        return None
    if isinstance(v, (int, float)):
        v = [v]
    from .attr import floats
    return floats(v)


def cast(dtype, components=None):
    """Numeric cast of the given components (default: all) to `dtype`."""
    from . import attr
    from .io import _dtype_name
    return kernel("cast", dtype=attr.dtype(_dtype_name(dtype)),
                  components=None if components is None else attr.ints(components))


def reshape(shape, component=None):
    """The same values in `shape` (one dim may be -1); zero-copy."""
    from . import attr
    return kernel("reshape", shape=attr.ints(shape), component=component)


def expand_dims(axis, component=None):
    """Inserts a dimension of size 1 at `axis` (-1 appends); zero-copy."""
    return kernel("expand_dims", axis=int(axis), component=component)


def compare(op, value, component=None):
    """A predicate on a numeric scalar: x <op> value, op in less, less_equal, equal,
    not_equal, greater_equal, greater."""
    return kernel("compare", op=op, value=value, component=component)
