"""The one exception type of the client."""
import grpc


class ShardError(Exception):
    """A call to the coordinator failed.

    `code` is the grpc.StatusCode (e.g. NOT_FOUND for an unknown job,
    FAILED_PRECONDITION for a spec mismatch, ABORTED for an ended generation,
    UNAUTHENTICATED for a bad token) and `message` the coordinator's message,
    which says what was wrong and what was expected.
    """

    def __init__(self, method, code, message):
        super().__init__(f"{method}: {code.name}: {message}")
        self.method = method
        self.code = code
        self.message = message

    @classmethod
    def from_rpc_error(cls, method, error):
        return cls(method, error.code(), error.details() or "")


# Codes worth retrying: the coordinator is restarting or draining.
RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)
