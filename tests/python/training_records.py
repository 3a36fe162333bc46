"""What train_ddp.py's --record files say, and what they should say: the
helpers the tests of that example share."""
import collections
import glob


def read_records(pattern):
    """(epoch, rank) -> indices in training order, from every file matching
    the glob `pattern` (lines "epoch rank index")."""
    got = collections.defaultdict(list)
    for path in glob.glob(pattern):
        for line in open(path):
            epoch, rank, index = map(int, line.split())
            got[(epoch, rank)].append(index)
    return got


def planned(size, world, epoch, rank, seed=7):
    """DistributedSampler's indices of `rank` in `epoch`."""
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(range(size), num_replicas=world, rank=rank,
                                 seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)


def committed_history(first, second, committed, world, epoch):
    """The indices of `epoch` that count after a crash: the first attempt's
    up to the committed (epoch, position) (each rank's first position / W),
    then the second attempt's."""
    trained = []
    for rank in range(world):
        if epoch == committed[0]:
            trained += first[(epoch, rank)][:committed[1] // world]
        trained += second[(epoch, rank)]
    return trained


def check_committed_histories(check, first, second, committed, world, epochs,
                              size):
    """check()s that every epoch's committed history (committed_history)
    holds each of `size` indices exactly once."""
    for epoch in range(epochs):
        trained = committed_history(first, second, committed, world, epoch)
        check(sorted(trained) == list(range(size)),
              f"epoch {epoch}: the committed history holds each of "
              f"{size} indices exactly once ({len(trained)} trained)")


def check_planned(check, got, size, world, epochs):
    """check()s that each rank trained exactly its planned indices of each
    epoch (`got`: read_records' mapping)."""
    for epoch in range(epochs):
        for rank in range(world):
            check(got[(epoch, rank)] == planned(size, world, epoch, rank),
                  f"rank {rank} trained exactly its planned indices of "
                  f"epoch {epoch}")
