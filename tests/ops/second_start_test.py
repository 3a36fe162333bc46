#!/usr/bin/python3
"""A second shardd on a data directory or an address in use refuses to start.

Starts one shardd with a job in it, then checks that:
- a second shardd on the same data directory (another port) exits non-zero
  at once, naming the directory and the first one's pid;
- the same through a symlink to that directory;
- a second shardd on the same address (another data directory) exits
  non-zero with "address already in use";
- the first shardd still serves its job afterwards;
- after kill -9 of the first, its LOCK file (holding a dead pid) does not
  block a restart on the same directory and address, which recovers the job.
Exit status 0 when every check passes.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what, flush=True)


def second_start(shardd, listen, data_dir):
    """Runs a second shardd; returns (exit code, stderr) or kills it and
    returns (None, stderr) if it started serving."""
    proc = subprocess.Popen([shardd, "--listen", listen, "--data-dir",
                             data_dir], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=20)
        return proc.returncode, err + out
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, err + out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    shardd = f"{args.bin_dir}/shardd"
    shardctl = f"{args.bin_dir}/shardctl"
    work = tempfile.mkdtemp(prefix="shard-second-start-")

    def describe(address):
        return subprocess.run(
            [shardctl, "--coordinator", address, "--retry-deadline", "5s",
             "describe", "--job", "kept"],
            capture_output=True, text=True, timeout=60)

    with ShardDaemon(args.bin_dir) as daemon:
        subprocess.run([shardctl, "--coordinator", daemon.address,
                        "create-job", "--job", "kept", "--size", "100",
                        "--world-size", "2"],
                       check=True, capture_output=True, timeout=60)
        holder = f"in use by pid {daemon.pid}"

        code, err = second_start(shardd, "127.0.0.1:0", daemon.data_dir)
        check(code not in (None, 0) and daemon.data_dir in err and
              holder in err,
              f"same data directory: refused (exit {code}): {err.strip()!r}")

        link = os.path.join(work, "link-to-data")
        os.symlink(daemon.data_dir, link)
        code, err = second_start(shardd, "127.0.0.1:0", link)
        check(code not in (None, 0) and holder in err,
              f"same directory through a symlink: refused (exit {code}): "
              f"{err.strip()!r}")

        code, err = second_start(shardd, daemon.address,
                                 os.path.join(work, "other-data"))
        check(code not in (None, 0) and "address already in use" in err,
              f"same address: refused (exit {code}): "
              f"{err.strip().splitlines()[-1:]!r}")

        described = describe(daemon.address)
        check(described.returncode == 0 and "kept" in described.stdout,
              "the first shardd still serves its job")

        daemon.kill()
        with open(os.path.join(daemon.data_dir, "LOCK")) as lock_file:
            stale = lock_file.read().strip()
        check(stale == str(daemon.pid),
              f"the LOCK file names the killed shardd ({stale})")
        daemon.restart()
        described = describe(daemon.address)
        check(described.returncode == 0 and "kept" in described.stdout,
              "after kill -9 the stale LOCK file does not block a restart, "
              "which recovers the job")

    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
