#!/usr/bin/env python3
"""The PyTorch side of `gradwire-bench ps --reference pytorch`.

Synchronous data-parallel training through parameter servers, written with PyTorch's RPC
(TensorPipe), after the averaging parameter server of PyTorch's
benchmarks/distributed/rpc/parameter_server, on CPU:
  - S servers own the model's parameters. Each parameter goes whole to one server, greedily
    balanced by bytes in parameter order (the next parameter to the server holding the fewest
    bytes so far, the lowest index on ties; assign_parameters). Each server keeps its parameters
    and a torch.optim.SGD(lr, momentum) over them.
  - T trainers each run forward, cross-entropy, backward on their batch, then send every server
    its parameters' gradients (one rpc_async per server, with the batch number) and wait.
  - A server adds the gradients of a batch as they arrive (@rpc.functions.async_execution: each
    call returns a future at once); when all T trainers' have come it divides by T, steps its
    optimizer and completes every waiting future with its parameters' new values, which each
    trainer copies into its model. So every trainer holds the same parameters after each batch
    (trainer 0 checks that at the end and fails the run otherwise).
  - Initial parameters: every process calls torch.manual_seed(--seed) and builds the model the
    same way, so servers and trainers start from identical values without sending them.
  - Models, reference_common.py's after torchvision's: resnet18 (BasicBlock; 11,689,512
    parameters at 1000 classes), vgg11 and vgg16 (configurations A and D without batch norm;
    132,863,336 and 138,357,544). --self-test checks those counts. BatchNorm running statistics are buffers, not
    parameters: they stay on each trainer and are not synchronised (training-mode forward does not
    read them).
  - Data: synthetic, made before any clock starts: per trainer --batch-size images of
    3 x H x H from torch.randn and labels from torch.randint, one torch.Generator seeded with
    seed * 1000003 + trainer; the same batch is used in every iteration.
Differences from upstream: the server steps an optimizer and answers with parameters (upstream
answers with the averaged gradients and the trainer steps); one message per server and batch
(upstream sends one per DDP bucket); upstream's average does not actually divide by T.

Measured per trainer: --warmup iterations first, untimed; then --passes passes of --iterations
iterations each. For every measured iteration: its seconds, and the seconds of forward (with the
loss), backward, and comm (from the first rpc_async until every server has answered and the values
are copied into the model). Trainer 0 writes them as JSON (write_json); every list has one value
per measured iteration, pass after pass.

With --plain-steps N (gradwire-bench passes it) the launcher first times the plain step,
trainer 0's model and batch trained in this one process without servers (time_plain_step), and
adds it to the document as "plain_step": compute parity, docs/benchmarks.md.

Usage: ps_reference.py --trainers T --servers S --model resnet18|vgg11|vgg16 --batch-size B
--image-size H --num-classes C --lr LR --momentum M --warmup W --iterations N --passes P --seed N
--timeout SECONDS [--plain-warmup W --plain-steps N] --json PATH; or ps_reference.py
--self-test. The script starts T + S worker processes of itself (trainer0.., ps0..) on a loopback
port free at start, waits for them at most --timeout seconds, and stops them all when one fails or
time runs out, naming the worker that failed; workers die with it (PR_SET_PDEATHSIG;
reference_common.run_workers). Every process uses one intra-op thread. Exit status 0 only when
every worker succeeded and the JSON was written. gradwire-bench runs it with its memory policy
(MALLOC_MMAP_THRESHOLD_, docs/benchmarks.md); set that by hand to compare.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

import torch
import torch.nn.functional as F
import torch.distributed.rpc as rpc

from reference_common import (SCHEMA_VERSION, add_to_document, check_parameter_counts,
                              die_with_parent, free_port, run_workers, time_plain_steps,
                              torchvision_model)

MODELS = ["resnet18", "vgg11", "vgg16"]
WORKER_THREADS = 1  # intra-op threads of every worker, and of the plain step


def make_model(name, num_classes, seed):
    """The model, built the same way in every process: identical initial parameters."""
    torch.manual_seed(seed)
    return torchvision_model(name, num_classes)


def assign_parameters(sizes, servers):
    """The server of each parameter: in order, each to the server with the fewest bytes so far."""
    load, owner = [0] * servers, []
    for size in sizes:
        server = min(range(servers), key=lambda s: (load[s], s))
        owner.append(server)
        load[server] += size
    return owner


def parameters_of_servers(model, servers):
    """Per server, its parameters (in model order)."""
    params = list(model.parameters())
    owner = assign_parameters([p.numel() * p.element_size() for p in params], servers)
    return [[p for p, o in zip(params, owner) if o == s] for s in range(servers)]


# ---- parameter server ----

class ParameterServer:
    """One server's parameters, optimizer and the batch being collected (thread safe)."""

    def __init__(self, params, trainers, lr, momentum):
        self.params = params
        self.trainers = trainers
        self.optimizer = torch.optim.SGD(params, lr=lr, momentum=momentum)
        self.lock = threading.Lock()
        self.batch = None       # the batch being collected
        self.sums = None        # its gradients summed so far
        self.waiting = {}       # trainer -> its future, for this batch

    def push(self, batch, trainer, gradients):
        """The future of this server's new parameter values after `batch`."""
        future = torch.futures.Future()
        with self.lock:
            if self.waiting and batch != self.batch:
                raise RuntimeError("trainer%d pushed batch %d while batch %d waits for %d more "
                                   "trainers" % (trainer, batch, self.batch,
                                                 self.trainers - len(self.waiting)))
            if trainer in self.waiting:
                raise RuntimeError("trainer%d pushed batch %d twice" % (trainer, batch))
            if len(gradients) != len(self.params):
                raise RuntimeError("trainer%d sent %d gradients for %d parameters"
                                   % (trainer, len(gradients), len(self.params)))
            if not self.waiting:
                self.batch, self.sums = batch, gradients  # received tensors: ours to add into
            else:
                for total, gradient in zip(self.sums, gradients):
                    total.add_(gradient)
            self.waiting[trainer] = future
            if len(self.waiting) < self.trainers:
                return future
            for param, total in zip(self.params, self.sums):
                param.grad = total.div_(self.trainers)
            self.optimizer.step()
            waiting, self.waiting, self.sums = self.waiting, {}, None
        # The parameters themselves, not copies: the next step needs every trainer's next push,
        # which each sends only after it has received these values.
        values = [p.detach() for p in self.params]
        for f in waiting.values():
            f.set_result(values)
        return future


