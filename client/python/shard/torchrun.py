"""torchrun with --rdzv-backend shard on any torch (1.13 included):

    python3 -m shard.torchrun --nnodes 1 --nproc_per_node 2 \\
        --rdzv_endpoint shardd:7070 --rdzv_id my-run train.py ...

takes torchrun's own arguments, registers the coordinator's rendezvous
handler (shard.torch.rendezvous) and runs torchrun's main with
--rdzv_backend shard unless another backend is given. On torch 2.3 and
later the installed package registers the handler by itself (its
`torchrun.handlers` entry point), so plain `torchrun --rdzv-backend shard`
works the same.
"""
import sys

from shard.torch.rendezvous import BACKEND, register


def _names_a_backend(args):
    return any(arg.split("=")[0] in ("--rdzv_backend", "--rdzv-backend")
               for arg in args)


def main(args=None):
    from torch.distributed.run import main as torchrun_main
    args = list(sys.argv[1:] if args is None else args)
    register()
    if not _names_a_backend(args):
        args.insert(0, f"--rdzv_backend={BACKEND}")
    torchrun_main(args)


if __name__ == "__main__":
    main()
