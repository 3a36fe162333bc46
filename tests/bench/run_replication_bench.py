#!/usr/bin/python3
"""The replicated coordinator (3 etcd members + 3 shardd replicas on this
machine, loopback) against one shardd on a local journal, side by side in
one run. Prints a Markdown table.

1. Commit throughput: shard-commit-throughput-bench with M members
   (each committing in a closed loop) against the journal's shardd and
   against the replicas' leader.
2. Join storm: shard-join-storm-bench with W ranks joining at once, on
   each store.
3. Failovers, for each leader lease in --leases: while a writer creates
   a job after another (each create is acknowledged only once durable) and
   a reader streams a job's indices, the leader is SIGKILLed K times and
   SIGTERMed T times (restarted as a standby each time), then SIGSTOPped P
   times (frozen, not killed: it keeps its connections open; thawed once
   its lease has passed, it stands by); reports, for kills, SIGTERMs and
   SIGSTOPs apart, the time
   from each stop to the first call another replica serves, to the answer
   of shardctl and of the C++ client started at the stop, and the longest
   wait across the stop between two creates of the Python writer and
   between two chunks of the Python stream (all through the address list),
   p50/p99/max, and how many acknowledged jobs are missing at the end (must
   be 0).
4. etcd's footprint: commits in a closed loop until about N commits
   (snapshots every 10000 records, compaction after each; a member lease
   of 1 h, since the benchmark's members do not heartbeat); reports etcd's
   database size and the part in use, and the keys under the prefix.

  tests/bench/run_replication_bench.py --bin-dir build/bin --python-dir
      build/python [--members 1000] [--joins 1000] [--seconds 10]
      [--kills 20] [--terms 20] [--pauses 5] [--leases 2,5]
      [--commits 1000000]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from fresh_daemon_runs import ShardDaemon  # noqa: E402

LEASE_S = 2.0


def progress(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def run_client(bin_dir, client, address, pid, size_flag, size, extra=()):
    out = subprocess.run(
        [f"{bin_dir}/{client}", "--coordinator", address,
         "--coordinator-pid", str(pid), f"--{size_flag}", str(size), *extra],
        capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        sys.exit(f"{client} failed: {out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    progress(json.dumps(result))
    return result


def with_replicas(bin_dir, work, run, extra_args=(), lease_s=LEASE_S):
    """Runs `run(replicas, etcd)` on a fresh etcd cluster and 3 replicas
    (snapshots every 10000 records, shardd's default)."""
    from replicated_coordinator import EtcdCluster, Replicas
    with EtcdCluster() as etcd, Replicas(
            bin_dir, etcd, work, lease=f"{lease_s:.0f}s",
            snapshot_every=10000, extra_args=extra_args) as replicas:
        replicas.lease_s = lease_s
        if replicas.leader(deadline_s=60) is None:
            sys.exit("no replica leads")
        return run(replicas, etcd)


def load_on_leader(bin_dir, client, size_flag, size, extra=()):
    def run(replicas, _):
        leader = replicas.leader()
        return run_client(bin_dir, client, replicas.addresses[leader],
                          replicas.pid(leader), size_flag, size, extra)
    return run


def load_on_journal(bin_dir, client, size_flag, size, extra=()):
    with ShardDaemon(bin_dir) as daemon:
        return run_client(bin_dir, client, daemon.address, daemon.pid,
                          size_flag, size, extra)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class ClientWatch:
    """The clients of a failover benchmark, each through the address list:
    a Python writer creating one job after another, and a Python stream
    read chunk by chunk as a trainer reads it; the time of each
    acknowledged create and of each chunk received."""

    def __init__(self, coordinator):
        import shard
        self._shard = shard
        self.client = shard.Client(coordinator, retry_deadline=60)
        self.acknowledged, self.acknowledged_at = [], []
        self.chunk_at, self.errors = [], []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write),
                         threading.Thread(target=self._read)]
        for thread in self._threads:
            thread.start()

    def _write(self):
        n = 0
        while not self._stop.is_set():
            job = f"ack-{n}"
            try:
                self.client.create_job(job, self._shard.job_spec(100, 1))
                self.acknowledged.append(job)
                self.acknowledged_at.append(time.monotonic())
            except Exception as error:  # noqa: BLE001 (reported)
                self.errors.append(f"{job}: {error}")
            n += 1

    def _read(self):
        shard = self._shard
        membership = self.client.join(
            "stream", "reader", wait=60,
            spec=shard.job_spec(10**9, 1, shuffle=False))
        try:
            # Small chunks and prefetch: what the reader gets is what the
            # coordinator sends, not a buffer filled before a failure.
            for _ in self.client.stream(membership, 0, prefetch_bytes=16 << 10,
                                        chunk_indices=1024):
                self.chunk_at.append(time.monotonic())
                if self._stop.wait(0.01):
                    return
        except Exception as error:  # noqa: BLE001 (reported)
            self.errors.append(f"stream: {error}")

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def lost(self):
        """Acknowledged creates missing now (must be none)."""
        missing = []
        for job in self.acknowledged:
            try:
                self.client.get_job(job)
            except self._shard.errors.NotFoundError:
                missing.append(job)
        return missing


