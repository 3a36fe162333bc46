"""all_gather of tensors whose first dimension differs between ranks."""
import torch
import torch.distributed as dist


def gather_uneven(tensor, group=None):
    """Every rank's `tensor` (same dtype and trailing shape, any length),
    in rank order, on every rank. Pads to the longest for the collective and
    trims after, so results of DistributedEvalSampler's uneven shards are
    combined without duplicates."""
    world = dist.get_world_size(group)
    length = torch.tensor([tensor.shape[0]], dtype=torch.int64,
                          device=tensor.device)
    lengths = [torch.zeros_like(length) for _ in range(world)]
    dist.all_gather(lengths, length, group=group)
    longest = int(max(int(n) for n in lengths))
    padded = torch.zeros((longest, *tensor.shape[1:]), dtype=tensor.dtype,
                         device=tensor.device)
    padded[:tensor.shape[0]] = tensor
    gathered = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [g[:int(n)] for g, n in zip(gathered, lengths)]
