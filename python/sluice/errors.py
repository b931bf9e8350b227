"""Exceptions raised by sluice. One class per status code, all under ``sluice.Error``.

Where a Python built-in means the same thing the class derives from it too, so
``except ValueError`` catches ``InvalidArgumentError`` and ``except FileNotFoundError``
catches ``NotFoundError``. The message names the operator and the place (file, offset,
component) that failed, e.g. ``Map[0]: decode_jpeg: component 0: corrupt JPEG ...``.
``code`` holds the status code name ("DataLoss", ...). An error raised by a Python
function inside the pipeline reaches the consumer as an ``InvalidArgumentError`` (or the
sluice error it raised) whose ``__cause__`` is the original exception.
"""

from . import _sluice


class Error(Exception):
    """Base class of every sluice error."""
    code = "Unknown"


class CancelledError(Error):
    code = "Cancelled"


class UnknownError(Error):
    code = "Unknown"


class InvalidArgumentError(Error, ValueError):
    code = "InvalidArgument"


class DeadlineExceededError(Error, TimeoutError):
    code = "DeadlineExceeded"


class NotFoundError(Error, FileNotFoundError):
    code = "NotFound"

    def __str__(self):  # OSError's str would print "[Errno ...]"-style tuples
        return str(self.args[0]) if self.args else ""


class AlreadyExistsError(Error, FileExistsError):
    code = "AlreadyExists"

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class PermissionDeniedError(Error, PermissionError):
    code = "PermissionDenied"

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class ResourceExhaustedError(Error):
    code = "ResourceExhausted"


class FailedPreconditionError(Error):
    code = "FailedPrecondition"


class AbortedError(Error):
    code = "Aborted"


class OutOfRangeError(Error, IndexError):
    code = "OutOfRange"


class UnimplementedError(Error, NotImplementedError):
    code = "Unimplemented"


class InternalError(Error):
    code = "Internal"


class UnavailableError(Error):
    code = "Unavailable"


class DataLossError(Error):
    code = "DataLoss"


class UnauthenticatedError(Error):
    code = "Unauthenticated"


_BY_CODE = {
    1: CancelledError, 2: UnknownError, 3: InvalidArgumentError, 4: DeadlineExceededError,
    5: NotFoundError, 6: AlreadyExistsError, 7: PermissionDeniedError,
    8: ResourceExhaustedError, 9: FailedPreconditionError, 10: AbortedError,
    11: OutOfRangeError, 12: UnimplementedError, 13: InternalError, 14: UnavailableError,
    15: DataLossError, 16: UnauthenticatedError,
}
_sluice._register_errors(_BY_CODE)

__all__ = ["Error"] + [c.__name__ for c in _BY_CODE.values()]