def stall(times, t, until):
    """The longest wait between two consecutive times from the last before
    `t` to the last before `until`: the pause a client saw across an event
    at `t`, calls in flight at `t` included."""
    before = [x for x in times if x <= t]
    around = ([before[-1]] if before else []) + [
        x for x in times if t < x <= until]
    if len(around) < 2 or around[-1] <= t:
        return None
    return max(b - a for a, b in zip(around, around[1:]))


def timed(command):
    """Seconds the command took (None if it failed), run now."""
    began = time.monotonic()
    out = subprocess.run(command, capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        progress(f"{command[0]} failed: {out.stderr[-500:]}")
        return None
    return time.monotonic() - began


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"p50": float("nan"), "p99": float("nan"),
                "max": float("nan"), "n": 0}
    return {"p50": statistics.median(values), "p99": percentile(values, 0.99),
            "max": max(values), "n": len(values)}


def failovers(bin_dir, rounds):
    """`rounds`: [("kill", "term" or "stop", count)]. For each leader
    stopped that way (SIGKILL, SIGTERM, SIGSTOP): the time to the first
    call another replica serves, and to the next answer of each client
    (shardctl and the C++ client started right after the stop, the Python
    writer, the Python stream)."""
    def run(replicas, _):
        import shard
        watch = ClientWatch(replicas.coordinator)
        watch.client.create_job("described", shard.job_spec(100, 1))
        events = []
        for how, count in rounds:
            for k in range(count):
                time.sleep(1.0)
                leader = replicas.leader()
                if how == "kill":
                    replicas.kill(leader)
                elif how == "term":
                    replicas.terminate(leader)
                else:
                    replicas.signal(leader, signal.SIGSTOP)
                began = time.monotonic()
                probes = {}
                threads = [threading.Thread(target=lambda: probes.__setitem__(
                    "shardctl", timed([f"{bin_dir}/shardctl", "--coordinator",
                                       replicas.coordinator, "describe",
                                       "--job", "described"]))),
                           threading.Thread(target=lambda: probes.__setitem__(
                               "cpp", timed([f"{bin_dir}/shard-client-probe",
                                             "--coordinator",
                                             replicas.coordinator, "--call",
                                             "GetJob", "--retry-deadline",
                                             "60s"])))]
                for thread in threads:
                    thread.start()
                if replicas.leader(deadline_s=60, skip=(leader,)) is None:
                    sys.exit(f"no new leader after a {how}")
                served = time.monotonic() - began
                for thread in threads:
                    thread.join()
                if how == "term":
                    replicas.wait(leader)
                if how == "stop":
                    # Thawed past its lease: it finds itself deposed.
                    time.sleep(replicas.lease_s)
                    replicas.signal(leader, signal.SIGCONT)
                else:
                    replicas.start(leader)
                events.append({"how": how, "at": began, "served": served,
                               **probes})
                progress(f"{how} {k + 1}/{count}: served after {served:.2f} "
                         f"s, shardctl {probes['shardctl'] or 0:.2f} s, C++ "
                         f"{probes['cpp'] or 0:.2f} s")
        time.sleep(1.0)
        ends = [e["at"] for e in events[1:]] + [time.monotonic()]
        watch.stop()
        for event, end in zip(events, ends):
            event["python"] = stall(watch.acknowledged_at, event["at"], end)
            event["stream"] = stall(watch.chunk_at, event["at"], end)
        lost = watch.lost()
        watch.client.close()
        figures = {}
        for how, _ in rounds:
            mine = [e for e in events if e["how"] == how]
            figures[how] = {key: summary([e[key] for e in mine])
                            for key in ("served", "shardctl", "cpp",
                                        "python", "stream")}
        return {"figures": figures,
                "pauses": sum(n for how, n in rounds if how == "stop"),
                "acknowledged": len(watch.acknowledged), "lost": len(lost),
                "failed_calls": len(watch.errors),
                "failures": watch.errors[:5]}
    return run


