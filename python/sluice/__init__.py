"""sluice: a C++ input-pipeline engine with tf.data's API.

    import sluice
    ds = (sluice.data.Dataset.range(1000)
          .shuffle(100, seed=7)
          .map(lambda x: x * x)            # a Python function (holds the GIL)
          .batch(32)
          .prefetch(sluice.data.AUTOTUNE))
    for batch in ds:                        # numpy arrays over sluice's memory, no copy
        ...

Kernels (``sluice.image.decode_jpeg()``, ``sluice.text.tokenize(...)``,
``sluice.io.parse_example(...)``, or any registered one via ``sluice.kernel(name, **attrs)``)
run in C++ without the GIL and in parallel; prefer them to Python functions on hot paths.
``sluice.io.TFRecordWriter`` and ``sluice.io.serialize_example`` write TFRecord files of
tf.train.Example records, as tf.io.TFRecordWriter and tf.train.Example do.
torch tensors via DLPack: ``sluice.torch`` (imported on demand: ``import sluice.torch``).
See docs/python.md.
"""

from . import _sluice
from . import errors
from .errors import (Error, CancelledError, UnknownError, InvalidArgumentError,
                     DeadlineExceededError, NotFoundError, AlreadyExistsError,
                     PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
                     AbortedError, OutOfRangeError, UnimplementedError, InternalError,
                     UnavailableError, DataLossError, UnauthenticatedError)
from . import attr
from ._sluice import Tensor, Function
from .kernels import kernel, kernel_names, cast, reshape, expand_dims, compare
from . import data
from . import image
from . import text
from . import io
from . import profiler

AUTOTUNE = data.AUTOTUNE

__all__ = ["data", "image", "text", "io", "profiler", "attr", "kernel", "kernel_names", "cast", "reshape", "expand_dims",
           "compare", "Tensor",
           "Function", "Error", "AUTOTUNE"] + errors.__all__
__version__ = "0.1.0"
