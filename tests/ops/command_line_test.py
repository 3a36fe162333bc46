#!/usr/bin/python3
"""The binaries' command lines, as a newcomer meets them.

- every binary's --version prints one line, "<name> <version>", exit 0;
- --help (and -h) of every binary and of every shardctl command, and
  `shardctl help COMMAND`, exit 0 and list the options with their defaults;
- usage errors exit 2 with one line naming the option and where the help
  is: an unknown option, a missing required one, a duration without a
  unit ("give a unit, e.g. 10s"), an address without a port or with one
  outside 1..65535 (--listen, --etcd-endpoints, --advertise-address,
  --coordinator), a value outside its choices;
- every numeric option of shardd, shardctl (and each command) and
  shard-train, read from their --help, refuses "-1" (and a floating-point
  one "nan") with exit 2 and a line naming the option and the value typed:
  a new option cannot escape, and an option of a type the test does not
  know fails until it is classified here;
- shardd --check-data-dir of a directory that does not exist exits 3;
  shard-train refuses --lr 0 and --dataset records without --data-path
  with exit 2 before it joins;
- shardctl reads $SHARD_COORDINATOR when --coordinator is not given;
- shardd warns at start when it serves beyond loopback in plaintext without
  a token, and does not on loopback;
- `shardctl consume` waiting for a world prints "waiting for 1 more member
  (1 of 2 joined)" while it waits.

Usage: command_line_test.py --bin-dir DIR --version X.Y.Z NAME...
"""
import argparse
import os
import re
import signal
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


def shown(help_text, entry):
    """Whether --help shows `entry`: "--lease DURATION=10s" is one line
    naming the option, its type and its default in either CLI11 layout
    (2.1: "--lease DURATION=10s", 2.6: "--lease DURATION [10s]"); a word
    without a space (a command, a variable) anywhere."""
    if " " not in entry:
        return entry in help_text
    option, rest = entry.split(" ", 1)
    parts = [option] + [part for part in re.split(r"[= ]", rest) if part]
    return any(all(part in line for part in parts)
               for line in help_text.splitlines())


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
                       if not shown(done.stdout, text)]
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
    check(shown(done.stdout, "--tail TEXT:{pad,drop,uneven}=pad") and
          shown(done.stdout, "--job TEXT REQUIRED"),
          "create-job --help shows choices, defaults and required options",
          done.stdout)


def check_usage_errors(bin_dir):
    shardd = f"{bin_dir}/shardd"
    shardctl = f"{bin_dir}/shardctl"
    cases = [
        ([shardd, "--in-memory", "--lease", "10"],
         ["--lease", "give a unit, e.g. 10s", "Run 'shardd --help'"]),
        ([shardd, "--in-memory", "--listen", "0.0.0.0"],
         ["--listen", "has no port"]),
        ([shardd, "--in-memory", "--listen", "127.0.0.1:95537"],
         ["--listen", "has port 95537, out of range"]),
        ([shardd, "--in-memory", "--metrics-listen", "127.0.0.1:123456"],
         ["--metrics-listen", "has port 123456, out of range"]),
        ([shardd, "--in-memory", "--metrics-listen", "[::1]:0"],
         ["--metrics-listen", "IPv6", "serves IPv4 only"]),
        ([shardd, "--in-memory", "--metrics-listen", "no-such-host.invalid:0"],
         ["--metrics-listen", "\"no-such-host.invalid\" has no IPv4 address"]),
        ([shardd, "--etcd-endpoints", "127.0.0.1:2379,127.0.0.1"],
         ["--etcd-endpoints", "\"127.0.0.1\" has no port"]),
        ([shardd, "--etcd-endpoints", "127.0.0.1:2379",
          "--advertise-address", "replica-0"],
         ["--advertise-address", "\"replica-0\" has no port"]),
        ([shardd, "--etcd-endpoints", "127.0.0.1:2379", "--leader-lease",
          "2999ms"], ["--leader-lease", "whole seconds", "give 2s or 3s"]),
        ([shardd, "--in-memory", "--answer-log", "/tmp/answers.log"],
         ["--answer-log needs --etcd-endpoints"]),
        ([shardd, "--etcd-endpoints", "127.0.0.1:2379", "--listen",
          "127.0.0.1:0", "--answer-log", "/nonexistent-dir/answers.log"],
         ["--answer-log: cannot open /nonexistent-dir/answers.log"]),
        ([shardd, "--in-memory", "--max-wait", "0"],
         ["--max-wait 0 is below 1s"]),
        ([shardd, "--in-memory", "--max-wait", "999ms"],
         ["--max-wait 999ms is below 1s"]),
        ([shardctl, "create-job", "--job", "j", "--source", "a:010",
          "--world-size", "2"], ["SIZE \"010\" is not a decimal"]),
        ([shardctl, "create-job", "--job", "j", "--source", "a:10:choose=+3",
          "--world-size", "2"], ["choose=\"+3\" is not a decimal"]),
        ([shardctl, "create-job", "--job", "j", "--size", "10",
          "--world-size", "99999999999999999999"],
         ["--world-size", "is above the largest value, 1048576"]),
        ([shardd, "--in-memory", "--snapshot-every", "0"],
         ["--snapshot-every", "\"0\" is below the minimum, 1"]),
        ([shardctl, "--retry-deadline", "0s", "--coordinator",
          "127.0.0.1:95537", "status"],
         ["127.0.0.1:95537", "has port 95537, out of range"]),
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
        ([shardctl, "--coordinator", "", "status"],
         ["--coordinator: \"\" holds no address: give HOST:PORT"]),
        ([shardctl, "--retry-deadline", "0s", "--coordinator",
          "h:123456789012345678901", "status"],
         ["has port 123456789012345678901, out of range"]),
        ([shardd, "--check-etcd", "--etcd-endpoints", "127.0.0.1:2379",
          "--etcd-prefix", ""], ["--etcd-prefix", "may not be empty"]),
        ([shardctl], ["subcommand is required"]),
    ]
    for args, texts in cases:
        done = run(args)
        missing = [text for text in texts if text not in done.stderr]
        check(done.returncode == 2 and not missing,
              f"{' '.join(os.path.basename(a) for a in args[:1])} "
              f"{' '.join(args[1:])}: exit 2 naming {texts}",
              f"exit {done.returncode}, missing {missing}: {done.stderr}")