def footprint(bin_dir, members, commits, rate):
    def run(replicas, etcd):
        leader = replicas.leader()
        seconds = max(10, int(commits / max(rate, 1.0) * 1.25))
        progress(f"footprint: {seconds} s of commits at about {rate:.0f}/s")
        result = run_client(bin_dir, "shard-commit-throughput-bench",
                            replicas.addresses[leader], replicas.pid(leader),
                            "members", members, ["--seconds", str(seconds)])
        time.sleep(2.0)
        status = json.loads(etcd.etcdctl("endpoint", "status", "-w", "json"))
        keys = etcd.etcdctl("get", "--prefix", "/shard/", "--keys-only")
        return {"commits": int(result["commits_per_s"] * seconds),
                "db_bytes": max(s["Status"]["dbSize"] for s in status),
                "db_in_use_bytes": max(s["Status"].get("dbSizeInUse", 0)
                                       for s in status),
                "keys": len([k for k in keys.splitlines() if k.strip()])}
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--joins", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--terms", type=int, default=20)
    parser.add_argument("--pauses", type=int, default=5)
    parser.add_argument("--leases", type=lambda v: [float(x) for x in
                                                     v.split(",")],
                        default=[2.0, 5.0],
                        help="leader leases to measure failovers with, s")
    parser.add_argument("--commits", type=int, default=1000000)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    bin_dir = args.bin_dir
    work = tempfile.mkdtemp(prefix="shard-replication-bench-")

    commit = ["--seconds", str(args.seconds)]
    progress("commits, local journal")
    journal_commits = load_on_journal(
        bin_dir, "shard-commit-throughput-bench", "members", args.members,
        commit)
    progress("commits, etcd")
    etcd_commits = with_replicas(bin_dir, work, load_on_leader(
        bin_dir, "shard-commit-throughput-bench", "members", args.members,
        commit))
    progress("join storm, local journal")
    journal_storm = load_on_journal(bin_dir, "shard-join-storm-bench",
                                    "joins", args.joins)
    progress("join storm, etcd")
    etcd_storm = with_replicas(bin_dir, work, load_on_leader(
        bin_dir, "shard-join-storm-bench", "joins", args.joins))
    failed_over = {}
    for lease in args.leases:
        progress(f"failovers, lease {lease:g} s")
        failed_over[lease] = with_replicas(
            bin_dir, work, failovers(bin_dir, [("kill", args.kills),
                                               ("term", args.terms),
                                               ("stop", args.pauses)]),
            lease_s=lease)
        progress(json.dumps(failed_over[lease]))
    progress("etcd footprint")
    # The benchmark's members commit without heartbeats: a member lease
    # longer than the run keeps them joined.
    size = with_replicas(bin_dir, work, footprint(
        bin_dir, args.members, args.commits, etcd_commits["commits_per_s"]),
        extra_args=["--lease", "1h"])
    progress(json.dumps(size))

    jc, ec = journal_commits, etcd_commits
    print(f"\n| {args.members} members committing | local journal | etcd "
          "(3 members) + 3 replicas | etcd / journal |")
    print("| --- | --- | --- | --- |")
    print(f"| commits/s | {jc['commits_per_s']:.0f} | "
          f"{ec['commits_per_s']:.0f} | "
          f"{ec['commits_per_s'] / jc['commits_per_s']:.2f} |")
    print(f"| commit p50 / p99 | {jc['commit_p50_ms']:.1f} / "
          f"{jc['commit_p99_ms']:.1f} ms | {ec['commit_p50_ms']:.1f} / "
          f"{ec['commit_p99_ms']:.1f} ms | |")
    print(f"| join storm of {args.joins}: all answered | "
          f"{journal_storm['form_s']:.2f} s | {etcd_storm['form_s']:.2f} s | "
          f"{etcd_storm['form_s'] / journal_storm['form_s']:.2f} |")
    print("\n| failover: leader stopped -> answered, p50 / p99 / max "
          "(s) | kill -9 | SIGTERM | SIGSTOP |")
    print("| --- | --- | --- | --- |")
    names = {"served": "first call another replica serves",
             "shardctl": "`shardctl describe`, started at the stop",
             "cpp": "C++ client call, started at the stop",
             "python": "longest wait between two creates of the Python "
                       "client",
             "stream": "longest wait between two chunks a Python stream "
                       "reader gets"}
    for lease, f in failed_over.items():
        for key, name in names.items():
            cells = []
            for how in ("kill", "term", "stop"):
                v = f["figures"][how][key]
                cells.append(f"{v['p50']:.2f} / {v['p99']:.2f} / "
                             f"{v['max']:.2f} ({v['n']})")
            print(f"| lease {lease:g} s: {name} | {' | '.join(cells)} |")
    print("\n| failovers | acknowledged creates / lost / calls failed |")
    print("| --- | --- |")
    for lease, f in failed_over.items():
        print(f"| lease {lease:g} s, {args.kills} kills, {args.terms} "
              f"SIGTERMs, {f['pauses']} SIGSTOP rounds | "
              f"{f['acknowledged']} / {f['lost']} / {f['failed_calls']} |")
    print("\n| etcd footprint | value |")
    print("| --- | --- |")
    print(f"| etcd after {size['commits']} commits (snapshot every 10000 "
          f"records): database / in use / keys | "
          f"{size['db_bytes'] / 2**20:.1f} MiB / "
          f"{size['db_in_use_bytes'] / 2**20:.1f} MiB / {size['keys']} |")
    if any(f["lost"] for f in failed_over.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
