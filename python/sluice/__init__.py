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
from . import nest
from . import data
from . import service as _service
data.service = _service  # sluice.data.service, as tf.data.experimental.service
from . import image
from . import text
from . import io
from . import plumber
from . import profiler

AUTOTUNE = data.AUTOTUNE

# dtype names as tf spells them (tf.int32, tf.string, ...), for tf.data code that passes
# output_types or TensorSpec dtypes: numpy types, and "string" for text.
from numpy import (int8, int16, int32, int64, uint8, float16, float32,  # noqa: E402
                   float64)
from numpy import bool_ as bool  # noqa: E402,A001
string = "string"

__all__ = ["data", "nest", "plumber", "profiler", "image", "text", "io", "attr", "kernel", "kernel_names", "cast", "reshape", "expand_dims",
           "compare", "Tensor",
           "Function", "Error", "AUTOTUNE"] + errors.__all__
__version__ = "0.1.0"
