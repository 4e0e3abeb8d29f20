#!/usr/bin/env python3
"""The PyTorch side of `gradwire-bench ddp --reference pytorch`.

Runs the sweep gradwire-bench ddp runs, with torch.nn.parallel.DistributedDataParallel: per model
a "no ddp" baseline on rank 0, then DDP over ranks 0..n-1 for each world size n; each iteration is
zero_grad, forward, cross-entropy on random labels, backward, SGD step (lr 0.001, momentum 0.9,
weight decay 1e-4) on one random batch generated once. Rank 0 writes the measurements in the
schema of PyTorch's benchmarks/distributed/ddp/benchmark.py plus gradwire's fields
(docs/benchmarks.md), so `gradwire-bench diff` reads it.

One process per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (gradwire-bench,
gradwire-run or torchrun start them). The models are torchvision's when it is installed; otherwise
reference_common.py's, which follow torchvision's architecture (ResNet, ResNeXt, VGG-11 and -16;
`--self-test` checks their parameter counts against torchvision's); mlp and cnn are gradwire's,
defined below.
"""

import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from reference_common import (SCHEMA_VERSION, TORCHVISION_MODELS, check_parameter_counts, conv3x3,
                              torchvision_model)


class SmallCnn(nn.Module):  # gradwire's "cnn": 1x28x28 images, 10 classes
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(1, 16), nn.BatchNorm2d(16)
        self.conv2, self.bn2 = conv3x3(16, 32), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def make_model(name, image_size):
    """(model, example shape, classes)."""
    if name == "mlp":
        mlp = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                            nn.Linear(64, 10))
        return mlp, [784], 10
    if name == "cnn":
        return SmallCnn(), [1, 28, 28], 10
    try:
        import torchvision
        model = torchvision.models.__dict__[name]()
    except ImportError:
        model = torchvision_model(name)
    return model, [3, image_size, image_size], 1000


class Loop:
    """One model with its random batch and optimizer, plain or wrapped in DDP over `group`."""

    def __init__(self, args, name, group, seed):
        torch.manual_seed(seed)
        model, shape, classes = make_model(name, args.image_size)
        self.device = args.torch_device
        model.to(self.device)
        self.inputs = torch.randn([args.batch_size] + shape).to(self.device)
        self.target = torch.randint(0, classes, [args.batch_size]).to(self.device)
        self.optimizer = torch.optim.SGD(model.parameters(), 0.001, momentum=0.9,
                                         weight_decay=1e-4)
        if group is not None:
            model = torch.nn.parallel.DistributedDataParallel(
                model, process_group=group, bucket_cap_mb=args.bucket_cap_mb,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                broadcast_buffers=False, gradient_as_bucket_view=args.gradient_as_bucket_view)
        self.model = model

    def step(self):
        """Seconds of one iteration."""
        start = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=False)
        F.cross_entropy(self.model(self.inputs), self.target).backward()
        self.optimizer.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the iteration's kernels, not their launches
        return time.perf_counter() - start


def train_and_time(args, name, group, seed):
    """Seconds of each timed iteration; DDP over `group` unless it is None."""
    loop = Loop(args, name, group, seed)
    seconds = [loop.step() for _ in range(args.warmup + args.iterations)]
    return seconds[args.warmup:]


def train_and_time_interleaved(args, name, one_rank, seed):
    """The baseline and DDP over `one_rank` alternating step by step: (baseline, ddp) seconds."""
    baseline = Loop(args, name, None, seed)
    wrapped = Loop(args, name, one_rank, seed)
    plain, ddp = [], []
    for i in range(args.warmup + args.iterations):
        a, b = baseline.step(), wrapped.step()
        if i >= args.warmup:
            plain.append(a)
            ddp.append(b)
    return plain, ddp


def percentile(values, p):  # linear interpolation, numpy's default
    values = sorted(values)
    h = p / 100.0 * (len(values) - 1)
    low = int(h)
    high = min(low + 1, len(values) - 1)
    return values[low] + (h - low) * (values[high] - values[low])


def row(prefix, batch_size, measurements):
    cells = ["  p%02d: %9.4fs %7.1f/s" % (p, percentile(measurements, p),
                                           batch_size / percentile(measurements, p))
             for p in (50, 75, 90, 95)]
    return prefix + ":" + "".join(cells)


