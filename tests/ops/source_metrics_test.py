#!/usr/bin/python3
"""Per-source metrics of a mixture, as a scrape shows them.

A mixture of 20 sources (W = 2) is consumed for one epoch by two
`shardctl consume` members; then shard_job_source_indices_streamed_total
must hold, for each of the first 16 sources, the indices the two ranks'
plans take from it (`shardctl plan --by-source`), and under
source="(other)" those of the 4 later sources together: 17 series, adding
up to the indices consumed. A plain job has no such series; a deleted
mixture's series are gone at the next scrape; promtool accepts the text.
Exit status 0 when every check passes.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402
from operations_test import check, RESULTS, sample, scrape  # noqa: E402

METRIC = "shard_job_source_indices_streamed_total"
SOURCES = [(f"s{k:02d}", 50 + 7 * k) for k in range(20)]


def ctl(bin_dir, address, *argv):
    return subprocess.run([f"{bin_dir}/shardctl", "--coordinator", address,
                           *argv], capture_output=True, text=True,
                          timeout=120, check=True).stdout


def planned_by_source(bin_dir, address):
    """{source: indices of epoch 0 over both ranks}."""
    planned = {}
    for rank in range(2):
        text = ctl(bin_dir, address, "plan", "--job", "mix", "--epoch", "0",
                   "--rank", str(rank), "--by-source")
        for name, count in re.findall(r"source (\S+): (\d+)", text):
            planned[name] = planned.get(name, 0) + int(count)
    return planned


def consume(bin_dir, address, job):
    procs = [subprocess.Popen(
        [f"{bin_dir}/shardctl", "--coordinator", address, "consume", "--job",
         job, "--member", f"{job}-{r}", "--epochs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(2)]
    lines = 0
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        check(proc.returncode == 0, f"consume {job} exits 0 ({err.strip()})")
        lines += len(out.splitlines())
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    with ShardDaemon(args.bin_dir, "--metrics-listen",
                     "127.0.0.1:0") as daemon:
        sources = [f"--source={name}:{size}:repeat=1.5"
                   for name, size in SOURCES]
        ctl(args.bin_dir, daemon.address, "create-job", "--job", "mix",
            "--world-size", "2", *sources)
        ctl(args.bin_dir, daemon.address, "create-job", "--job", "plain",
            "--size", "100", "--world-size", "2")
        consumed = consume(args.bin_dir, daemon.address, "mix")
        consume(args.bin_dir, daemon.address, "plain")
        planned = planned_by_source(args.bin_dir, daemon.address)
        text = scrape(daemon.metrics_address)
        series = re.findall(rf'^{METRIC}\{{([^}}]*)\}} (\S+)$', text, re.M)
        check(len(series) == 17, f"17 series for 20 sources ({len(series)})")
        for name, _ in SOURCES[:16]:
            got = sample(text, METRIC, job_id="mix", source=name)
            check(got == planned[name], f"source {name}: {got} streamed, "
                  f"{planned[name]} planned")
        other = sum(planned[name] for name, _ in SOURCES[16:])
        got = sample(text, METRIC, job_id="mix", source="(other)")
        check(got == other, f"(other): {got} streamed, {other} planned for "
              f"the 4 later sources")
        check(sum(float(v) for _, v in series) == consumed,
              f"the series add up to the {consumed} indices consumed")
        check(not re.search(rf'^{METRIC}\{{[^}}]*job_id="plain"', text,
                            re.M), "a plain job has no per-source series")
        promtool = subprocess.run(["promtool", "check", "metrics"],
                                  input=text, capture_output=True, text=True)
        check(promtool.returncode == 0, "promtool check metrics passes "
              f"({(promtool.stdout + promtool.stderr).strip() or 'clean'})")
        ctl(args.bin_dir, daemon.address, "delete-job", "--job", "mix",
            "--force")
        check(sample(scrape(daemon.metrics_address), METRIC) is None,
              "a deleted mixture's series are gone at the next scrape")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