# Type names of options with a value, as --help shows them: numbers are
# tried with "-1" (and floating-point ones with "nan"); the others are left
# alone. An option whose type is in neither list fails the test.
NUMERIC_TYPES = {"UINT", "INT", "N", "BYTES", "RATE"}
FLOAT_TYPES = {"FLOAT"}
OTHER_TYPES = {"TEXT", "DURATION", "HOST:PORT", "HOST:PORT,...",
               "HOST:PORT[,...]", "DIR", "FILE", "PEM", "PREFIX", "BOOLEAN",
               "SOURCE"}
HELP_OPTION = re.compile(r"^\s+(?:-\w,)?(--[a-z][\w-]*)(?:\s+([A-Z]\S*))?")


def value_options(help_text):
    """(option, type name) of each option with a value in --help output."""
    options = []
    for line in help_text.splitlines():
        match = HELP_OPTION.match(line)
        if match and match.group(2) and match.group(1) not in ("--version",
                                                               "--help"):
            type_name = re.split(r"[=:{]", match.group(2))[0]
            if match.group(2).startswith("HOST:PORT"):
                type_name = match.group(2).split("=")[0]
            options.append((match.group(1), type_name))
    return options


def check_numeric_options(bin_dir):
    shardctl = [f"{bin_dir}/shardctl", "--coordinator", "127.0.0.1:1",
                "--retry-deadline", "0s"]
    programs = [
        ([f"{bin_dir}/shardd", "--in-memory", "--listen", "127.0.0.1:0"],
         [f"{bin_dir}/shardd", "--help"]),
        ([f"{bin_dir}/shard-train", "--coordinator", "127.0.0.1:1", "--job",
          "j"], [f"{bin_dir}/shard-train", "--help"]),
        (shardctl + ["status"], [f"{bin_dir}/shardctl", "--help"]),
    ] + [(shardctl + [command], [f"{bin_dir}/shardctl", command, "--help"])
         for command in SHARDCTL_COMMANDS]
    tried = 0
    for prefix, help_args in programs:
        options = value_options(run(help_args).stdout)
        check(options, f"{' '.join(help_args[1:])} lists options")
        for option, type_name in options:
            if type_name in OTHER_TYPES:
                continue
            if type_name not in NUMERIC_TYPES | FLOAT_TYPES:
                check(False, f"{option} of {' '.join(help_args[1:])} has type "
                      f"{type_name}: classify it in command_line_test.py")
                continue
            values = ["-1"] + (["nan"] if type_name in FLOAT_TYPES else [])
            for value in values:
                tried += 1
                try:
                    done = run(prefix + [option, value], timeout=10)
                    code, err = done.returncode, done.stderr
                except subprocess.TimeoutExpired:
                    code, err = None, "still running after 10 s"
                name = os.path.basename(prefix[0])
                check(code == 2 and option in err and f'"{value}"' in err and
                      len(err.splitlines()) <= 2,
                      f"{name} {option} {value}: exit 2 naming the option "
                      f"and the value", f"exit {code}: {err}")
    check(tried >= 20, f"{tried} numeric option values were tried")


