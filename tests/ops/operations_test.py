#!/usr/bin/python3
"""Operating a real shardd: metrics, bearer token, shardctl admin, drain.

Starts shardd with --metrics-listen, --auth-token-file and
--admin-token-file, then checks:
- GET / on the metrics port names /metrics and /healthz; /healthz answers
  200 with what the reference says: the HTTP endpoint's own exposer_*
  counters and no coordinator metric;
- /metrics passes `promtool check metrics`, has the job gauges (labelled
  job_id), RPC histograms by method and code, journal fsync latency and
  group sizes, waiting calls, store bytes, process_* and build info, and a
  scrape succeeds while idle connections are open;
- streaming N indices moves shard_indices_streamed_total by exactly N;
- shardctl without the token, or with a wrong one, gets UNAUTHENTICATED,
  and the token appears in no log, no output and no metric;
- shardctl status / describe / delete-job in table and JSON form;
  delete-job and drain with the trainers' token get PERMISSION_DENIED
  naming --admin-token-file, with the admin token they work;
- shardctl retrying an unreachable coordinator says so about every 5 s;
- shardctl health: a line per endpoint, exit 0 when all are SERVING and 1
  with an endpoint down;
- shardctl drain makes the daemon exit 0 on its own.
Exit status 0 when every check passes.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

TOKEN = "ops-test-token-7f3a9c"
ADMIN_TOKEN = "ops-admin-token-51be02"
RESULTS = {"passed": 0, "failed": 0}


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + what, flush=True)


def scrape(address):
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
        return r.read().decode()


def sample(text, name, **labels):
    """The value of one sample, or None."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$",
                         line)
        if not match or match.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', match.group(3) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(match.group(4))
    return None


