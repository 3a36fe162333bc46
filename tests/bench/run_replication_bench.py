#!/usr/bin/python3
"""The replicated coordinator (3 etcd members + 3 shardd replicas on this
machine, loopback) against one shardd on a local journal, side by side in
one run. Prints a Markdown table.

1. Commit throughput: shard-commit-throughput-bench with M members
   (each committing in a closed loop) against the journal's shardd and
   against the replicas' leader.
2. Join storm: shard-join-storm-bench with W ranks joining at once, on
   each store.
3. Failovers: while a writer creates a job after another (each create is
   acknowledged only once durable), the leader is SIGKILLed K times
   (restarted as a standby each time) and SIGSTOPped past its lease P
   times; reports the time from each kill to the first call a new leader
   serves (p50/p99/max), the time from each kill to the next create the
   writer (the Python client, through the address list) completes, and how
   many acknowledged jobs are missing at the end (must be 0).
4. etcd's footprint: commits in a closed loop until about N commits
   (snapshots every 10000 records, compaction after each; a member lease
   of 1 h, since the benchmark's members do not heartbeat); reports etcd's
   database size and the part in use, and the keys under the prefix.

  tests/bench/run_replication_bench.py --bin-dir build/bin --python-dir
      build/python [--members 1000] [--joins 1000] [--seconds 10]
      [--kills 20] [--pauses 5] [--commits 1000000]
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


def with_replicas(bin_dir, work, run, extra_args=()):
    """Runs `run(replicas, etcd)` on a fresh etcd cluster and 3 replicas
    (snapshots every 10000 records, shardd's default)."""
    from replicated_coordinator import EtcdCluster, Replicas
    with EtcdCluster() as etcd, Replicas(
            bin_dir, etcd, work, lease=f"{LEASE_S:.0f}s",
            snapshot_every=10000, extra_args=extra_args) as replicas:
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


def failovers(kills, pauses):
    def run(replicas, _):
        import shard
        client = shard.Client(replicas.coordinator, retry_deadline=60)
        acknowledged = []
        acknowledged_at = []  # time.monotonic() of each acknowledgement.
        errors = []
        stop = threading.Event()

        def writer():
            n = 0
            while not stop.is_set():
                job = f"ack-{n}"
                try:
                    client.create_job(job, shard.job_spec(100, 1))
                    acknowledged.append(job)
                    acknowledged_at.append(time.monotonic())
                except Exception as error:  # noqa: BLE001 (reported)
                    errors.append(f"{job}: {error}")
                n += 1

        thread = threading.Thread(target=writer)
        thread.start()
        times = []
        killed_at = []
        for k in range(kills):
            time.sleep(1.0)
            leader = replicas.leader()
            replicas.kill(leader)
            began = time.monotonic()
            killed_at.append(began)
            if replicas.leader(deadline_s=60, skip=(leader,)) is None:
                sys.exit("no new leader after a kill")
            times.append(time.monotonic() - began)
            replicas.start(leader)
            progress(f"kill {k + 1}/{kills}: {times[-1]:.2f} s")
        for p in range(pauses):
            time.sleep(1.0)
            leader = replicas.leader()
            replicas.signal(leader, signal.SIGSTOP)
            if replicas.leader(deadline_s=60, skip=(leader,)) is None:
                sys.exit("no new leader after a pause")
            time.sleep(LEASE_S)
            replicas.signal(leader, signal.SIGCONT)
            progress(f"pause {p + 1}/{pauses}")
        time.sleep(1.0)
        stop.set()
        thread.join()
        lost = []
        for job in acknowledged:
            try:
                client.get_job(job)
            except shard.errors.NotFoundError:
                lost.append(job)
        client.close()
        # As the client sees it: from each kill to the next create the
        # writer had acknowledged (its retries and backoff included).
        seen = [min((t for t in acknowledged_at if t > k), default=None)
                for k in killed_at]
        client_times = [t - k for t, k in zip(seen, killed_at)
                        if t is not None]
        return {"kills": kills, "pauses": pauses,
                "p50_s": statistics.median(times),
                "p99_s": percentile(times, 0.99), "max_s": max(times),
                "client_p50_s": statistics.median(client_times),
                "client_p99_s": percentile(client_times, 0.99),
                "client_max_s": max(client_times),
                "acknowledged": len(acknowledged), "lost": len(lost),
                "failed_calls": len(errors), "failures": errors[:5]}
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
    parser.add_argument("--pauses", type=int, default=5)
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
    progress("failovers")
    failed_over = with_replicas(bin_dir, work,
                                failovers(args.kills, args.pauses))
    progress(json.dumps(failed_over))
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
    f = failed_over
    print(f"\n| failovers (lease {LEASE_S:.0f} s) | value |")
    print("| --- | --- |")
    print(f"| kill -9 of the leader to the first served call, p50 / p99 / "
          f"max over {f['kills']} | {f['p50_s']:.2f} / {f['p99_s']:.2f} / "
          f"{f['max_s']:.2f} s |")
    print(f"| kill -9 of the leader to the next create the Python client "
          f"completes through the address list, p50 / p99 / max over "
          f"{f['kills']} | {f['client_p50_s']:.2f} / "
          f"{f['client_p99_s']:.2f} / {f['client_max_s']:.2f} s |")
    print(f"| acknowledged creates during {f['kills']} kills and "
          f"{f['pauses']} SIGSTOP rounds / lost / calls failed | "
          f"{f['acknowledged']} / {f['lost']} / {f['failed_calls']} |")
    print(f"| etcd after {size['commits']} commits (snapshot every 10000 "
          f"records): database / in use / keys | "
          f"{size['db_bytes'] / 2**20:.1f} MiB / "
          f"{size['db_in_use_bytes'] / 2**20:.1f} MiB / {size['keys']} |")
    if f["lost"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
