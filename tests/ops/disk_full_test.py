#!/usr/bin/python3
"""A full disk stops shardd for a restart, and the restart loses nothing.

Runs a real shardd on a 512 KiB tmpfs data directory (skipped, exit 77,
where tmpfs cannot be mounted), creates jobs, fills the file system, creates more until one fails, then:
- the next change fails with UNAVAILABLE, shardd logs why, drains and
  exits with code 1 on its own (so that a supervisor restarts it);
- no partial snapshot (snapshot.pb.tmp) is left taking room (shardd
  snapshots every 4 changes here, so snapshots meet the full disk too);
- with space freed, a restarted shardd on the same directory has every job
  acknowledged before the failure and accepts changes again.
Exit status 0 when every check passes.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

RESULTS = {"passed": 0, "failed": 0}
SKIP = 77


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what, flush=True)


def start(bin_dir, data_dir, log):
    proc = subprocess.Popen(
        [f"{bin_dir}/shardd", "--listen", "127.0.0.1:0", "--data-dir",
         data_dir, "--shutdown-grace", "1s", "--snapshot-every", "4"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"shardd did not start: {line!r}")
    return proc, line.split()[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shard-disk-full-")
    data_dir = os.path.join(work, "data")
    os.mkdir(data_dir)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", data_dir],
        capture_output=True, text=True)
    if mounted.returncode != 0:
        print(f"skipped: cannot mount a tmpfs ({mounted.stderr.strip()})")
        return SKIP
    log_path = os.path.join(work, "shardd.log")
    try:
        with open(log_path, "w") as log:
            proc, address = start(args.bin_dir, data_dir, log)

            def ctl(*argv):
                return subprocess.run(
                    [f"{args.bin_dir}/shardctl", "--coordinator", address,
                     "--retry-deadline", "0s", *argv],
                    capture_output=True, text=True, timeout=60)

            for i in range(3):
                done = ctl("create-job", "--job", f"before-{i}", "--size",
                           "100", "--world-size", "2")
                check(done.returncode == 0, f"job before-{i} created")
            filler = os.path.join(data_dir, "filler")
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"],
                           capture_output=True)
            # The journal's last page may still have room: change until a
            # write needs a new one.
            acknowledged = [f"before-{i}" for i in range(3)]
            for i in range(1000):
                failed = ctl("create-job", "--job", f"during-{i}", "--size",
                             "100", "--world-size", "2")
                if failed.returncode != 0:
                    break
                acknowledged.append(f"during-{i}")
            check(failed.returncode != 0 and "UNAVAILABLE" in failed.stderr,
                  f"a change on the full disk fails with UNAVAILABLE after "
                  f"{len(acknowledged) - 3} more ({failed.stderr.strip()[:160]})")
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = None
            check(code == 1, f"shardd drains and exits 1 (exit {code})")
        text = open(log_path).read()
        check("cannot make state durable" in text,
              "the log says the journal could not be written")
        left = [name for name in os.listdir(data_dir)
                if name.endswith(".tmp")]
        check(not left, f"no partial file is left on the full disk {left} "
              f"({text.count('snapshot failed')} snapshots failed)")

        os.remove(filler)
        with open(log_path, "a") as log:
            proc, address = start(args.bin_dir, data_dir, log)
            try:
                listed = ctl("status")
                listed_jobs = {line.split()[0] for line in
                               listed.stdout.splitlines()[1:] if line.strip()}
                check(listed.returncode == 0 and
                      set(acknowledged) <= listed_jobs,
                      f"after the restart all {len(acknowledged)} "
                      "acknowledged jobs are there")
                again = ctl("create-job", "--job", "after", "--size", "100",
                            "--world-size", "2")
                check(again.returncode == 0,
                      "with space back, changes are accepted again")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    finally:
        subprocess.run(["umount", data_dir], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