def sweep(args, name, rank):
    log = (lambda text: print("ddp_reference.py: " + text, file=sys.stderr, flush=True)) \
        if rank == 0 else (lambda text: None)
    rounds = []
    interleave = args.interleave and 1 in args.world_sizes
    one_rank = dist.new_group(ranks=[0]) if interleave else None  # collective over the world
    paired = None
    if rank == 0:
        if interleave:
            log("%s, no ddp and DDP on 1 rank, alternating" % name)
            plain, paired = train_and_time_interleaved(args, name, one_rank, 0)
        else:
            log("%s, no ddp" % name)
            plain = train_and_time(args, name, None, 0)
        rounds.append({"ranks": [0], "ddp": False, "label": "no ddp", "measurements": plain})
    dist.barrier()
    for size in args.world_sizes:
        group = dist.new_group(ranks=list(range(size)))  # collective over the whole world
        if rank < size:
            if interleave and size == 1:
                rounds.append({"ranks": [0], "ddp": True, "label": "ddp", "measurements": paired})
            else:
                log("%s, DDP on %d rank%s" % (name, size, "" if size == 1 else "s"))
                mine = torch.tensor(train_and_time(args, name, group, rank), dtype=torch.float64,
                                    device=args.torch_device)
                everyone = [torch.empty_like(mine) for _ in range(size)]
                dist.all_gather(everyone, mine, group=group)
                rounds.append({"ranks": list(range(size)), "ddp": True, "label": "ddp",
                               "measurements": torch.cat(everyone).cpu().tolist()})
        dist.barrier()
    return rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--world-sizes", default="")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="cuda: rank r on GPU r modulo the GPUs (use --backend nccl)")
    parser.add_argument("--json", default="")
    parser.add_argument("--quiet", action="store_true", help="no table on stdout")
    parser.add_argument("--gradient-as-bucket-view", action="store_true")
    parser.add_argument("--interleave", action="store_true",
                        help="baseline and DDP on 1 rank in one process, step by step")
    parser.add_argument("--self-test", action="store_true",
                        help="check the parameter counts of the models built without torchvision "
                             "against torchvision's, and exit")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(0 if check_parameter_counts(TORCHVISION_MODELS) else 1)
    torch.set_num_threads(args.threads)
    args.torch_device = torch.device("cpu")
    if args.device == "cuda":
        # gradwire-bench starts each reference rank as a node of its own: one host, GPU = rank.
        rank = int(os.environ.get("RANK", "0"))
        args.torch_device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(args.torch_device)
    dist.init_process_group(args.backend, timeout=datetime.timedelta(hours=1))
    rank, world = dist.get_rank(), dist.get_world_size()
    args.world_sizes = [int(s) for s in args.world_sizes.split(",")] if args.world_sizes \
        else [world]
    if max(args.world_sizes) > world:
        sys.exit("ddp_reference.py: world sizes %s need %d ranks, WORLD_SIZE is %d"
                 % (args.world_sizes, max(args.world_sizes), world))

    results = []
    for name in args.models.split(","):
        rounds = sweep(args, name, rank)
        results.append({"model": name, "batch_size": args.batch_size, "result": rounds})
        if rank == 0 and not args.quiet:
            print("\nBenchmark: %s with batch size %d\n" % (name, args.batch_size))
            for r in rounds:
                print(row("%4d ranks -- %8s" % (len(r["ranks"]), r["label"]), args.batch_size,
                          r["measurements"]))
    if rank == 0 and args.json:
        bucket = int(args.bucket_cap_mb) if float(args.bucket_cap_mb).is_integer() else args.bucket_cap_mb
        report = {
            "pytorch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "distributed_backend": args.backend,
            "bucket_size": bucket,
            "schema_version": SCHEMA_VERSION,
            "benchmark": "ddp",
            "implementation": "pytorch",
            "torch_version": torch.__version__,
            "image_size": args.image_size,
            "threads_per_rank": args.threads,
            "world_size": world,
            "warmup": args.warmup,
            "iterations": args.iterations,
            "interleave": args.interleave,
            "gradient_as_bucket_view": args.gradient_as_bucket_view,
            "device": args.device,
            "benchmark_results": results,
        }
        with open(args.json + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
