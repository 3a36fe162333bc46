#!/usr/bin/python3
"""The costs of balanced-batch jobs: memory given back, uploads that
survive a coordinator killed under them.

1. With --max-cost-bytes 1000000 (one upload of 100,000 costs staged, 400 KB,
   and one resident table, 200 KB), five jobs one after another, each over
   other costs, are created and deleted: every upload is accepted, and
   shard_cost_bytes falls back to 0 after each delete (the metric as an
   operator scrapes it).
2. The Python client's upload (3 pieces) is cut by a kill -9 of shardd after
   its first piece; shardd restarts on its data directory; put_costs goes
   on by itself and the job is created over the costs. shardd
   --check-data-dir then passes the directory, and fails it (exit 3, naming
   the job) once the costs are damaged, then once they are missing.
3. shardctl create-job --costs (16 pieces) while shardd is killed -9
   mid-upload (seen by shard_cost_bytes) and restarted: shardctl ends with
   the job created.
4. With --replicated, on 3 etcd members and 3 replicas: the Python upload
   cut by a kill -9 of the leader after its first piece goes on with the
   new leader, and the job is created.
Exit status 0 when every check passes.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

from harness import ShardDaemon, check, exit_code, parse_args

PIECE = 262144  # costs in one PutCosts piece


def costs_of(seed, count):
    """`count` costs below 65,536 (2 bytes resident), other for each seed."""
    return [1 + (i * 7 + seed * 13) % 5000 for i in range(count)]


def cost_bytes(daemon):
    with urllib.request.urlopen(
            f"http://{daemon.metrics_address}/metrics", timeout=5) as page:
        text = page.read().decode()
    match = re.search(r"^shard_cost_bytes (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def spec_over(shard, digest, size):
    return shard.job_spec(size, 1, costs_sha256=digest, batch_tokens=100000)


def check_memory_comes_back(bin_dir):
    import shard
    with ShardDaemon(bin_dir, "--max-cost-bytes", "1000000",
                     "--metrics-listen", "127.0.0.1:0") as daemon, \
            shard.Client(daemon.address) as client:
        for job in range(5):
            try:
                digest = client.put_costs(costs_of(job, 100000))
                client.create_job(f"j{job}", spec_over(shard, digest, 100000))
            except shard.ShardError as error:
                check(False, f"job {job} of 5 over other costs: {error}")
                return
            client.delete_job(f"j{job}")
            check(cost_bytes(daemon) == 0,
                  f"job {job}: shard_cost_bytes 0 after its delete "
                  f"({cost_bytes(daemon)})", quiet=job < 4)


def upload_cut_after_first_piece(client, values, kill):
    """put_costs(values) with `kill()` run once its first piece is
    answered; returns the digest."""
    real_call = client._call
    pieces = []

    def call(method, request, *args, **kwargs):
        answer = real_call(method, request, *args, **kwargs)
        if method == "PutCosts":
            pieces.append(request.offset)
            if len(pieces) == 1:
                kill()
        return answer

    client._call = call
    try:
        return client.put_costs(values), pieces
    finally:
        client._call = real_call


def check_cut_upload(address, values, kill, what):
    """put_costs(values) cut by `kill()` after its first piece starts again
    from 0 and the job is created over the costs; returns their digest."""
    import shard
    with shard.Client(address) as client:
        try:
            digest, pieces = upload_cut_after_first_piece(client, values, kill)
            job = client.create_job("cut", spec_over(shard, digest,
                                                     len(values)))
        except shard.ShardError as error:
            check(False, f"the upload across {what}: {error}")
            return None
        check(pieces[:3] == [0, PIECE, 0] and
              job.spec.batches.costs_sha256 == digest,
              f"the upload cut by {what} starts again from 0 and the job "
              f"is created (pieces sent at {pieces})")
        return digest


def check_python_upload_across_restart(bin_dir):
    with ShardDaemon(bin_dir) as daemon:
        values = costs_of(1, 3 * PIECE)

        def restart():
            daemon.kill()
            daemon.restart()

        digest = check_cut_upload(daemon.address, values, restart,
                                  "a kill -9 of shardd")
        daemon.kill()
        if digest:
            check_data_dir_checks_costs(bin_dir, daemon.data_dir, digest)


def check_data_dir_checks_costs(bin_dir, data_dir, digest):
    """shardd --check-data-dir passes the job's costs whole, and fails
    (exit 3, naming the job) when they are damaged or missing."""
    path = os.path.join(data_dir, "costs", f"{digest}.u32")

    def checked():
        run = subprocess.run([os.path.join(bin_dir, "shardd"),
                              "--check-data-dir", data_dir],
                             capture_output=True, text=True)
        return run.returncode, run.stdout

    code, out = checked()
    check(code == 0 and "1 of 1 sets the jobs name are sound" in out,
          f"--check-data-dir passes whole costs: {out.strip()}")
    with open(path, "r+b") as costs:
        costs.seek(1000)
        byte = costs.read(1)
        costs.seek(1000)
        costs.write(bytes([byte[0] ^ 1]))
    code, out = checked()
    check(code == 3 and "job cut: costs" in out and "DATA_LOSS" in out,
          f"--check-data-dir fails damaged costs (exit {code}): "
          f"{out.strip()[-300:]}")
    os.remove(path)
    code, out = checked()
    check(code == 3 and "job cut: costs" in out and "NOT_FOUND" in out,
          f"--check-data-dir fails missing costs (exit {code}): "
          f"{out.strip()[-300:]}")


def check_shardctl_upload_across_restart(bin_dir):
    import numpy as np
    shardctl = os.path.join(bin_dir, "shardctl")
    count = 16 * PIECE
    with ShardDaemon(bin_dir, "--metrics-listen", "127.0.0.1:0") as daemon, \
            tempfile.TemporaryDirectory() as work:
        for attempt in range(3):
            path = os.path.join(work, f"costs{attempt}.npy")
            np.save(path, np.array(costs_of(10 + attempt, count),
                                   dtype=np.uint16))
            upload = subprocess.Popen(
                [shardctl, "--coordinator", daemon.address, "create-job",
                 "--job", f"ctl{attempt}", "--size", str(count),
                 "--world-size", "1", "--costs", path, "--batch-tokens",
                 "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
            held = 0
            deadline = time.monotonic() + 30
            while not held and upload.poll() is None and \
                    time.monotonic() < deadline:
                held = cost_bytes(daemon) or 0
            daemon.kill()
            daemon.restart()
            out, err = upload.communicate(timeout=120)
            if 0 < held < 4 * count:
                check(upload.returncode == 0 and f"ctl{attempt}" in out,
                      f"shardctl create-job --costs killed mid-upload "
                      f"({int(held)} of {4 * count} bytes staged) ends with "
                      f"the job: {out.strip()[-200:]} {err.strip()[-300:]}")
                return
        check(False, "shardd was killed mid-upload in one of 3 attempts")


def check_upload_across_failover(bin_dir):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "e2e"))
    from replicated_coordinator import EtcdCluster, Replicas
    with tempfile.TemporaryDirectory() as work, EtcdCluster() as etcd, \
            Replicas(bin_dir, etcd, work) as replicas:
        leader = replicas.leader(deadline_s=60)
        check(leader is not None, "a replica leads")
        values = costs_of(2, 3 * PIECE)
        check_cut_upload(replicas.coordinator, values,
                         lambda: replicas.kill(leader),
                         "the leader's kill -9")


def main():
    args = parse_args(__doc__, lambda p: p.add_argument(
        "--replicated", action="store_true"))
    if args.replicated:
        check_upload_across_failover(args.bin_dir)
        return exit_code()
    check_memory_comes_back(args.bin_dir)
    check_python_upload_across_restart(args.bin_dir)
    check_shardctl_upload_across_restart(args.bin_dir)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
