#!/usr/bin/python3
"""The binaries' command lines, as a newcomer meets them.

- every binary's --version prints one line, "<name> <version>", exit 0;
- --help (and -h) of every binary and of every shardctl command, and
  `shardctl help COMMAND`, exit 0 and list the options with their defaults;
- usage errors exit 2 with one line naming the option and where the help
  is: an unknown option, a missing required one, a duration without a
  unit ("give a unit, e.g. 10s"), an address without a port, a value
  outside its choices;
- shardctl reads $SHARD_COORDINATOR when --coordinator is not given;
- shardd warns at start when it serves beyond loopback in plaintext without
  a token, and does not on loopback;
- `shardctl consume` waiting for a world prints "waiting for 1 more member
  (1 of 2 joined)" while it waits.

Usage: command_line_test.py --bin-dir DIR --version X.Y.Z NAME...
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}

SHARDCTL_COMMANDS = ["create-job", "plan", "consume", "status", "describe",
                     "delete-job", "drain", "health"]


def check(condition, what, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what +
          ("" if condition or not detail else f"\n        {detail!r}"),
          flush=True)


def run(args, env=None, timeout=60):
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout, env=env)


def check_versions(bin_dir, version, names):
    for name in names:
        done = run([f"{bin_dir}/{name}", "--version"])
        check(done.returncode == 0 and done.stdout == f"{name} {version}\n",
              f"{name} --version prints '{name} {version}'",
              done.stdout + done.stderr)


def check_help(bin_dir, names):
    expected = {
        "shardd": ["--listen HOST:PORT=127.0.0.1:7070", "--lease DURATION=10s",
                   "--data-dir DIR", "--check-etcd"],
        "shardctl": ["--coordinator", "SHARD_COORDINATOR", "create-job",
                     "health", "--retry-deadline DURATION=1m"],
        "shard-records": ["fashion-mnist", "synthetic", "inspect"],
        "shard-train": ["--join-wait DURATION=10m", "--batch-size",
                        "--progress-every DURATION=10s", "--world-size"],
    }
    for name in names:
        for flag in ("--help", "-h"):
            done = run([f"{bin_dir}/{name}", flag])
            missing = [text for text in expected.get(name, [])
                       if text not in done.stdout]
            check(done.returncode == 0 and not missing,
                  f"{name} {flag} exits 0 and lists {expected.get(name)}",
                  f"missing {missing}: {done.stdout[:400]}{done.stderr}")
    shardctl = f"{bin_dir}/shardctl"
    for command in SHARDCTL_COMMANDS:
        done = run([shardctl, command, "--help"])
        via_help = run([shardctl, "help", command])
        check(done.returncode == 0 and
              f"Usage: shardctl {command}" in done.stdout and
              via_help.returncode == 0 and via_help.stdout == done.stdout,
              f"shardctl {command} --help == shardctl help {command}",
              done.stdout[:200] + done.stderr + via_help.stderr)
    done = run([shardctl, "create-job", "--help"])
    check("--tail TEXT:{pad,drop,uneven}=pad" in done.stdout and
          "--job TEXT REQUIRED" in done.stdout,
          "create-job --help shows choices, defaults and required options",
          done.stdout)


def check_usage_errors(bin_dir):
    shardd = f"{bin_dir}/shardd"
    shardctl = f"{bin_dir}/shardctl"
    cases = [
        ([shardd, "--in-memory", "--lease", "10"],
         ["--lease", "give a unit, e.g. 10s", "Run 'shardd --help'"]),
        ([shardd, "--in-memory", "--listen", "0.0.0.0"],
         ["--listen", "needs a port"]),
        ([shardd, "--in-memory", "--data_dir", "/tmp/x"],
         ["--data_dir"]),
        ([shardctl, "create-job", "--job", "j", "--size", "10"],
         ["--world-size is required", "Run 'shardctl create-job --help'"]),
        ([shardctl, "consume", "--job", "j", "--member", "m", "--wait", "30"],
         ["--wait", "give a unit"]),
        ([shardctl, "create-job", "--job", "j", "--size", "10",
          "--world-size", "2", "--tail", "wrap"], ["--tail", "wrap"]),
        ([shardctl, "--retry-deadline", "0s", "--coordinator", "localhost",
          "status"], ["has no port", "localhost"]),
        ([shardctl, "frobnicate"], ["frobnicate"]),
        ([shardctl], ["subcommand is required"]),
    ]
    for args, texts in cases:
        done = run(args)
        missing = [text for text in texts if text not in done.stderr]
        check(done.returncode == 2 and not missing,
              f"{' '.join(os.path.basename(a) for a in args[:1])} "
              f"{' '.join(args[1:])}: exit 2 naming {texts}",
              f"exit {done.returncode}, missing {missing}: {done.stderr}")


def check_environment_and_waiting(bin_dir, work):
    shardctl = f"{bin_dir}/shardctl"
    with ShardDaemon(bin_dir) as daemon:
        env = dict(os.environ, SHARD_COORDINATOR=daemon.address)
        done = run([shardctl, "create-job", "--job", "env", "--size", "10",
                    "--world-size", "2"], env=env)
        check(done.returncode == 0 and "job env:" in done.stdout,
              "shardctl uses $SHARD_COORDINATOR without --coordinator",
              done.stdout + done.stderr)
        began = time.monotonic()
        done = run([shardctl, "consume", "--job", "env", "--member", "m0",
                    "--wait", "12s"], env=env)
        waited = time.monotonic() - began
        lines = [line for line in done.stderr.splitlines()
                 if "waiting for 1 more member (1 of 2 joined)" in line]
        check(done.returncode == 1 and "DEADLINE_EXCEEDED" in done.stderr and
              lines and lines[0].startswith("shardctl: job env: "),
              f"consume waiting for a world prints a waiting line "
              f"({len(lines)} in {waited:.0f} s)", done.stderr)


def check_listen_warning(bin_dir):
    for listen, warned in (("0.0.0.0:0", True), ("127.0.0.1:0", False)):
        proc = subprocess.Popen([f"{bin_dir}/shardd", "--listen", listen,
                                 "--in-memory"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started = proc.stdout.readline().startswith("listening on ")
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        has_warning = "warning: serving" in err and "plaintext" in err
        check(started and has_warning == warned,
              f"shardd --listen {listen}: "
              f"{'warns' if warned else 'no warning'} about plaintext "
              f"without a token", err)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shard-command-line-")
    check_versions(args.bin_dir, args.version, args.names)
    check_help(args.bin_dir, args.names)
    check_usage_errors(args.bin_dir)
    check_listen_warning(args.bin_dir)
    check_environment_and_waiting(args.bin_dir, work)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
