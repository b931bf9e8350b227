"""tf.data conformance: nested element structures, by transformation.

Each case re-expresses a behaviour of tf.data against sluice.data; the comment above it
names the tf.data kernel test (tensorflow/python/data/kernel_tests/<file>::<test>) or the
tf.data API documentation it takes its expected values from.
"""
import collections

import numpy as np
import pytest

import sluice
from sluice import nest
from sluice.data import Dataset, DatasetSpec, NoneTensorSpec, TensorSpec

Point = collections.namedtuple("Point", ["x", "y"])


def _eq(a, b):
    """Structural equality with numpy leaves."""
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_eq(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return (type(a) is type(b) and len(a) == len(b) and
                all(_eq(x, y) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(np.asarray(a), np.asarray(b))


def _produces(ds, expected):
    got = list(ds)
    assert len(got) == len(expected), got
    for g, e in zip(got, expected):
        assert _eq(g, e), (g, e)


# ---- sluice.nest (tensorflow/python/data/util/nest.py: lists are atoms) ----

def test_nest_flatten_sorts_dict_keys_and_keeps_lists_whole():
    s = {"b": (1, [2, 3]), "a": Point(4, None)}
    assert nest.flatten(s) == [4, None, 1, [2, 3]]
    packed = nest.pack_sequence_as(s, [10, 11, 12, 13])
    assert list(packed) == ["b", "a"] and packed["a"] == Point(10, 11)
    with pytest.raises(ValueError):
        nest.assert_same_structure((1, 2), (1, (2, 3)))
    with pytest.raises(TypeError):
        nest.assert_same_structure(Point(1, 2), (1, 2))


# ---- zip ----

# zip_test.py::testNested: zip((a, (b, c))) yields nested tuples; shapes per component.
def test_zip_nested_tuple():
    comps = [np.tile(np.array([[1], [2], [3], [4]]), 20),
             np.tile(np.array([[12], [13], [14], [15]]), 22),
             np.array([37.0, 38.0, 39.0, 40.0])]
    ds = [Dataset.from_tensor_slices(c) for c in comps]
    z = Dataset.zip((ds[0], (ds[1], ds[2])))
    spec = z.element_spec
    assert spec[0].shape == (20,) and spec[1][0].shape == (22,) and spec[1][1].shape == ()
    _produces(z, [(comps[0][i], (comps[1][i], comps[2][i])) for i in range(4)])


# zip_test.py::testNamedTuple: a named tuple of datasets yields named tuples.
def test_zip_namedtuple():
    z = Dataset.zip(Point(x=Dataset.range(3), y=Dataset.range(3, 6)))
    _produces(z, [Point(0, 3), Point(1, 4), Point(2, 5)])
    assert isinstance(z.element_spec, Point)


# Dataset.zip docstring: "datasets: A (nested) structure of datasets" -- a dict of them.
def test_zip_dict():
    z = Dataset.zip({"a": Dataset.range(2), "b": Dataset.range(5, 7)})
    _produces(z, [{"a": 0, "b": 5}, {"a": 1, "b": 6}])
    assert set(z.element_spec) == {"a", "b"}


# ---- enumerate ----

# enumerate_test.py::testEnumerate: enumerate(20) of a 3-tuple yields (i, (a, b, c)).
def test_enumerate_keeps_the_element_whole():
    ds = Dataset.from_tensor_slices((np.array([b"a", b"b"], dtype=object), np.array([1, 2]),
                                     np.array([37.0, 38.0]))).enumerate(20)
    spec = ds.element_spec
    assert spec[0] == TensorSpec((), "int64") and len(spec[1]) == 3
    _produces(ds, [(20, (b"a", 1, 37.0)), (21, (b"b", 2, 38.0))])


# ---- from_tensor_slices / from_tensors ----

# from_tensor_slices_test.py (nested dicts and tuples slice component-wise).
def test_from_tensor_slices_nested():
    ds = Dataset.from_tensor_slices({"a": np.arange(3), "b": (np.arange(3) * 2, np.ones(3))})
    _produces(ds, [{"a": i, "b": (2 * i, 1.0)} for i in range(3)])
    assert ds.element_spec["b"][1] == TensorSpec((), "float64")


# from_tensors_test.py: None components are NoneTensorSpec and come out as None.
def test_from_tensors_with_none():
    ds = Dataset.from_tensors((np.array([1, 2]), None))
    assert isinstance(ds.element_spec[1], NoneTensorSpec)
    _produces(ds, [(np.array([1, 2]), None)])


# ---- map ----

# map_test.py::testMapNamedtuple: a named tuple in, a named tuple out.
def test_map_namedtuple_in_and_out():
    ds = Dataset.range(3).map(lambda x: Point(x, x * 2))
    assert isinstance(ds.element_spec, Point)
    ds = ds.map(lambda p: Point(p.y, p.x))
    _produces(ds, [Point(2 * i, i) for i in range(3)])


# tf.data map docs: a function returning a list returns a tuple (lists are converted).
def test_map_list_result_is_a_tuple():
    ds = Dataset.range(3).map(lambda x: [x, x + 10])
    assert isinstance(ds.element_spec, tuple) and len(ds.element_spec) == 2
    _produces(ds, [(i, i + 10) for i in range(3)])


# map_test.py (structure rules): a tuple element is unpacked into arguments, a dict is one
# argument, nesting below the top level is kept.
def test_map_argument_rules_with_nesting():
    ds = Dataset.zip((Dataset.range(3), {"k": Dataset.range(3, 6)}))
    out = ds.map(lambda a, d: {"sum": a + d["k"], "pair": (a, None)})
    assert isinstance(out.element_spec["pair"][1], NoneTensorSpec)
    _produces(out, [{"sum": 2 * i + 3, "pair": (i, None)} for i in range(3)])


# map_test.py: the element_spec of a map is known at construction (traced in tf.data).
def test_map_element_spec_is_inferred():
    ds = Dataset.range(5).map(lambda x: np.full([int(x) + 1], x, dtype=np.int32))
    assert ds.element_spec == TensorSpec((None,), "int32")
    ds = Dataset.from_tensor_slices(np.zeros((4, 3))).map(lambda x: {"v": x * 2, "n": x.sum()})
    assert ds.element_spec == {"v": TensorSpec((3,), "float64"),
                               "n": TensorSpec((), "float64")}


def test_map_output_signature_overrides_inference():
    calls = []

    def f(x):
        calls.append(x)
        return x, x

    sig = (TensorSpec((), "int64"), TensorSpec((), "int64"))
    ds = Dataset.range(3).map(f, output_signature=sig)
    assert calls == [] and ds.element_spec == sig
    _produces(ds, [(0, 0), (1, 1), (2, 2)])


def test_map_result_not_matching_the_spec_is_an_error_naming_the_function():
    def f(x):
        return (x, x) if x < 1 else x

    ds = Dataset.range(3).map(f, output_signature=(TensorSpec((), "int64"),) * 2)
    with pytest.raises(sluice.InvalidArgumentError, match="f"):
        list(ds)


# ---- filter ----

# filter_test.py (testFilterDict-like): the predicate sees the nested element.
def test_filter_nested():
    ds = Dataset.zip((Dataset.range(6), (Dataset.range(6), Dataset.range(10, 16))))
    ds = ds.filter(lambda a, bc: bc[1] % 2 == 0)
    _produces(ds, [(i, (i, i + 10)) for i in (0, 2, 4)])


# ---- flat_map / interleave ----

# flat_map_test.py: flat_map of nested elements returns datasets of nested elements.
def test_flat_map_nested():
    ds = Dataset.range(3).flat_map(
        lambda x: Dataset.zip((Dataset.range(x), {"c": Dataset.range(x)})))
    assert isinstance(ds.element_spec, tuple) and "c" in ds.element_spec[1]
    _produces(ds, [(0, {"c": 0}), (0, {"c": 0}), (1, {"c": 1})])


# interleave_test.py: interleave keeps the structure of the inner datasets.
def test_interleave_nested():
    ds = Dataset.range(2).interleave(
        lambda x: Dataset.from_tensor_slices({"v": np.array([x, x]), "p": (np.array([1, 2]),)}),
        cycle_length=2)
    _produces(ds, [{"v": 0, "p": (1,)}, {"v": 1, "p": (1,)},
                   {"v": 0, "p": (2,)}, {"v": 1, "p": (2,)}])


# ---- scan / reduce ----

# scan_test.py::testFibonacci: a list state is one tensor; (new_state, output) pairs.
def test_scan_fibonacci_list_state():
    ds = Dataset.from_tensors(1).repeat().scan([0, 1], lambda a, _: ([a[1], a[0] + a[1]], a[1]))
    assert [int(v) for v in ds.take(6)] == [1, 1, 2, 3, 5, 8]


# scan_test.py::testChangingStateShape-like: a tuple state is passed whole, not unpacked.
def test_scan_tuple_state_and_dict_output():
    ds = Dataset.range(4).scan((np.int64(0), np.int64(0)),
                               lambda s, x: ((s[0] + x, s[1] + 1), {"sum": s[0] + x, "n": s[1]}))
    _produces(ds, [{"sum": 0, "n": 0}, {"sum": 1, "n": 1}, {"sum": 3, "n": 2},
                   {"sum": 6, "n": 3}])


# scan_test.py::testIncorrectReturnType: scan_func must return (new_state, output).
def test_scan_wrong_return_is_an_error():
    with pytest.raises(sluice.Error, match="new_state, output"):
        list(Dataset.range(3).scan(np.int64(0), lambda s, x: s,
                                   output_signature=TensorSpec((), "int64")))


# reduce_test.py (testNested-like): a nested state is passed whole and returned nested.
def test_reduce_nested_state():
    out = Dataset.range(5).reduce({"sum": np.int64(0), "prod": (np.int64(1),)},
                                  lambda s, x: {"sum": s["sum"] + x,
                                                "prod": (s["prod"][0] * (x + 1),)})
    assert _eq(out, {"sum": 10, "prod": (120,)})


# reduce_test.py: the element is one argument even when it is a tuple.
def test_reduce_tuple_element_is_one_argument():
    ds = Dataset.zip((Dataset.range(4), Dataset.range(4)))
    assert Dataset.range(1).reduce(np.int64(0), lambda s, x: s + x) == 0
    assert ds.reduce(np.int64(0), lambda s, e: s + e[0] * e[1]) == 14


# ---- window ----

# window_test.py: window yields datasets (one per component); flat_map(batch) stacks them.
def test_window_yields_datasets():
    ds = Dataset.range(7).window(3, 2)
    assert isinstance(ds.element_spec, DatasetSpec)
    got = [list(w) for w in ds]
    assert got == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    stacked = ds.flat_map(lambda w: w.batch(3))
    _produces(stacked, [np.array([0, 1, 2]), np.array([2, 3, 4]), np.array([4, 5, 6]),
                        np.array([6])])


# The tf.data behaviour issue #17 reports: a failed element counts as a position, so the
# window holding it fails and the next windows keep their boundaries.
def test_window_failed_element_keeps_its_position():
    ds = Dataset.range(8).map(lambda x: x if x != 2 else 1 // 0).window(3)
    it = iter(ds.flat_map(lambda w: w.batch(3)))
    with pytest.raises(sluice.InvalidArgumentError, match="ZeroDivisionError"):
        next(it)
    assert [b.tolist() for b in it] == [[3, 4, 5], [6, 7]]


# window_test.py (nested elements): a tuple element gives a tuple of datasets.
def test_window_of_tuples():
    ds = Dataset.zip((Dataset.range(3), Dataset.range(10, 13))).window(2)
    first = next(iter(ds))
    assert isinstance(first, tuple) and all(isinstance(d, Dataset) for d in first)
    batched = ds.flat_map(lambda a, b: Dataset.zip((a.batch(2), b.batch(2))))
    _produces(batched, [(np.array([0, 1]), np.array([10, 11])), (np.array([2]), np.array([12]))])


# ---- group_by_window ----

# group_by_window_test.py: reduce_func(key, window) gets the window as a dataset.
def test_group_by_window_reduce_gets_key_and_window():
    ds = Dataset.range(10).group_by_window(lambda x: x % 2, lambda k, w: w.batch(5), 5)
    assert ds.element_spec == TensorSpec((None,), "int64")
    _produces(ds, [np.array([0, 2, 4, 6, 8]), np.array([1, 3, 5, 7, 9])])


def test_group_by_window_nested_elements():
    ds = Dataset.zip((Dataset.range(6), {"v": Dataset.range(6)}))
    g = ds.group_by_window(lambda i, d: i % 2,
                           lambda k, w: w.map(lambda i, d: (k, d["v"])).batch(3), 3)
    _produces(g, [(np.array([0, 0, 0]), np.array([0, 2, 4])),
                  (np.array([1, 1, 1]), np.array([1, 3, 5]))])


# ---- padded_batch / bucket_by_sequence_length ----

# padded_batch docstring: padded_shapes and padding_values follow the element's structure.
def test_padded_batch_nested_shapes_and_values():
    ds = Dataset.range(1, 4).map(lambda x: {"a": np.full([x], x), "b": (np.full([x], 1.0),)})
    b = ds.padded_batch(3, padded_shapes={"a": [4], "b": ([None],)},
                        padding_values={"a": -1, "b": (0.5,)})
    (out,) = list(b)
    np.testing.assert_array_equal(out["a"], [[1, -1, -1, -1], [2, 2, -1, -1], [3, 3, 3, -1]])
    np.testing.assert_array_equal(out["b"][0], [[1, .5, .5], [1, 1, .5], [1, 1, 1]])


# padded_batch docstring examples: padded_shapes=5 and an int padding value on int32.
def test_padded_batch_docstring_examples():
    a = Dataset.range(1, 5, output_type=np.int32).map(lambda x: np.full([x], x))
    assert a.element_spec == TensorSpec((None,), "int32")
    got = list(a.padded_batch(2, padded_shapes=5, padding_values=-1))
    np.testing.assert_array_equal(got[0], [[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]])
    assert got[0].dtype == np.int32


# bucket_by_sequence_length_test.py (pad_to_bucket_boundary after a Python map): the map's
# inferred spec lets the op pad to boundary - 1 without padded_shapes.
def test_bucket_by_sequence_length_after_python_map():
    ds = Dataset.range(1, 5).map(lambda x: np.full([x], x))
    b = ds.bucket_by_sequence_length(lambda x: len(x), [3, 5], [2, 2, 2],
                                     pad_to_bucket_boundary=True)
    got = list(b)
    np.testing.assert_array_equal(got[0], [[1, 0], [2, 2]])
    np.testing.assert_array_equal(got[1], [[3, 3, 3, 0], [4, 4, 4, 4]])


# ---- batch / unbatch / checkpoints keep the structure ----

def test_batch_unbatch_and_restore_nested():
    ds = Dataset.range(6).map(lambda x: Point(x, {"sq": x * x}))
    b = ds.batch(4)
    assert b.element_spec.y["sq"].shape == (None,)
    it = iter(b.unbatch())
    assert next(it) == Point(0, {"sq": 0})
    ckpt = it.save()
    it2 = iter(b.unbatch())
    it2.restore(ckpt)
    assert [p.x for p in it2] == [1, 2, 3, 4, 5]
