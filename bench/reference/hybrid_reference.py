#!/usr/bin/env python3
"""The PyTorch side of `gradwire-bench hybrid --reference pytorch`.

The algorithm of PyTorch's DDP + RPC benchmark
(benchmarks/distributed/ddp/benchmark_ddp_rpc.py) on CPU:
S parameter servers each hold an EmbeddingBag(rows, dim, mode="sum"), created by a master over
RPC; T trainers look their batch up on every server (rpc_sync, one server after the other),
concatenate the S results and run the dense part, wrapped in DistributedDataParallel (gloo);
cross-entropy, distributed autograd backward, DistributedOptimizer(SGD, lr) over the embedding
and dense parameters. RPC is TensorPipe; every process uses one intra-op thread.

Differences from the upstream script, all of them shared with gradwire's side (docs/benchmarks.md):
  - the dense part's first layer is Linear(S * dim, 256), which is the upstream Linear(512, 256)
    for the default 8 x 64, instead of a reshape to width 512 that only works when S * dim == 512;
  - batches come from the generator below (SplitMix64, seeded by --seed and the trainer's rank),
    so both sides train on exactly the same ids, offsets and targets; an epoch's batches are made
    before its clock starts;
  - ex/s uses the mean examples per measured epoch (upstream: the last epoch's).

With --plain-steps N (gradwire-bench passes it) the launcher first times the plain step, the
same model held in this one process without RPC or DDP (time_plain_step), and adds it to the
document as "plain_step": compute parity, docs/benchmarks.md.

Usage: hybrid_reference.py --trainers T --servers S --rows R --dim D --epochs E --warmup W
--seed N [--plain-warmup W --plain-steps N] --json PATH. The script starts T + S + 1 worker processes of itself (trainer0..,
ps0.., master) on loopback ports free at start, waits for them at most --timeout seconds, and
stops them all when one fails or time runs out, naming the worker that failed; workers die with
it (PR_SET_PDEATHSIG; reference_common.run_workers). Exit status 0 only when every worker
succeeded and the JSON was written.
"""

import argparse
import datetime
import json
import os
import sys
import time

import torch

from reference_common import (SCHEMA_VERSION, add_to_document, die_with_parent, free_port,
                              run_workers, time_plain_steps)

MASK64 = (1 << 64) - 1
CLASSES = 8
HIDDEN = [256, 128, 64, 32]
MIN_IDS, MAX_IDS, MAX_BAG = 20, 50, 10
WORKER_THREADS = 1  # intra-op threads of every worker, and of the plain step


class BatchGenerator:
    """SplitMix64 stream of trainer `rank`; the same numbers as gradwire's hybrid_batches."""

    def __init__(self, seed, rank):
        self.state = (seed * 1000003 + rank) & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self, low, high):  # inclusive
        return low + self.next() % (high - low + 1)

    def batch(self, rows):
        num_ids = self.uniform(MIN_IDS, MAX_IDS)
        ids = [self.uniform(0, rows - 1) for _ in range(num_ids)]
        offsets, start = [], 0
        while start < num_ids:
            offsets.append(start)
            start += self.uniform(1, MAX_BAG)
        target = [self.uniform(0, CLASSES - 1) for _ in offsets]
        return (torch.tensor(ids, dtype=torch.int64), torch.tensor(offsets, dtype=torch.int64),
                torch.tensor(target, dtype=torch.int64))


def dense_model(width):
    nn = torch.nn
    return nn.Sequential(nn.Linear(width, HIDDEN[0]), nn.Linear(HIDDEN[0], HIDDEN[1]), nn.ReLU(),
                         nn.Linear(HIDDEN[1], HIDDEN[2]), nn.Linear(HIDDEN[2], HIDDEN[3]),
                         nn.Linear(HIDDEN[3], CLASSES))


