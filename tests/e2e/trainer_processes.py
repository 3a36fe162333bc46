"""Shared by the end-to-end trainer tests: shard-train processes and what
they logged, and the coordinator's plan to compare it with."""
import os
import subprocess


def start_trainers(cmds, work, tag):
    """Starts one process per command, its output in WORK/TAG-i.out."""
    procs = []
    for i, cmd in enumerate(cmds):
        out = open(os.path.join(work, f"{tag}-{i}.out"), "w")
        procs.append((subprocess.Popen(cmd, stdout=out,
                                       stderr=subprocess.STDOUT), out))
    return procs


def finish(procs, timeout=300):
    """Waits for the trainers; one still running after `timeout` seconds is
    killed (its exit status is then negative) so its output gets reported.
    Returns [(exit status, output)]."""
    outputs = []
    for proc, out in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()
        outputs.append((proc.returncode, open(out.name).read()))
    return outputs


def plan(bin_dir, address, job, epoch, rank):
    """The rank's indices of the epoch, from `shardctl plan`."""
    out = subprocess.run([f"{bin_dir}/shardctl", "--coordinator", address,
                          "plan", "--job", job, "--epoch", str(epoch),
                          "--rank", str(rank)],
                         check=True, capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def read_log(path):
    """{(epoch, rank): [indices in training order]} from --log-indices."""
    logged = {}
    if os.path.exists(path):
        for line in open(path):
            epoch, rank, index = map(int, line.split())
            logged.setdefault((epoch, rank), []).append(index)
    return logged
