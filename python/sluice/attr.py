"""Explicitly typed kernel attributes, for when a plain Python value is ambiguous.

Plain values map as: bool -> bool, int -> int, float -> float, str/bytes -> string,
numpy dtype or type (np.float32) -> dtype, list of ints -> list(int), list with a float ->
list(float), list of str -> list(string), numpy array -> tensor. Use these for the rest:
``sluice.kernel("normalize", mean=attr.floats([0, 0, 0]))`` (ints where floats are meant),
``attr.shape([None, 3])``, ``attr.shapes(...)``, ``attr.dtypes(...)``, ``attr.tensors(...)``.
"""


class TypedAttr:
    __slots__ = ("_sluice_attr",)

    def __init__(self, kind, value):
        self._sluice_attr = (kind, value)

    def __repr__(self):
        return "attr.%s(%r)" % self._sluice_attr


def int_(v): return TypedAttr("int", int(v))
def float_(v): return TypedAttr("float", float(v))
def ints(v): return TypedAttr("ints", [int(x) for x in v])
def floats(v): return TypedAttr("floats", [float(x) for x in v])
def strings(v): return TypedAttr("strings", [x if isinstance(x, (bytes, str)) else str(x) for x in v])
def dtype(v): return TypedAttr("dtype", v)
def dtypes(v): return TypedAttr("dtypes", list(v))
def shape(v): return TypedAttr("shape", None if v is None else list(v))
def shapes(v): return TypedAttr("shapes", [None if s is None else list(s) for s in v])
def tensor(v): return TypedAttr("tensor", v)
def tensors(v): return TypedAttr("tensors", list(v))
