"""sluice.nest: the nested structures of tf.data elements (tf.data's own ``nest`` rules).

A structure is a tuple, a named tuple or a dict (any ``collections.abc.Mapping``) of
structures or leaves. Everything else is a leaf: numpy arrays, scalars, bytes, ``None``
and, as in ``tensorflow/python/data/util/nest.py``, **lists** (a list is one tensor, except
the top-level list a dataset function returns, which tf.data turns into a tuple).

``flatten`` lists the leaves depth first, dict entries in sorted key order (so two dicts
with the same keys flatten alike whatever their insertion order); ``pack_sequence_as``
rebuilds a structure from such a list, dicts keeping the key order of the structure given.
sluice elements are flat tuples of tensors: the Python layer flattens elements on the way
in and packs them on the way out with these functions.
"""

import collections.abc


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x):
    """True for tuples (named ones included) and mappings; lists are leaves."""
    return isinstance(x, (tuple, collections.abc.Mapping))


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError as e:
        raise TypeError("nest only supports dicts with sortable keys, got %r" %
                        (list(d),)) from e


def _children(x):
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    return list(x)


def _sequence_like(instance, values):
    if isinstance(instance, collections.abc.Mapping):
        by_key = dict(zip(_sorted_keys(instance), values))
        items = [(k, by_key[k]) for k in instance]
        try:
            return type(instance)(items)
        except TypeError:
            return dict(items)
    if _is_namedtuple(instance):
        return type(instance)(*values)
    return tuple(values)


def flatten(structure):
    """The leaves of `structure`, depth first (a leaf gives a list of itself)."""
    if not is_nested(structure):
        return [structure]
    out = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def flatten_with_paths(structure, prefix=()):
    """(path, leaf) pairs in flatten order; a path is a tuple of keys and indices."""
    if not is_nested(structure):
        return [(prefix, structure)]
    if isinstance(structure, collections.abc.Mapping):
        keys = _sorted_keys(structure)
    else:
        keys = range(len(structure))
    out = []
    for k in keys:
        out.extend(flatten_with_paths(structure[k], prefix + (k,)))
    return out


def _pack(structure, flat, i):
    if not is_nested(structure):
        return flat[i], i + 1
    values = []
    for c in _children(structure):
        v, i = _pack(c, flat, i)
        values.append(v)
    return _sequence_like(structure, values), i


def pack_sequence_as(structure, flat_sequence):
    """`structure` with its leaves replaced, in order, by `flat_sequence`."""
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if len(flat) != n:
        raise ValueError("Structure had %d leaves, but flat_sequence had %d items: %r" %
                         (n, len(flat), structure))
    return _pack(structure, flat, 0)[0]


def _kind(x):
    if isinstance(x, collections.abc.Mapping):
        return "dict"
    if _is_namedtuple(x):
        return type(x)
    if isinstance(x, tuple):
        return "tuple"
    return None


def same_structure(a, b, check_types=True):
    """True when `a` and `b` nest alike (same dict keys, tuple lengths and, with
    check_types, the same named-tuple classes)."""
    ka, kb = _kind(a), _kind(b)
    if ka is None or kb is None:
        return ka is None and kb is None
    if check_types and ka != kb:
        return False
    if (ka == "dict") != (kb == "dict"):
        return False
    if ka == "dict" and set(a) != set(b):
        return False
    if len(a) != len(b):
        return False
    return all(same_structure(x, y, check_types) for x, y in zip(_children(a), _children(b)))


def assert_same_structure(a, b, check_types=True):
    """Raises ValueError (different nesting) or TypeError (different sequence types), as
    tf.nest does."""
    if same_structure(a, b, check_types):
        return
    if same_structure(a, b, check_types=False):
        raise TypeError("The two structures don't have the same sequence type: %r and %r" %
                        (a, b))
    raise ValueError("The two structures don't have the same nested structure: %r and %r" %
                     (a, b))


def map_structure(func, *structures):
    """`func` applied to the leaves of `structures` (which must nest alike), packed as the
    first one."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*flats)])


__all__ = ["is_nested", "flatten", "flatten_with_paths", "pack_sequence_as",
           "same_structure", "assert_same_structure", "map_structure"]
