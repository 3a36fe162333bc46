"""The client's exceptions: ShardError, and one subclass per status code.

    try:
        client.get_job("missing")
    except shard.errors.NotFoundError:
        ...
    except shard.ShardError as error:  # Every other code.
        print(error.code, error.message)

`ShardError(method, code, message)` builds the subclass of `code`, so the
two catch the same errors.
"""
from typing import Dict, Type

import grpc


class ShardError(Exception):
    """A call to the coordinator failed.

    `code` is the grpc.StatusCode (e.g. NOT_FOUND for an unknown job,
    FAILED_PRECONDITION for a spec mismatch, ABORTED for an ended generation,
    UNAUTHENTICATED for a bad token) and `message` the coordinator's message,
    which says what was wrong and what was expected. The instance is of the
    code's subclass (NotFoundError, AbortedError, ...).
    """

    code: grpc.StatusCode
    method: str
    message: str

    def __new__(cls, method: str, code: grpc.StatusCode, message: str):
        if cls is ShardError:
            cls = _BY_CODE.get(code, ShardError)
        return super().__new__(cls)

    def __init__(self, method: str, code: grpc.StatusCode, message: str):
        super().__init__(f"{method}: {code.name}: {message}")
        self.method = method
        self.code = code
        self.message = message

    def __reduce__(self):  # Picklable (DataLoader workers re-raise it).
        return (ShardError, (self.method, self.code, self.message))

    @classmethod
    def from_rpc_error(cls, method: str, error: grpc.RpcError) -> "ShardError":
        return ShardError(method, error.code(), error.details() or "")

    @classmethod
    def from_server_rpc_error(cls, method: str,
                              error: grpc.RpcError) -> "ShardError":
        """For a call this client did not cancel: CANCELLED can then only
        come from a coordinator process that stops (gRPC's server cancels
        the calls that reach it once its shutdown began; a replica's change
        of role cancels nothing), so it becomes UNAVAILABLE (retried, the
        replica reported failed) with the message saying so."""
        if error.code() != grpc.StatusCode.CANCELLED:
            return cls.from_rpc_error(method, error)
        return ShardError(method, grpc.StatusCode.UNAVAILABLE,
                          f"{error.details() or 'CANCELLED'} (the coordinator "
                          "cancelled the call: it was stopping)")


def _subclass(code: grpc.StatusCode) -> Type[ShardError]:
    name = "".join(part.title() for part in code.name.split("_")) + "Error"
    return type(name, (ShardError,), {
        "__doc__": f"ShardError with code {code.name}.",
        "__module__": __name__})


_BY_CODE: Dict[grpc.StatusCode, Type[ShardError]] = {
    code: _subclass(code) for code in grpc.StatusCode if code !=
    grpc.StatusCode.OK}

CancelledError = _BY_CODE[grpc.StatusCode.CANCELLED]
UnknownError = _BY_CODE[grpc.StatusCode.UNKNOWN]
InvalidArgumentError = _BY_CODE[grpc.StatusCode.INVALID_ARGUMENT]
DeadlineExceededError = _BY_CODE[grpc.StatusCode.DEADLINE_EXCEEDED]
NotFoundError = _BY_CODE[grpc.StatusCode.NOT_FOUND]
AlreadyExistsError = _BY_CODE[grpc.StatusCode.ALREADY_EXISTS]
PermissionDeniedError = _BY_CODE[grpc.StatusCode.PERMISSION_DENIED]
ResourceExhaustedError = _BY_CODE[grpc.StatusCode.RESOURCE_EXHAUSTED]
FailedPreconditionError = _BY_CODE[grpc.StatusCode.FAILED_PRECONDITION]
AbortedError = _BY_CODE[grpc.StatusCode.ABORTED]
OutOfRangeError = _BY_CODE[grpc.StatusCode.OUT_OF_RANGE]
UnimplementedError = _BY_CODE[grpc.StatusCode.UNIMPLEMENTED]
InternalError = _BY_CODE[grpc.StatusCode.INTERNAL]
UnavailableError = _BY_CODE[grpc.StatusCode.UNAVAILABLE]
DataLossError = _BY_CODE[grpc.StatusCode.DATA_LOSS]
UnauthenticatedError = _BY_CODE[grpc.StatusCode.UNAUTHENTICATED]

# The clients' table (proto/shard/v1/client_retries.json): codes a call
# marked "retry" is repeated on, and heartbeat answers that stop the
# heartbeat thread or are only reported.
RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)
HEARTBEAT_ENDS = (grpc.StatusCode.NOT_FOUND,
                  grpc.StatusCode.FAILED_PRECONDITION,
                  grpc.StatusCode.INVALID_ARGUMENT,
                  grpc.StatusCode.UNAUTHENTICATED,
                  grpc.StatusCode.PERMISSION_DENIED,
                  grpc.StatusCode.UNIMPLEMENTED)
HEARTBEAT_REPORTED = (grpc.StatusCode.ABORTED,)
