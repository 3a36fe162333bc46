"""Shared by the benchmark runners that drive shardd through the Python
client and compare this build's shardd with a baseline build's."""
import threading


def join_world(client, job, world_size):
    """The job's `world_size` members ("m0", "m1", ...), joined at once
    (each waits for the world); rank 0 first."""
    members = [None] * world_size

    def join(i):
        members[i] = client.join(job, f"m{i}", wait=120)
    threads = [threading.Thread(target=join, args=(i,))
               for i in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(members, key=lambda m: m.rank)


def servers_to_compare(args):
    """[(name, bin dir)] of the shardd builds to run: --baseline-bin-dir's
    (when given) as "baseline", then --bin-dir's as "this build"."""
    servers = [("this build", args.bin_dir)]
    if args.baseline_bin_dir:
        servers.insert(0, ("baseline", args.baseline_bin_dir))
    return servers