def plain_epoch(args):
    """One plain step of the model held in this process: an epoch; see time_plain_step."""
    torch.manual_seed(args.seed)
    bags = [torch.nn.EmbeddingBag(args.rows, args.dim, mode="sum") for _ in range(args.servers)]
    dense = dense_model(args.servers * args.dim)
    parameters = [bag.weight for bag in bags] + list(dense.parameters())
    optimizer = torch.optim.SGD(parameters, lr=args.lr)
    criterion = torch.nn.CrossEntropyLoss()
    generator = BatchGenerator(args.seed, 0)

    def epoch():
        batches = [generator.batch(args.rows) for _ in range(args.batches)]
        start = time.perf_counter()
        for ids, offsets, target in batches:
            optimizer.zero_grad()
            lookups = torch.cat([bag(ids, offsets) for bag in bags], 1)
            loss = criterion(dense(lookups), target)
            loss.backward()
            optimizer.step()
        return time.perf_counter() - start
    return epoch


def time_plain_step(args):
    """The plain step (compute parity): the same model without RPC or DDP, in this process.

    The S EmbeddingBag(rows, dim, sum) tables held locally, concatenated, then the dense part; one
    SGD(lr) over all of it, on trainer 0's batches: zero_grad, lookups, dense part and loss,
    backward, step, per batch. A step is an epoch of --batches batches (made before its clock):
    --plain-warmup untimed, then --plain-steps timed, on the workers' thread count. gradwire-bench
    times the same in C++ (time_hybrid_plain_step).
    """
    return time_plain_steps(plain_epoch(args), args.plain_warmup, args.plain_steps,
                            WORKER_THREADS)


def embedding_parameters(emb_rref):
    from torch.distributed.rpc import RRef
    return [RRef(p) for p in emb_rref.local_value().parameters()]


def run_trainer(emb_rrefs, rank, settings):
    """Trains on this trainer; returns its measurements (runs on trainer `rank`, called by RPC)."""
    import torch.distributed.autograd as dist_autograd
    import torch.distributed.rpc as rpc
    from torch.distributed.optim import DistributedOptimizer
    from torch.distributed.rpc import RRef
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(settings["seed"])
    dense = DistributedDataParallel(dense_model(settings["servers"] * settings["dim"]))
    params = []
    for index, emb_rref in enumerate(emb_rrefs):
        params.extend(rpc.rpc_sync("ps%d" % index, embedding_parameters, args=(emb_rref,)))
    params.extend(RRef(p) for p in dense.parameters())
    optimizer = DistributedOptimizer(torch.optim.SGD, params, lr=settings["lr"])
    criterion = torch.nn.CrossEntropyLoss()
    generator = BatchGenerator(settings["seed"], rank)

    seconds, examples = [], []
    phases = {"lookup": [], "dense_forward": [], "backward": [], "step": []}
    for epoch in range(settings["warmup"] + settings["epochs"]):
        batches = [generator.batch(settings["rows"]) for _ in range(settings["batches"])]
        spent = dict.fromkeys(phases, 0.0)
        start = time.perf_counter()
        for ids, offsets, target in batches:
            with dist_autograd.context() as context_id:
                t0 = time.perf_counter()
                lookups = torch.cat([r.rpc_sync().forward(ids, offsets) for r in emb_rrefs], 1)
                t1 = time.perf_counter()
                loss = criterion(dense(lookups), target)
                t2 = time.perf_counter()
                dist_autograd.backward(context_id, [loss])
                t3 = time.perf_counter()
                optimizer.step(context_id)
                t4 = time.perf_counter()
            spent["lookup"] += t1 - t0
            spent["dense_forward"] += t2 - t1
            spent["backward"] += t3 - t2
            spent["step"] += t4 - t3
        elapsed = time.perf_counter() - start
        if epoch >= settings["warmup"]:
            seconds.append(elapsed)
            examples.append(sum(len(t) for _, _, t in batches))
            for name in phases:
                phases[name].append(spent[name])
    return {"trainer": rank, "epoch_seconds": seconds, "examples_per_epoch": examples,
            "phase_seconds": phases}