def check_exit_codes_keep_their_word(bin_dir, work):
    done = run([f"{bin_dir}/shardd", "--check-data-dir",
                os.path.join(work, "no-such-dir")])
    check(done.returncode == 3 and "NOT recoverable" in done.stdout,
          "shardd --check-data-dir of a missing directory exits 3",
          f"exit {done.returncode}: {done.stdout}{done.stderr}")
    with ShardDaemon(bin_dir) as daemon:
        train = [f"{bin_dir}/shard-train", "--coordinator", daemon.address,
                 "--job", "refused", "--world-size", "1"]
        for extra, text in (
                (["--lr", "0"], "--lr"),
                (["--pg-timeout", "0"], "--pg-timeout 0 is below 1s"),
                (["--pg-timeout", "999ms"], "--pg-timeout 999ms is below 1s"),
                (["--world-size", "1048577"],
                 "is above the largest value, 1048576"),
                (["--source", "a:/d/a:weight=0x10", "--source",
                  "b:/d/b:weight=1"], "weight=\"0x10\" is not a decimal"),
                (["--dataset", "records"], "--data-path"),
                (["--source", "a:/d/a:weight=0", "--source",
                  "b:/d/b:weight=1"], "--source: source \"a\": weight"),
                (["--source", "a:/d/a", "--source", "a:/d/b"],
                 "--source: two sources are named \"a\""),
                (["--source", "a b:/d/a"], "--source: source 0: name"),
                (["--source", "a:/d/a:weight=1", "--source", "b:/d/b"],
                 "--source: source \"b\": either every source has a "
                 "weight")):
            done = run(train + extra)
            job = run([f"{bin_dir}/shardctl", "--coordinator", daemon.address,
                       "describe", "--job", "refused"])
            check(done.returncode == 2 and text in done.stderr and
                  job.returncode != 0,
                  f"shard-train {' '.join(extra)}: exit 2 naming {text}, "
                  f"before joining (no job was created)",
                  f"exit {done.returncode}: {done.stderr}")


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
                 if "waiting for 1 more member (1 of 2 joined; 2: the "
                 "job's world size)" in line]
        check(done.returncode == 1 and "DEADLINE_EXCEEDED" in done.stderr and
              lines and lines[0].startswith("shardctl: job env: "),
              f"consume waiting for a world prints a waiting line "
              f"({len(lines)} in {waited:.0f} s)", done.stderr)
        done = run([shardctl, "describe", "--job", "env"], env=env)
        check(re.search(r"world awaits:\s+2 members \(the job's world "
                        r"size\)", done.stdout) is not None,
              "describe says the size a forming world awaits and its rule",
              done.stdout + done.stderr)


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


def check_job_warnings(bin_dir):
    """create-job and describe say when a source is never served and when
    every rank's epoch is empty (on stderr: stdout stays parseable)."""
    with ShardDaemon(bin_dir) as daemon:
        ctl = [f"{bin_dir}/shardctl", "--coordinator", daemon.address]
        for job, args, text in (
                ("starved", ["--world-size", "2", "--source", "a:10:choose=5",
                             "--source", "b:10:repeat=0.01"],
                 "warning: source b gets 0 samples per epoch"),
                ("empty", ["--size", "3", "--world-size", "4", "--tail",
                           "drop"],
                 "warning: every rank gets 0 samples per epoch")):
            created = run(ctl + ["create-job", "--job", job, *args])
            described = run(ctl + ["describe", "--job", job])
            check(created.returncode == 0 and text in created.stderr and
                  described.returncode == 0 and text in described.stderr and
                  "warning" not in created.stdout + described.stdout,
                  f"create-job and describe of {job}: \"{text}\"",
                  created.stderr + described.stderr)
        fine = run(ctl + ["create-job", "--job", "fine", "--size", "8",
                          "--world-size", "4", "--tail", "drop"])
        check(fine.returncode == 0 and "warning" not in fine.stderr,
              "a job that serves every rank warns of nothing", fine.stderr)


def check_hangup_changes_nothing(bin_dir):
    """SIGHUP (a closed terminal, a supervisor's reload) once killed shardd
    without a word."""
    with ShardDaemon(bin_dir) as daemon:
        os.kill(daemon.pid, signal.SIGHUP)
        time.sleep(0.5)
        done = run([f"{bin_dir}/shardctl", "--coordinator", daemon.address,
                    "--retry-deadline", "0s", "status"])
        check(done.returncode == 0, "shardd keeps serving after SIGHUP",
              done.stderr)


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
    check_numeric_options(args.bin_dir)
    check_exit_codes_keep_their_word(args.bin_dir, work)
    check_listen_warning(args.bin_dir)
    check_hangup_changes_nothing(args.bin_dir)
    check_job_warnings(args.bin_dir)
    check_environment_and_waiting(args.bin_dir, work)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