SERVER = None  # this process's ParameterServer, when it is a server (RPC calls find it here)


@rpc.functions.async_execution
def push_gradients(batch, trainer, gradients):
    return SERVER.push(batch, trainer, gradients)


# ---- trainer ----

class ResultsInbox:
    """Trainer 0's collection of every trainer's measurements (thread safe)."""

    def __init__(self, trainers):
        self.trainers = trainers
        self.results = {}
        self.ready = threading.Condition()

    def deliver(self, result):
        with self.ready:
            self.results[result["trainer"]] = result
            self.ready.notify_all()

    def wait_all(self, timeout):
        with self.ready:
            if not self.ready.wait_for(lambda: len(self.results) == self.trainers, timeout):
                missing = sorted(set(range(self.trainers)) - set(self.results))
                raise RuntimeError("no measurements from trainer(s) %s" % missing)
            return [self.results[t] for t in range(self.trainers)]


INBOX = None  # trainer 0's ResultsInbox


def deliver_results(result):
    INBOX.deliver(result)


def train(args, rank):
    """Trains as trainer `rank`; its measurements and a fingerprint of its final parameters."""
    model = make_model(args.model, args.num_classes, args.seed)
    model.train()
    torch.manual_seed(args.seed * 1000003 + rank)  # this trainer's dropout masks
    generator = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size,
                         generator=generator)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), generator=generator)
    owned = parameters_of_servers(model, args.servers)

    seconds, phases = [], {"forward": [], "backward": [], "comm": []}
    for batch in range(args.warmup + args.iterations * args.passes):
        if rank == args.trainers - 1 and batch == args.fail_trainer_at:
            os.kill(os.getpid(), signal.SIGKILL)  # --fail-trainer-at: a crash, for testing
        t0 = time.perf_counter()
        model.zero_grad()  # in place (1.13 default): the gradients keep their memory
        loss = F.cross_entropy(model(images), labels)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        # The .grad tensors themselves: they are next written after every server has answered,
        # i.e. after each has received them.
        futures = [rpc.rpc_async("ps%d" % s, push_gradients,
                                 args=(batch, rank, [p.grad for p in params]))
                   for s, params in enumerate(owned)]
        with torch.no_grad():
            for params, future in zip(owned, futures):
                for param, value in zip(params, future.wait()):
                    param.copy_(value)
        t3 = time.perf_counter()
        if batch >= args.warmup:
            seconds.append(t3 - t0)
            phases["forward"].append(t1 - t0)
            phases["backward"].append(t2 - t1)
            phases["comm"].append(t3 - t2)
    fingerprint = [p.detach().double().sum().item() for p in model.parameters()]
    return {"trainer": rank, "iteration_seconds": seconds,
            "examples_per_iteration": args.batch_size, "phase_seconds": phases}, fingerprint


