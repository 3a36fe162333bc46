#!/usr/bin/python3
"""Clients reach a coordinator restarted under them, whatever they did when
it went away.

shardd (--data-dir) is SIGKILLed and started again 0.1 s later on the same
address, RUNS times. At each kill a client starts a call with a retry
deadline of 3 s: `shardctl status` (the C++ client), the Python client's
get_job(), and a Python stream of rank 0's shard opened before the kill and
read across it. Each must get its answer within its retry budget: the
coordinator was away for 0.1 s. (A lost connection once made gRPC wait for
a new name resolution, no sooner than 30 s after the last one, capped at
about 5 s in practice: every one of these calls failed UNAVAILABLE.)
Exit status 0 when every check passes.
"""
import subprocess
import sys
import threading
import time

from harness import ShardDaemon, check, exit_code, parse_args

RUNS = 3
RETRY_DEADLINE_S = 3


def restart_under(daemon, call):
    """Runs `call()` on a thread started at the kill; restarts the daemon
    0.1 s later. Returns (call's result or exception, seconds from the
    restarted daemon serving to the answer)."""
    outcome = {}

    def run():
        try:
            outcome["result"] = call()
        except Exception as error:  # noqa: BLE001 - reported by the caller
            outcome["result"] = error
        outcome["at"] = time.monotonic()

    daemon.kill()
    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(0.1)
    daemon.restart()
    serving = time.monotonic()
    caller.join(timeout=60)
    return outcome.get("result"), outcome.get("at", float("inf")) - serving


def main():
    args = parse_args(__doc__)
    import shard
    with ShardDaemon(args.bin_dir) as daemon:
        with shard.Client(daemon.address) as creator:
            creator.create_job("j", shard.job_spec(10 ** 6, 1))
        client = shard.Client(daemon.address, retry_deadline=RETRY_DEADLINE_S)
        member = client.join("j", "m0", progress=None)
        heartbeat = client.start_heartbeat(member, interval=1.0)

        def shardctl_status():
            return subprocess.run(
                [f"{args.bin_dir}/shardctl", "--coordinator", daemon.address,
                 "--retry-deadline", f"{RETRY_DEADLINE_S}s", "status"],
                capture_output=True, text=True, timeout=60)

        for run in range(RUNS):
            done, after = restart_under(daemon, shardctl_status)
            listed = [line.split()[0] for line in done.stdout.splitlines()
                      if line.strip()]
            check(done.returncode == 0 and "j" in listed,
                  f"run {run}: shardctl status answered {after:.2f} s after "
                  f"the restart (exit {done.returncode}: "
                  f"{done.stderr.strip()[:120]})")
            job, after = restart_under(daemon, lambda: client.get_job("j"))
            check(getattr(job, "job_id", None) == "j",
                  f"run {run}: the Python client's get_job answered "
                  f"{after:.2f} s after the restart ({job!r:.120})")
            stream = client.stream(member, run, 0, prefetch_bytes=1 << 12,
                                   chunk_indices=256)
            first = next(stream)

            def rest_of_shard():
                return len(first) + sum(len(chunk) for chunk in stream)

            got, after = restart_under(daemon, rest_of_shard)
            stream.close()
            check(got == 10 ** 6,
                  f"run {run}: a Python stream read across the restart gets "
                  f"its whole shard ({got!r:.120}), done {after:.2f} s after "
                  f"the restart")
        heartbeat.stop()
        client.close()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