def check_a_held_job(ctl, shardctl, daemon, token_file, admin_file):
    """A consumer waiting for a world of 2: the job holds 2 ranks (the
    waiting-call limit and the heartbeat pace count them) and delete-job
    refuses it without --force."""
    ctl("create-job", "--job", "held", "--size", "10", "--world-size", "2")
    waiting = subprocess.Popen(
        [shardctl, "--coordinator", daemon.address, "--auth-token-file",
         token_file, "consume", "--job", "held", "--member", "w0", "--wait",
         "60s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not re.search(
                r"^held\s+10\s+0/2\s.*\s1\s+0\s*$", ctl("status").stdout,
                re.M):
            time.sleep(0.1)
        held = scrape(daemon.metrics_address)
        check(sample(held, "shard_waiting_calls_limit") == 10000 + 2 * 2,
              "shard_waiting_calls_limit is --max-waiting-calls plus 2 per "
              "rank held (a world of 2 forming)")
        pace = sample(held, "shard_heartbeat_pace_seconds")
        check(pace is not None and abs(pace - 2 / 15000) < 1e-9,
              "shard_heartbeat_pace_seconds is the ranks held over "
              "--max-heartbeat-rate (2 / 15,000)")
        refused = ctl("delete-job", "--job", "held", token=admin_file,
                      ok=False)
        check(refused.returncode == 1 and "FAILED_PRECONDITION" in
              refused.stderr, "delete-job refuses a job with members")
    finally:
        waiting.kill()
        waiting.wait()
    ctl("delete-job", "--job", "held", "--force", token=admin_file)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shard-ops-")
    token_file = os.path.join(work, "token")
    wrong_file = os.path.join(work, "wrong")
    admin_file = os.path.join(work, "admin")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    with open(wrong_file, "w") as f:
        f.write("not-" + TOKEN + "\n")
    with open(admin_file, "w") as f:
        f.write(ADMIN_TOKEN + "\n")
    for secret in (token_file, wrong_file, admin_file):
        os.chmod(secret, 0o600)
    log_path = os.path.join(work, "shardd.log")
    shardctl = f"{args.bin_dir}/shardctl"
    outputs = []

    with ShardDaemon(args.bin_dir, "--metrics-listen", "127.0.0.1:0",
                     "--auth-token-file", token_file, "--admin-token-file",
                     admin_file, "--shutdown-grace", "3s",
                     log_path=log_path) as daemon:
        with urllib.request.urlopen(f"http://{daemon.metrics_address}/",
                                    timeout=10) as r:
            index = r.read().decode()
        check("/metrics" in index and "/healthz" in index,
              f"GET / on the metrics port names its endpoints {index!r}")
        with urllib.request.urlopen(
                f"http://{daemon.metrics_address}/healthz", timeout=10) as r:
            body = r.read().decode()
            check(r.status == 200 and "exposer_scrapes_total" in body and
                  "shard_" not in body,
                  f"GET /healthz answers {r.status} with the endpoint's own "
                  f"counters only ({len(body)} bytes)")

        def ctl(*argv, token=token_file, ok=True):
            cmd = [shardctl, "--coordinator", daemon.address,
                   "--retry-deadline", "0s"]
            if token:
                cmd += ["--auth-token-file", token]
            done = subprocess.run(cmd + list(argv), capture_output=True,
                                  text=True, timeout=120)
            outputs.append(done.stdout + done.stderr)
            if ok and done.returncode != 0:
                raise RuntimeError(f"{argv}: {done.stderr}")
            return done

        missing = ctl("status", token=None, ok=False)
        check(missing.returncode == 1 and "UNAUTHENTICATED" in missing.stderr,
              "shardctl without a token gets UNAUTHENTICATED")
        wrong = ctl("status", token=wrong_file, ok=False)
        check(wrong.returncode == 1 and "UNAUTHENTICATED" in wrong.stderr,
              "shardctl with a wrong token gets UNAUTHENTICATED")

        before = scrape(daemon.metrics_address)
        streamed_before = sample(before, "shard_indices_streamed_total") or 0
        ctl("create-job", "--job", "ops", "--size", "1001", "--world-size",
            "2")
        procs = [subprocess.Popen(
            [shardctl, "--coordinator", daemon.address, "--auth-token-file",
             token_file, "consume", "--job", "ops", "--member", f"m{r}",
             "--epochs", "2"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True) for r in range(2)]
        lines = 0
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            outputs.append(out + err)
            check(proc.returncode == 0, f"consume exits 0 ({err.strip()})")
            lines += len(out.splitlines())
        after = scrape(daemon.metrics_address)
        streamed = sample(after, "shard_indices_streamed_total")
        check(lines == 2 * 1002 and streamed - streamed_before == lines,
              f"streaming {lines} indices moved the counter by "
              f"{streamed - streamed_before}")

        promtool = subprocess.run(["promtool", "check", "metrics"],
                                  input=after, capture_output=True, text=True)
        check(promtool.returncode == 0,
              "promtool check metrics passes "
              f"({(promtool.stdout + promtool.stderr).strip() or 'clean'})")
        check(sample(after, "shard_jobs") == 1, "shard_jobs is 1")
        check(sample(after, "shard_job_members", job_id="ops") == 0,
              "shard_job_members{job_id=ops} is 0 once the consumers left")
        check(sample(after, "shard_job_generation", job_id="ops") == 1,
              "shard_job_generation{job_id=ops} is 1")
        check(sample(after, "shard_rpc_duration_seconds_count",
                     service="shard.v1.Coordinator", method="ListJobs",
                     code="UNAUTHENTICATED") == 2,
              "RPC histogram counts the 2 refused ListJobs by code")
        check((sample(after, "shard_rpc_duration_seconds_count",
                      method="StreamShard", code="OK") or 0) >= 4,
              "RPC histogram counts the streams")
        check((sample(after, "shard_journal_fsync_duration_seconds_count")
               or 0) >= 1, "journal fsync latency is recorded")
        check(sample(after, "shard_build_info", version="0.1.0") == 1,
              "shard_build_info is exported")
        check(not re.search(r'(rank|member)="', after),
              "no per-rank or per-member labels")
        for name in ("process_cpu_seconds_total",
                     "process_resident_memory_bytes", "process_open_fds",
                     "process_max_fds", "process_start_time_seconds",
                     "process_threads"):
            check((sample(after, name) or 0) > 0, f"{name} is exported")
        check(sample(after, "shard_waiting_calls", method="JoinJob") == 0,
              "shard_waiting_calls{method=JoinJob} is 0 at rest")
        check(sample(after, "shard_active_streams") == 0,
              "shard_active_streams is 0 once the streams ended")
        check(sample(after, "shard_waiting_calls_limit") == 10000,
              "shard_waiting_calls_limit is --max-waiting-calls once the "
              "consumers left (no rank held)")
        check(sample(after, "shard_heartbeat_pace_seconds") == 0,
              "shard_heartbeat_pace_seconds is 0 with no rank held")
        check(sample(after, "shard_store_bytes") == 0 and
              sample(after, "shard_store_bytes_limit") == 256 << 20,
              "rendezvous store bytes and budget are exported")
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        for path in ("/sys/fs/cgroup/memory.max",
                     "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            try:
                memory = min(memory, int(open(path).read()))
            except (OSError, ValueError):
                pass  # absent, or "max"
        half_memory = memory // 2
        check(0 < (sample(after, "shard_order_cache_bytes") or 0) and
              sample(after, "shard_order_cache_bytes_limit") == half_memory
              and sample(after, "shard_order_cache_evictions_total") == 0,
              "epoch order bytes, their budget (half the memory by default) "
              "and evictions are exported")
        holds = sample(after, "shard_core_lock_hold_seconds_count") or 0
        longest = sample(after, "shard_core_lock_hold_max_seconds") or 0
        check(holds >= 6 and 0 < longest < 10 and
              sample(after, "shard_core_lock_hold_seconds_bucket",
                     le="+Inf") == holds,
              "the core's lock hold times are exported (a histogram of "
              f"{holds:.0f} holds, the longest {longest * 1000:.2f} ms)")
        check((sample(after, "shard_journal_group_records_sum") or 0) >= 4,
              "journal groups account for the job, 2 joins and the world")
        # Idle connections that never send a request must not hold off a
        # scrape (the endpoint's workers and request timeout).
        host, port = daemon.metrics_address.rsplit(":", 1)
        idle = [socket.create_connection((host, int(port)), timeout=10)
                for _ in range(8)]
        try:
            check(sample(scrape(daemon.metrics_address), "shard_jobs") == 1,
                  "a scrape succeeds next to 8 idle connections")
        finally:
            for conn in idle:
                conn.close()
        outputs.append(after)

        table = ctl("status").stdout
        check(re.search(r"^ops\s+1001\s+0/2\s+0\s+torch-2\.6\s+pad\s+0\s+0"
                        r"\s+0\s+1\b", table, re.M) is not None,
              f"status table shows the job, its consumers gone:\n{table}")
        jobs = json.loads(ctl("status", "--output", "json").stdout)["jobs"]
        check(len(jobs) == 1 and jobs[0]["jobId"] == "ops"
              and jobs[0]["spec"]["datasetSize"] == "1001",
              "status --output json parses and holds the job")
        described = ctl("describe", "--job", "ops").stdout
        check("dataset size:" in described and "generation:" in described,
              "describe prints the job")
        described_json = json.loads(
            ctl("describe", "--job", "ops", "--output", "json").stdout)
        check(described_json["jobId"] == "ops", "describe --output json")
        check_a_held_job(ctl, shardctl, daemon, token_file, admin_file)
        member = ctl("delete-job", "--job", "ops", "--force", ok=False)
        check(member.returncode == 1 and "PERMISSION_DENIED" in
              member.stderr and "--admin-token-file" in member.stderr,
              f"delete-job with the trainers' token: PERMISSION_DENIED "
              f"({member.stderr.strip()})")
        ctl("delete-job", "--job", "ops", token=admin_file)
        gone = ctl("describe", "--job", "ops", ok=False)
        check(gone.returncode == 1 and "NOT_FOUND" in gone.stderr,
              "a deleted job is NOT_FOUND")

        healthy = ctl("health")
        check(healthy.returncode == 0 and re.fullmatch(
                  rf"{re.escape(daemon.address)} is healthy: SERVING "
                  r"\(took [0-9.]+[mu]?s\)\n", healthy.stdout),
              f"shardctl health: one line, healthy ({healthy.stdout!r})")
        alive = ctl("health", "--service", "liveness")
        check(alive.returncode == 0 and "is healthy: SERVING" in alive.stdout,
              "shardctl health --service liveness")
        mixed = subprocess.run(
            [shardctl, "--coordinator", f"{daemon.address},127.0.0.1:1",
             "--timeout", "5s", "health"],
            capture_output=True, text=True, timeout=60)
        health_lines = mixed.stdout.splitlines()
        check(mixed.returncode == 1 and len(health_lines) == 2 and
              health_lines[0].startswith(
                  f"{daemon.address} is healthy: SERVING") and
              health_lines[1].startswith(
                  "127.0.0.1:1 is unhealthy: UNAVAILABLE") and
              "1 of 2 endpoints unhealthy" in mixed.stderr,
              f"shardctl health with one endpoint down: a line each, exit 1 "
              f"({mixed.stdout!r} {mixed.stderr!r})")

        began = time.monotonic()
        unreachable = subprocess.run(
            [shardctl, "--coordinator", "127.0.0.1:1", "--retry-deadline",
             "12s", "status"], capture_output=True, text=True, timeout=60)
        took = time.monotonic() - began
        reports = [line for line in unreachable.stderr.splitlines()
                   if line.startswith("shardctl: coordinator 127.0.0.1:1 "
                                      "unavailable (") and
                   "retrying for " in line]
        # A line before each pause that ends 5 s or more after the
        # previous one: 1 to 4 of them in 12 s.
        check(unreachable.returncode == 1 and 1 <= len(reports) <= 4 and
              took >= 5,
              f"shardctl says it retries an unreachable coordinator, about "
              f"every 5 s ({len(reports)} lines in {took:.1f} s: "
              f"{unreachable.stderr[-600:]!r})")

        member = ctl("drain", ok=False)
        check(member.returncode == 1 and "PERMISSION_DENIED" in member.stderr,
              "drain with the trainers' token: PERMISSION_DENIED")
        drained = ctl("drain", token=admin_file)
        check("draining" in drained.stdout, "drain with the admin token")
        try:
            code = daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"the daemon exits 0 after drain (got {code})")

    with open(log_path) as f:
        log = f.read()
    outputs.append(log)
    check("drain requested" in log, "the drain is logged")
    check(all(TOKEN not in text and ADMIN_TOKEN not in text
              for text in outputs),
          "the tokens appear in no log, output or metric")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
