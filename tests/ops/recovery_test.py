#!/usr/bin/python3
"""A damaged data directory stops shardd instead of shrinking its history.

Creates 50 jobs through a real shardd (50 journal records), stops it, then
flips one bit of record 11's length field, so that the length runs past the
end of the file while 39 intact records follow. Checks that:
- shardd refuses to start: exit code 3, DATA_LOSS naming the file and the
  record's byte offset, and the journal is left byte for byte as it was;
- shardd --check-data-dir reports the same, read only, with exit code 3;
- with the byte restored, --check-data-dir says the directory is sound and
  shardd starts with all 50 jobs.
Exit status 0 when every check passes.
"""
import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}
JOBS = 50


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what, flush=True)


def record_offsets(journal):
    """Byte offsets of the framed records (fixed32 length, fixed32 CRC)."""
    offsets, at = [], 0
    while at + 8 <= len(journal):
        offsets.append(at)
        (length,) = struct.unpack_from("<I", journal, at)
        at += 8 + length
    return offsets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    shardd = f"{args.bin_dir}/shardd"
    shardctl = f"{args.bin_dir}/shardctl"
    data_dir = tempfile.mkdtemp(prefix="shard-recovery-")

    with ShardDaemon(args.bin_dir) as daemon:
        for j in range(JOBS):
            subprocess.run([shardctl, "--coordinator", daemon.address,
                            "create-job", "--job", f"job{j}", "--size", "100",
                            "--world-size", "2"],
                           check=True, capture_output=True, timeout=60)
        daemon.kill()
        for name in os.listdir(daemon.data_dir):
            os.rename(os.path.join(daemon.data_dir, name),
                      os.path.join(data_dir, name))

    [journal_path] = glob.glob(os.path.join(data_dir, "journal-*.log"))
    intact = open(journal_path, "rb").read()
    offsets = record_offsets(intact)
    check(len(offsets) == JOBS, f"the journal holds {JOBS} records")
    damaged = bytearray(intact)
    damaged[offsets[10] + 2] ^= 0x01  # Record 11's length grows by 65536.
    with open(journal_path, "wb") as f:
        f.write(damaged)

    try:
        started = subprocess.run([shardd, "--listen", "127.0.0.1:0",
                                  "--data-dir", data_dir],
                                 capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as still_running:
        check(False, "shardd refuses to start on the damaged journal (it "
              f"served instead: {still_running.stdout!r})")
        return 1
    check(started.returncode == 3,
          f"shardd exits 3 on the damaged journal (got {started.returncode}: "
          f"{started.stderr.strip()[:300]})")
    check("DATA_LOSS" in started.stderr and
          f"byte offset {offsets[10]}" in started.stderr,
          "the error says DATA_LOSS and names the record's offset")
    check(open(journal_path, "rb").read() == bytes(damaged),
          "the damaged journal is left untouched")

    checked = subprocess.run([shardd, "--check-data-dir", data_dir],
                             capture_output=True, text=True, timeout=60)
    check(checked.returncode == 3 and "NOT recoverable" in checked.stdout,
          f"--check-data-dir reports it (exit {checked.returncode})")

    with open(journal_path, "wb") as f:
        f.write(intact)
    checked = subprocess.run([shardd, "--check-data-dir", data_dir],
                             capture_output=True, text=True, timeout=60)
    check(checked.returncode == 0 and f"sound: {JOBS} jobs" in checked.stdout,
          f"--check-data-dir finds the restored directory sound "
          f"({checked.stdout.strip()})")

    proc = subprocess.Popen([shardd, "--listen", "127.0.0.1:0", "--data-dir",
                             data_dir], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().split()[-1]
        listed = subprocess.run([shardctl, "--coordinator", address, "status",
                                 "--output", "json"], capture_output=True,
                                text=True, timeout=60)
        check(listed.returncode == 0 and
              len(json.loads(listed.stdout)["jobs"]) == JOBS,
              f"shardd starts from the restored directory with {JOBS} jobs")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    print(f"{RESULTS['passed']} checks passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
