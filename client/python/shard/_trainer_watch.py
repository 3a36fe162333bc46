"""DataLoader worker processes that end with their trainer.

Workers started by forkserver (Python 3.14's default) or spawn are not the
trainer's children: torch's own check (is my parent alive?) looks at the
forkserver, so a trainer killed alone (SIGKILL of its pid, as torchrun does
to a failed worker's peers' groups but not to the failed worker's) leaves
its workers running for ever, holding their memory and the trainer's
stdout/stderr. exit_with_trainer() is a worker_init_fn wrapper that ends the
worker (exit status 1) once the trainer process is gone.
"""
import os
import select
import threading
import time


def exit_with_trainer(trainer_pid, user_init, worker_id):
    """worker_init_fn: watches `trainer_pid` on a daemon thread, then runs
    the user's worker_init_fn (if any)."""
    threading.Thread(target=_wait_then_exit, args=(trainer_pid,),
                     name="shard-trainer-watch", daemon=True).start()
    if user_init is not None:
        user_init(worker_id)


def _wait_then_exit(trainer_pid):
    try:
        handle = os.pidfd_open(trainer_pid)
    except ProcessLookupError:
        os._exit(1)  # Gone before the worker started.
    except (AttributeError, OSError):  # No pidfd (Linux < 5.3): poll.
        while _alive(trainer_pid):
            time.sleep(1.0)
        os._exit(1)
    select.select([handle], [], [])  # Readable once the process exited.
    os._exit(1)


def _alive(pid):
    try:
        os.kill(pid, 0)  # PermissionError: alive, another user's.
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