def write_json(args, results, path):
    document = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": "ps",
        "implementation": "pytorch",
        "torch_version": torch.__version__,
        "rpc_backend": "tensorpipe",
        "threads_per_process": 1,
        "settings": {"trainers": args.trainers, "servers": args.servers, "model": args.model,
                     "batch_size": args.batch_size, "image_size": args.image_size,
                     "num_classes": args.num_classes, "lr": args.lr, "momentum": args.momentum,
                     "warmup": args.warmup, "iterations_per_pass": args.iterations,
                     "seed": args.seed, "mode": "sync"},
        "trainers": results,
        "passes": args.passes,
    }
    with open(path + ".tmp", "w") as f:
        json.dump(document, f, indent=1)
    os.replace(path + ".tmp", path)


# ---- the plain step ----

def time_plain_step(args):
    """The plain step (compute parity): trainer 0's model and batch trained in this process.

    No servers: zero_grad, forward, cross-entropy, backward and SGD(lr, momentum) here, the loop of
    gradwire-bench ps's local comparison (time_ps_plain_step); --plain-warmup untimed iterations,
    then --plain-steps timed, on the workers' thread count.
    """
    model = make_model(args.model, args.num_classes, args.seed)
    model.train()
    generator = torch.Generator().manual_seed(args.seed * 1000003)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size,
                         generator=generator)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    def step():
        start = time.perf_counter()
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        return time.perf_counter() - start
    return time_plain_steps(step, args.plain_warmup, args.plain_steps, WORKER_THREADS)


# ---- processes ----

def worker_name(args, rank):
    return "trainer%d" % rank if rank < args.trainers else "ps%d" % (rank - args.trainers)


