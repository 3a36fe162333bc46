"""Shared by the SDK tests: counted checks and commands that must succeed."""
import subprocess

FAILURES = []


def check(condition, what):
    """Records and prints one check."""
    print(("ok      " if condition else "FAILED  ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def run(cmd, **kwargs):
    """Runs cmd and returns its stdout; on failure prints its output and
    raises RuntimeError."""
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        print(f"$ {' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}")
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}")
    return proc.stdout


def exit_code():
    """Prints the tally; the process's exit status."""
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0
