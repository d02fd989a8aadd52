"""Exceptions: one class per launcher status (runtime/tkc_host.h), each
carrying the launcher's own message."""


class TkcError(RuntimeError):
    """A tkc launcher refused its arguments or failed to launch, or a build failed."""

    status = None

    def __init__(self, message, kernel=None, status=None):
        self.kernel = kernel
        self.message = message
        if status is not None:
            self.status = status
        where = f"tkc_{kernel}: " if kernel else ""
        super().__init__(f"{where}{message}" + (f" (status {self.status})" if self.status else ""))

    @property
    def code(self):
        """The launcher's status (tkc_status), or None for a build error."""
        return self.status


class BuildError(TkcError):
    """tkc or nvcc failed; the message holds their output."""


class NullPointerError(TkcError, ValueError):
    status = 1


class ShapeError(TkcError, ValueError):
    status = 2


class StrideError(TkcError, ValueError):
    status = 3


class AlignmentError(TkcError, ValueError):
    status = 4


class NoSpecializationError(TkcError, ValueError):
    status = 5


class LaunchError(TkcError):
    status = 6


class AbiError(TkcError):
    status = 7


class DTypeError(TkcError, TypeError):
    status = 8


class DeviceError(TkcError, ValueError):
    status = 9


class CudaError(TkcError):
    status = 10


class NoTargetError(TkcError):
    status = 11


ERRORS_BY_STATUS = {cls.status: cls for cls in (NullPointerError, ShapeError, StrideError, AlignmentError,
                                                 NoSpecializationError, LaunchError, AbiError, DTypeError,
                                                 DeviceError, CudaError, NoTargetError)}


def error_for(status, kernel, message):
    """The exception for a launcher's non-zero status."""
    cls = ERRORS_BY_STATUS.get(status)
    if cls is None:
        return TkcError(message or "unknown status", kernel, status)
    return cls(message, kernel)
