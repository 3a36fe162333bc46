"""The differences between the Python stacks the client runs on, in one
place: Debian bookworm (Python 3.11, torch 1.13, numpy 1) and the current
torch (Debian forky: Python 3.14, torch 2.14, numpy 2).

- fork() with a live gRPC channel: forky's grpcio waits for ever inside
  fork() once a channel of the process has carried a call ("Waiting for
  thread pool to idle before forking"); bookworm's forks. Python 3.14's
  default start method is forkserver, which forks from a clean process.
- "cpu:0": accelerate names the CPU of a multi-process CPU run
  torch.device("cpu", 0), and Trainer resumes its optimizer with that as
  torch.load's map_location, a location torch does not know ("don't know
  how to restore data location ... (tagged with cpu:0)").
"""
import functools
import multiprocessing
import sys

FORK_HANGS_WITH_GRPC = sys.version_info >= (3, 14)


def start_method(context):
    """The start method a DataLoader's multiprocessing_context (None, a
    name or a context) resolves to."""
    if context is None:
        return multiprocessing.get_start_method()
    if isinstance(context, str):
        return context
    return context.get_start_method()


def check_worker_start(num_workers, context):
    """ValueError, saying what to do, for DataLoader workers that would be
    forked from this process where that hangs."""
    if (num_workers > 0 and FORK_HANGS_WITH_GRPC and
            start_method(context) == "fork"):
        raise ValueError(
            "DataLoader workers started by fork hang on this Python "
            f"{sys.version_info.major}.{sys.version_info.minor} and grpcio "
            "once the coordinator's channel is in use: give "
            "multiprocessing_context='forkserver' (Python 3.14's default) "
            "or 'spawn'")


def _indexed_cpu(storage, location):
    """torch.load's deserializer for "cpu:N": the CPU (None: not ours)."""
    if location.startswith("cpu:") and location[4:].isdigit():
        return storage.cpu() if hasattr(storage, "cpu") else storage
    return None


@functools.lru_cache(maxsize=None)
def accept_indexed_cpu_locations():
    """Lets torch.load restore tensors to "cpu:N" (once per process)."""
    import torch.serialization
    torch.serialization.register_package(100, lambda storage: None,
                                         _indexed_cpu)