def worker(args):
    global SERVER, INBOX

    die_with_parent(args.launcher_pid)
    torch.set_num_threads(WORKER_THREADS)
    rank, name = args.rank, worker_name(args, args.rank)
    options = rpc.TensorPipeRpcBackendOptions(init_method="tcp://127.0.0.1:%d" % args.rpc_port,
                                              rpc_timeout=args.timeout)
    if rank >= args.trainers:  # ready before any trainer can call it: init_rpc waits for all
        model = make_model(args.model, args.num_classes, args.seed)
        mine = parameters_of_servers(model, args.servers)[rank - args.trainers]
        del model
        SERVER = ParameterServer(mine, args.trainers, args.lr, args.momentum)
    elif rank == 0:
        INBOX = ResultsInbox(args.trainers)
    rpc.init_rpc(name, rank=rank, world_size=args.trainers + args.servers,
                 rpc_backend_options=options)
    if rank < args.trainers:
        result, fingerprint = train(args, rank)
        if rank == 0:
            INBOX.deliver(dict(result, fingerprint=fingerprint))
            results = INBOX.wait_all(args.timeout)
            differing = [r["trainer"] for r in results if r.pop("fingerprint") != fingerprint]
            if differing:
                raise RuntimeError("trainers %s ended with parameters other than trainer0's"
                                   % differing)
            write_json(args, results, args.json)
        else:
            rpc.rpc_sync("trainer0", deliver_results, args=(dict(result, fingerprint=fingerprint),))
    rpc.shutdown()  # waits until every worker is done: servers serve until then


def supervise(args):
    """Starts the workers and waits for them; the exit status."""
    arguments = sys.argv[1:] + ["--rpc-port", str(free_port())]
    env = dict(os.environ, GLOG_minloglevel="2", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    names = [worker_name(args, r) for r in range(args.trainers + args.servers)]
    # Before the workers start: this process then has the machine to itself.
    plain = time_plain_step(args) if args.plain_steps > 0 else None
    status = run_workers(__file__, arguments, names, args.json, args.timeout, env)
    if status == 0 and plain is not None:
        add_to_document(args.json, "plain_step", plain)
    return status


def self_test():
    """Parameter counts at 1000 classes against torchvision's; assignment invariants."""
    ok = check_parameter_counts(MODELS)
    owner = assign_parameters([5, 3, 3, 2, 8, 1], 3)
    print("assign_parameters([5, 3, 3, 2, 8, 1], 3) = %s %s"
          % (owner, "ok" if owner == [0, 1, 2, 1, 2, 0] else "WRONG (expected [0, 1, 2, 1, 2, 0])"))
    return 0 if ok and owner == [0, 1, 2, 1, 2, 0] else 1


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainers", type=int, default=2)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--model", choices=MODELS, default="resnet18")
    parser.add_argument("--batch-size", type=int, default=8, help="images per trainer and batch")
    parser.add_argument("--image-size", type=int, default=64, help="height = width, at least 32")
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations first")
    parser.add_argument("--iterations", type=int, default=20, help="measured iterations per pass")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for the whole run")
    parser.add_argument("--json", help="where trainer 0 writes the measurements (required)")
    parser.add_argument("--plain-steps", type=int, default=0,
                        help="also time this many plain iterations of trainer 0's model and batch "
                             "in one process (compute parity; 0: none)")
    parser.add_argument("--plain-warmup", type=int, default=3,
                        help="untimed plain iterations before them")
    parser.add_argument("--self-test", action="store_true",
                        help="check the models' parameter counts at 1000 classes, and exit")
    parser.add_argument("--fail-trainer-at", type=int, default=-1,
                        help="testing: the last trainer kills itself (SIGKILL) before this "
                             "iteration (0: the first warm-up iteration)")
    parser.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--rpc-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--launcher-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.self_test:
        return args
    if min(args.trainers, args.servers, args.batch_size, args.num_classes, args.iterations,
           args.passes, args.timeout) < 1 \
            or min(args.warmup, args.plain_steps, args.plain_warmup) < 0:
        parser.error("trainers, servers, batch size, classes, iterations, passes and timeout must "
                     "be positive, warmup and the plain step's counts non-negative")
    if args.image_size < 32:
        parser.error("--image-size must be at least 32 (five 2x2 poolings)")
    if not args.json:
        parser.error("--json PATH is required")
    return args


def main():
    args = parse_args()
    if args.self_test:
        return self_test()
    if args.rank >= 0:
        worker(args)
        return 0
    return supervise(args)


if __name__ == "__main__":
    sys.exit(main())