def worker(args):
    import torch.distributed as dist
    import torch.distributed.rpc as rpc

    die_with_parent(args.launcher_pid)
    torch.set_num_threads(WORKER_THREADS)
    trainers, servers = args.trainers, args.servers
    rank, world = args.rank, args.trainers + args.servers + 1
    options = rpc.TensorPipeRpcBackendOptions(init_method="tcp://127.0.0.1:%d" % args.rpc_port,
                                              rpc_timeout=args.timeout)
    if rank < trainers:
        dist.init_process_group("gloo", rank=rank, world_size=trainers,
                                init_method="tcp://127.0.0.1:%d" % args.gloo_port,
                                timeout=datetime.timedelta(seconds=args.timeout))
        rpc.init_rpc("trainer%d" % rank, rank=rank, world_size=world, rpc_backend_options=options)
    elif rank < trainers + servers:
        torch.manual_seed(args.seed + 1 + rank - trainers)  # the table's initial rows
        rpc.init_rpc("ps%d" % (rank - trainers), rank=rank, world_size=world,
                     rpc_backend_options=options)
    else:
        rpc.init_rpc("master", rank=rank, world_size=world, rpc_backend_options=options)
        emb_rrefs = [rpc.remote("ps%d" % i, torch.nn.EmbeddingBag, args=(args.rows, args.dim),
                                kwargs={"mode": "sum"}) for i in range(servers)]
        settings = {"servers": servers, "rows": args.rows, "dim": args.dim, "epochs": args.epochs,
                    "warmup": args.warmup, "batches": args.batches, "seed": args.seed,
                    "lr": args.lr}
        futures = [rpc.rpc_async("trainer%d" % t, run_trainer, args=(emb_rrefs, t, settings))
                   for t in range(trainers)]
        results = sorted((f.wait() for f in futures), key=lambda r: r["trainer"])
        write_json(args, results)
    rpc.shutdown()
    if rank < trainers:
        dist.destroy_process_group()


def write_json(args, results):
    document = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": "hybrid",
        "implementation": "pytorch",
        "torch_version": torch.__version__,
        "pytorch_version": torch.__version__,
        "rpc_backend": "tensorpipe",
        "distributed_backend": "gloo",
        "threads_per_process": 1,
        "settings": {"trainers": args.trainers, "servers": args.servers, "rows": args.rows,
                     "dim": args.dim, "epochs": args.epochs, "warmup": args.warmup,
                     "batches_per_epoch": args.batches, "seed": args.seed, "lr": args.lr,
                     "mode": "async"},
        "trainers": results,
    }
    with open(args.json + ".tmp", "w") as f:
        json.dump(document, f, indent=1)
    os.replace(args.json + ".tmp", args.json)


def worker_name(args, rank):
    if rank < args.trainers:
        return "trainer%d" % rank
    return "ps%d" % (rank - args.trainers) if rank < args.trainers + args.servers else "master"


def supervise(args):
    """Starts the workers, waits for them; the exit status."""
    arguments = sys.argv[1:] + ["--rpc-port", str(free_port()), "--gloo-port", str(free_port())]
    env = dict(os.environ, GLOG_minloglevel="2")  # no "RPC agent ... is shutting down" lines
    names = [worker_name(args, r) for r in range(args.trainers + args.servers + 1)]
    # Before the workers start: this process then has the machine to itself.
    plain = time_plain_step(args) if args.plain_steps > 0 else None
    status = run_workers(__file__, arguments, names, args.json, args.timeout, env)
    if status == 0 and plain is not None:
        add_to_document(args.json, "plain_step", plain)
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainers", type=int, default=8)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, default=10, help="batches per epoch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for the whole run")
    parser.add_argument("--json", required=True)
    parser.add_argument("--plain-steps", type=int, default=0,
                        help="also time this many plain epochs in one process (compute parity; "
                             "0: none)")
    parser.add_argument("--plain-warmup", type=int, default=3,
                        help="untimed plain epochs before them")
    parser.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--rpc-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--gloo-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--launcher-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.trainers, args.servers, args.rows, args.dim, args.epochs, args.batches) < 1 \
            or min(args.warmup, args.plain_steps, args.plain_warmup) < 0:
        sys.exit("hybrid_reference.py: trainers, servers, rows, dim, epochs and batches must be "
                 "positive, warmup and the plain step's counts non-negative")
    if args.rank >= 0:
        worker(args)
        return 0
    return supervise(args)


if __name__ == "__main__":
    sys.exit(main())
