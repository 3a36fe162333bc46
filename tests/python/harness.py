"""Shared by the Python client tests: the command line (--bin-dir with
shardd, --python-dir with the built package, which goes on sys.path), the
real shardd (ShardDaemon) and pass/fail bookkeeping."""
import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

__all__ = ["ShardDaemon", "check", "exit_code", "join_all", "parse_args"]

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


def check(condition, what, quiet=False):
    """Counts a check; prints it (only a failure when `quiet`)."""
    RESULTS["passed" if condition else "failed"] += 1
    if not (quiet and condition):
        print(("ok      " if condition else "FAILED  ") + what, flush=True)


def expect_error(what, error_type, action):
    """Checks that action() raises error_type, reporting its message."""
    try:
        action()
        check(False, f"{what} raises {error_type.__name__}")
    except error_type as error:
        check(True, f"{what} raises {error_type.__name__}: "
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
