"""Shared by the Python client tests: the command line (--bin-dir with
shardd, --python-dir with the built package, which goes on sys.path), the
real shardd (ShardDaemon), pass/fail bookkeeping and what a hung process
leaves behind for its diagnosis (communicate_or_report)."""
import argparse
import importlib
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

__all__ = ["ShardDaemon", "check", "communicate_or_report", "exit_code",
           "join_all", "parse_args"]

RESULTS = {"passed": 0, "failed": 0}


def parse_args(description, add_arguments=None, bin_dir_required=True):
    """Parses --bin-dir, --python-dir (and what `add_arguments(parser)`
    adds) and puts the package on sys.path."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin-dir", required=bin_dir_required)
    parser.add_argument("--python-dir", required=True)
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    return args


def installed(module):
    """Whether `module` imports; prints that the test is skipped (it then
    exits 77) when it does not."""
    try:
        importlib.import_module(module)
    except ImportError:
        print(f"{module} is not installed: skipped")
        return False
    return True


def check(condition, what, quiet=False):
    """Counts a check; prints it (only a failure when `quiet`)."""
    RESULTS["passed" if condition else "failed"] += 1
    if not (quiet and condition):
        print(("ok      " if condition else "FAILED  ") + what, flush=True)


def expect_error(what, error_type, action, says=""):
    """Checks that action() raises error_type whose message holds `says`,
    reporting the message."""
    try:
        action()
        check(False, f"{what} raises {error_type.__name__}")
    except error_type as error:
        check(says in str(error), f"{what} raises {error_type.__name__}: "
              f"{str(error)[:160]}")


def exit_code(prefix=""):
    """Prints the tally and returns the process's exit status."""
    print(f"{prefix}{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


def join_all(make, count):
    """[make(0), ..., make(count - 1)], each called on its own thread at once
    (each join waits for the world, which forms once all joined); raises
    the first error any call raised."""
    made, errors = [None] * count, []

    def run(i):
        try:
            made[i] = make(i)
        except Exception as error:  # noqa: BLE001 - raised below
            errors.append(error)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return made


def communicate_or_report(proc, timeout, also=()):
    """proc.communicate(timeout) -> (out, err). When it runs past `timeout`:
    prints the threads' stacks of proc, of its descendants (torchrun's
    workers, DataLoader workers) and of the pids in `also` (the
    coordinator) with gdb where installed, kills proc and returns what it
    wrote, so that a hang fails its check with the evidence of where it
    hung."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"pid {proc.pid} still running after {timeout} s: "
              f"{' '.join(map(str, proc.args))[:300]}", flush=True)
        for pid in [proc.pid, *descendants_of(proc.pid), *also]:
            print_stacks(pid)
        proc.kill()
        return proc.communicate()


def torchrun_command():
    """`torchrun --rdzv_backend shard` where torch loads rendezvous handlers
    from entry points (2.3 and later), else the package's launcher (torch
    1.13)."""
    from torch.distributed.elastic.rendezvous import registry
    if hasattr(registry, "_register_out_of_tree_handlers"):
        return ["torchrun", "--rdzv_backend", "shard"]
    return [sys.executable, "-m", "shard.torchrun"]


def torchrun_env(python_dir):
    """This process's environment for a torchrun it starts: no inherited
    process-group variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE),
    the client package from `python_dir`, and USE_LIBUV=0 for a script that
    forms its group from MASTER_ADDR/MASTER_PORT on a torch built without
    libuv (Debian's 2.14; torch 1.13 does not read it)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    env.update(PYTHONPATH=os.path.abspath(python_dir), USE_LIBUV="0")
    return env


def descendants_of(pid):
    listed = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)],
                            capture_output=True, text=True).stdout
    children = [int(child) for child in listed.split()]
    return children + [grandchild for child in children
                       for grandchild in descendants_of(child)]


def print_stacks(pid):
    if not shutil.which("gdb"):
        print(f"(gdb is not installed: no stacks of pid {pid})", flush=True)
        return
    try:
        stacks = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-nx", "-ex",
             "thread apply all bt 30"],
            capture_output=True, text=True, timeout=120).stdout
    except subprocess.TimeoutExpired:
        stacks = "(gdb did not finish within 120 s)"
    print(f"--- threads of pid {pid} ---\n{stacks}", flush=True)
