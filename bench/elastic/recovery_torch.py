"""The PyTorch side of the recovery measurement (bench/elastic/measure_recovery.py): the same MLP
and data as elastic-recovery-worker's checkpoint mode, under torchrun --max-restarts 1, with
PyTorch's DDP on Gloo. Rank 0 writes DIR/checkpoint.pt after every step and every rank starts
from it; rank DIE_RANK dies (SIGKILL) at DIE_STEP in the first attempt.

    torchrun --nproc-per-node 3 --max-restarts 1 recovery_torch.py STEPS DIE_RANK:DIE_STEP DIR

Prints "recovery: step S at T ms" (rank 0) and "recovery: death at T ms" as the C++ worker does.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def wall_ms():
    return int(time.time() * 1000)


def main():
    steps = int(sys.argv[1])
    die_rank, die_step = (int(v) for v in sys.argv[2].split(":"))
    path = os.path.join(sys.argv[3], "checkpoint.pt")
    # The agent's store, under a prefix of this attempt's own: with the plain env:// init a
    # restarted attempt of this PyTorch found the dead attempt's Gloo addresses.
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), size,
                          is_master=os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
                          and rank == 0)
    dist.init_process_group("gloo", store=dist.PrefixStore(f"recovery/attempt_{attempt}", store),
                            rank=rank, world_size=size)
    doomed = rank == die_rank and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = 0
    if os.path.exists(path):
        saved = torch.load(path)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
    ddp = DistributedDataParallel(model)
    while step < steps:
        if doomed and step == die_step:
            print(f"recovery: death at {wall_ms()} ms", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        torch.manual_seed(1000 + step)
        inputs = torch.randn(96, 256)
        labels = torch.randint(0, 10, (96,))
        optimizer.zero_grad()
        F.cross_entropy(ddp(inputs.tensor_split(size)[rank]),
                        labels.tensor_split(size)[rank]).backward()
        optimizer.step()
        step += 1
        if rank == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)
            print(f"recovery: step {step} at {wall_ms()} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
