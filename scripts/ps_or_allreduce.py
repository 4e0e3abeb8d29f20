#!/usr/bin/env python3
"""Parameter servers or allreduce? An alpha-beta estimate of one training step's communication.

Computes, from the formulas of docs/ps-or-allreduce.md ("Parameter servers or allreduce: a
model"), the seconds from the last gradient of a step to the parameters of the next one
(communication, the reductions and the optimizer update) for ring allreduce, hierarchical
allreduce, gradwire's parameter servers in both roles (DenseModel) and a BytePS-like summation
service, for one cluster:

    scripts/ps_or_allreduce.py --model-bytes 46.8e6 --trainers 64 --servers 16 --gbps 25

Every rate has a flag; the defaults are the figures fitted on the development machine
(`--rates gradwire`) or the wire alone, for GPU trainers in the limit (`--rates wire`).
`--documented` prints the cases docs/ps-or-allreduce.md shows, and `--check FILE` exits 1 when
FILE's copy of them differs from what the formulas give now. Python 3 standard library only.
"""

import argparse
import math
import sys
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

INF = math.inf
MIB = 1 << 20

# DenseModel's push and pull messages (docs/ps.md "Overlap"): the first to each server at most
# 1 MiB, the others at most 4 MiB less 64 KiB.
FIRST_MESSAGE_BYTES = MIB
MESSAGE_BYTES = 4 * MIB - 64 * 1024


@dataclass(frozen=True)
class Rates:
    """What the software costs: latencies in seconds, rates in bytes per second (each way)."""
    gloo_step_s: float        # a_g: one ring step of Gloo's allreduce (software, wire excluded)
    gloo_bytes_per_s: float   # b_g: bytes one rank sends (and receives) per second in the ring
    shm_s: float              # a_shm: a host's shared-memory allreduce of a small tensor
    shm_bytes_per_s: float    # b_shm: its algorithm bandwidth for large tensors
    bcast_s: float            # a_bc: a host's shared-memory broadcast of a small tensor
    bcast_bytes_per_s: float  # b_bc: its algorithm bandwidth for large tensors
    rpc_message_s: float      # a_r: CPU time of one push or pull message at either end
    rpc_bytes_per_s: float    # b_r: bytes one process pushes or pulls per second (encode, copies)
    step_s: float             # a_st: a server's fixed cost per sync step (barrier, bookkeeping)
    reduce_bytes_per_s: float   # r_red: pushed bytes a server reduces per second (sum role's step)
    server_opt_bytes_per_s: float  # r_opt: parameter bytes per second of the servers' optimizer
    update_bytes_per_s: float      # r_upd: parameter bytes per second of a trainer's own optimizer


# Fitted on the development machine (AMD EPYC, 2 vCPUs, loopback, 2026-11-26): the measurements
# and the fits are in docs/ps-or-allreduce.md, "Fitting the rates to this machine".
GRADWIRE = Rates(
    gloo_step_s=277e-6,
    gloo_bytes_per_s=1.07e9,
    shm_s=5.3e-6,
    shm_bytes_per_s=3.9e9,
    bcast_s=2.7e-6,
    bcast_bytes_per_s=3.2e9,
    rpc_message_s=75e-6,
    rpc_bytes_per_s=1.04e9,
    step_s=150e-6,
    reduce_bytes_per_s=1.62e9,
    server_opt_bytes_per_s=2.39e9,
    update_bytes_per_s=5.05e9,
)

# The wire alone, for GPU trainers in the limit (the setting of BytePS's comparisons): sending,
# host-local steps and the trainers' update cost nothing; what is left is the NICs, the latency
# on the wire and the servers, which are CPUs in every design: they reduce at this machine's
# memory-bound rate (the shm allreduce's) and step at torch's SGD rate, one core each.
WIRE = Rates(
    gloo_step_s=0.0, gloo_bytes_per_s=INF, shm_s=0.0, shm_bytes_per_s=INF, bcast_s=0.0,
    bcast_bytes_per_s=INF, rpc_message_s=0.0, rpc_bytes_per_s=INF, step_s=0.0,
    reduce_bytes_per_s=GRADWIRE.shm_bytes_per_s,
    server_opt_bytes_per_s=GRADWIRE.update_bytes_per_s, update_bytes_per_s=INF)

PRESETS = {"gradwire": GRADWIRE, "wire": WIRE}


@dataclass(frozen=True)
class Cluster:
    model_bytes: float   # M: gradient bytes per step (float32: 4 x parameters)
    trainers: int        # n
    per_host: int        # g: trainers per host; hosts h = ceil(n / g)
    servers: int         # s
    nic_bytes_per_s: float  # B: each host's (and server machine's) NIC, each way
    latency_s: float     # a: one message across the network (one way)

    @property
    def hosts(self) -> int:
        return math.ceil(self.trainers / self.per_host)

    @property
    def local_ranks(self) -> int:
        return min(self.per_host, self.trainers)


@dataclass
class Estimate:
    """Seconds per step, and the terms they are made of (for the bottleneck column)."""
    name: str
    seconds: float
    terms: Dict[str, float]

    def bottleneck(self) -> str:
        name, value = max(self.terms.items(), key=lambda item: item[1])
        return f"{name} ({100 * value / self.seconds:.0f}%)" if self.seconds > 0 else "-"


def transfer(bytes_: float, *rates: float) -> float:
    """Seconds to move bytes_ through the slowest of the given rates (INF: no limit)."""
    slowest = min(rates) if rates else INF
    return 0.0 if bytes_ == 0 or slowest == INF else bytes_ / slowest


def host_allreduce(c: Cluster, r: Rates, bytes_: float) -> float:
    """A host's shared-memory allreduce among its g ranks (0 with one rank per host)."""
    return 0.0 if c.local_ranks == 1 else r.shm_s + transfer(bytes_, r.shm_bytes_per_s)


def host_broadcast(c: Cluster, r: Rates, bytes_: float) -> float:
    return 0.0 if c.local_ranks == 1 else r.bcast_s + transfer(bytes_, r.bcast_bytes_per_s)


def nic(c: Cluster) -> float:
    """The NIC's rate where traffic leaves a host; loopback (no limit) when there is one host."""
    return c.nic_bytes_per_s if c.hosts > 1 else INF


def ring_allreduce(c: Cluster, r: Rates) -> Estimate:
    """Gloo's ring over all n ranks, ordered by host: 2(n-1) steps of M/n bytes; one ring edge per
    host crosses its NIC, so the NIC carries what every rank sends, 2(n-1)/n M each way."""
    n, m = c.trainers, c.model_bytes
    steps = 2 * (n - 1)
    wire_latency = c.latency_s if c.hosts > 1 else 0.0
    terms = {
        "latency": steps * (wire_latency + r.gloo_step_s),
        "bytes": transfer(steps / n * m, nic(c), r.gloo_bytes_per_s),
        "update": transfer(m, r.update_bytes_per_s),
    }
    return Estimate("ring allreduce", sum(terms.values()), terms)


def hierarchical_allreduce(c: Cluster, r: Rates) -> Estimate:
    """gradwire's hierarchical backend: shm allreduce within each host, Gloo's ring among the h
    host leaders (2(h-1)/h M through each NIC), shm broadcast from the leader; one after another."""
    h, m = c.hosts, c.model_bytes
    steps = 2 * (h - 1)
    terms = {
        "host allreduce": host_allreduce(c, r, m),
        "latency": steps * (c.latency_s + r.gloo_step_s),
        "bytes": transfer(steps / h * m, c.nic_bytes_per_s, r.gloo_bytes_per_s) if h > 1 else 0.0,
        "host broadcast": host_broadcast(c, r, m),
        "update": transfer(m, r.update_bytes_per_s),
    }
    return Estimate("hierarchical allreduce", sum(terms.values()), terms)


def messages(bytes_: float) -> int:
    """DenseModel's messages for bytes_ bytes to one server."""
    if bytes_ <= FIRST_MESSAGE_BYTES:
        return 1
    return 1 + math.ceil((bytes_ - FIRST_MESSAGE_BYTES) / MESSAGE_BYTES)


@dataclass(frozen=True)
class PsSetup:
    role: str          # "optimizer" (servers step) or "sum" (servers reduce, trainers step)
    colocated: bool    # servers on the trainers' hosts (True) or on machines of their own
    local_reduce: bool = False  # BytePS: the host's ranks reduce first, each pushes M/g
    pipelined: bool = False     # BytePS: pulls overlap pushes; gradwire: push, step, then pull


def parameter_servers(c: Cluster, r: Rates, setup: PsSetup, name: str) -> Estimate:
    """Sync parameter servers. Each trainer pushes P bytes (M, or M/g after a host-local
    reduction), P/s to each server in messages; the servers end the step (reduce, and in the
    optimizer role step the optimizer); each trainer pulls P back."""
    n, g, h, s, m = c.trainers, c.local_ranks, c.hosts, c.servers, c.model_bytes
    pushed = m / g if setup.local_reduce else m          # P, per trainer and direction
    per_server = pushed / s                               # P/s, per trainer-server pair
    k = messages(per_server)
    # The two ends of one phase (push or pull), each a process with its own CPU.
    trainer_end = s * k * r.rpc_message_s + transfer(pushed, r.rpc_bytes_per_s)
    server_end = n * k * r.rpc_message_s + transfer(n * per_server, r.rpc_bytes_per_s)
    # The NICs, per phase and direction.
    if setup.colocated:
        host_bytes = g * pushed * (h - 1) / h  # to the other hosts' servers = from their trainers
        server_bytes = 0.0
        wire = c.latency_s if h > 1 else 0.0
    else:
        host_bytes = g * pushed
        server_bytes = n * per_server        # one server per machine
        wire = c.latency_s
    nic_time = transfer(max(host_bytes, server_bytes), c.nic_bytes_per_s)
    reduce_time = transfer(n * per_server, r.reduce_bytes_per_s)
    optimizer_time = transfer(m / s, r.server_opt_bytes_per_s) if setup.role == "optimizer" else 0
    update = transfer(m, r.update_bytes_per_s) if setup.role == "sum" else 0.0
    step_calls = max(s, n) * r.rpc_message_s + r.step_s + wire
    terms: Dict[str, float] = {}
    if setup.local_reduce:
        terms["host reduce"] = host_allreduce(c, r, m)
    if setup.pipelined:
        # Pushes and pulls of different pieces at once: each NIC carries both directions
        # together, each end's CPU does both phases' work, and the servers reduce pieces as they
        # arrive, so the slowest of the three sets the pace.
        both_ways = 2 * host_bytes if setup.colocated else max(host_bytes, server_bytes)
        limits = {"NIC": transfer(both_ways, c.nic_bytes_per_s),
                  "RPC ends": 2 * max(trainer_end, server_end),
                  "server reduce": reduce_time + optimizer_time}
    else:
        # Push everything, end the step (reduce, optimizer), pull everything: one after another.
        limits = {"NIC": 2 * nic_time, "RPC ends": 2 * max(trainer_end, server_end)}
        terms["server reduce"] = reduce_time
        terms["server optimizer"] = optimizer_time
    slowest = max(limits, key=lambda key: limits[key])
    terms[slowest] = limits[slowest]
    terms["latency"] = 2 * wire + step_calls
    terms["update"] = update
    terms = {key: value for key, value in terms.items() if value}
    return Estimate(name, sum(terms.values()), terms)


def strategies(c: Cluster, r: Rates, server_counts: Sequence[Tuple[str, int]]
               ) -> List[Tuple[str, Estimate, str]]:
    """Every strategy for cluster c: (column key, estimate, kind), kind 'allreduce' or 'ps'."""
    out = [("ring", ring_allreduce(c, r), "allreduce"),
           ("hier", hierarchical_allreduce(c, r), "allreduce")]
    for label, s in server_counts:
        cs = replace(c, servers=s)
        for key, setup, text in (
                ("opt-co", PsSetup("optimizer", colocated=True),
                 "PS, optimizer role, {} on the trainers' hosts"),
                ("opt-own", PsSetup("optimizer", colocated=False),
                 "PS, optimizer role, {} on machines of their own"),
                ("sum-co", PsSetup("sum", colocated=True),
                 "PS, summation role, {} on the trainers' hosts"),
                ("sum-own", PsSetup("sum", colocated=False),
                 "PS, summation role, {} on machines of their own"),
                ("byteps", PsSetup("sum", colocated=False, local_reduce=True, pipelined=True),
                 "BytePS-like: host reduce, pipelined, {} of their own")):
            servers = f"{s} server{'s' if s != 1 else ''}"
            out.append((f"{key}{label}", parameter_servers(cs, r, setup, text.format(servers)),
                        "ps"))
    return out


def fmt_ms(seconds: float) -> str:
    ms = 1e3 * seconds
    if ms == 0:
        return "0"
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.2f}"


def describe(c: Cluster, preset: str) -> str:
    return (f"M = {c.model_bytes / 1e6:g} MB, {c.trainers} trainers ({c.local_ranks} per host, "
            f"{c.hosts} host{'s' if c.hosts > 1 else ''}), {c.servers} servers, "
            f"{8 * c.nic_bytes_per_s / 1e9:g} Gb/s NICs, {1e6 * c.latency_s:g} us per message "
            f"on the wire; rates: {preset}")


def ratio(part: float, whole: float) -> str:
    """part / whole as '1.23x'; 'n/a' when whole is 0 (allreduce within one host, wire preset)."""
    return f"{part / whole:.2f}x" if whole > 0 else "n/a"


def one_case(c: Cluster, r: Rates, preset: str) -> str:
    rows = strategies(c, r, [("", c.servers)])
    best = {kind: min(e.seconds for _, e, k in rows if k == kind) for kind in ("allreduce", "ps")}
    width = max(len(e.name) for _, e, _ in rows)
    lines = [describe(c, preset), "",
             f"{'strategy':<{width}}  {'ms/step':>8}  {'/ best allreduce':>16}  largest term"]
    for _, e, _ in rows:
        lines.append(f"{e.name:<{width}}  {fmt_ms(e.seconds):>8}  "
                     f"{ratio(e.seconds, best['allreduce']):>16}  {e.bottleneck()}")
    fastest = min(rows, key=lambda row: row[1].seconds)[1]
    lines += ["", f"fastest: {fastest.name}, {fmt_ms(fastest.seconds)} ms; the best parameter "
                  f"servers take {ratio(best['ps'], best['allreduce'])} the best allreduce's time"]
    return "\n".join(lines)


# The cases docs/ps-or-allreduce.md shows.
DOC_MODELS = (("resnet18", 46.8e6), ("VGG16", 553e6))
DOC_TRAINERS = (8, 64, 512)
DOC_GBPS = (25, 100)
DOC_COLUMNS = (("ring", "ring"), ("hier", "hier."), ("opt-co/n", "PS opt, s=n, co."),
               ("opt-own/4", "PS opt, s=n/4, own"), ("sum-own/4", "PS sum, s=n/4, own"),
               ("byteps/4", "BytePS-like, s=n/4"))
DOC_TABLES = (("gradwire", 8, "gradwire's rates as fitted here (CPU trainers, TCP)"),
              ("wire", 8, "the wire alone (GPU trainers in the limit, CPU servers)"),
              ("gradwire", 1, "gradwire's rates, one trainer per machine"))


def doc_table(preset: str, per_host: int, latency_s: float) -> str:
    r = PRESETS[preset]
    head = (["model", "n", "Gb/s"] + [title for _, title in DOC_COLUMNS] +
            ["gradwire PS / best AR", "BytePS-like / best AR"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 3)]
    for model, m in DOC_MODELS:
        for n in DOC_TRAINERS:
            for gbps in DOC_GBPS:
                c = Cluster(m, n, per_host, n, gbps * 1e9 / 8, latency_s)
                rows = {key: e for key, e, _ in
                        strategies(c, r, [("/n", n), ("/4", max(1, n // 4))])}
                cells = [fmt_ms(rows[key].seconds) for key, _ in DOC_COLUMNS]
                ar = min(rows["ring"].seconds, rows["hier"].seconds)
                ours = min(rows[key].seconds for key in ("opt-co/n", "opt-own/4", "sum-own/4"))
                lines.append(f"| {model} | {n} | {gbps} | " + " | ".join(cells) +
                             f" | {ratio(ours, ar)} | {ratio(rows['byteps/4'].seconds, ar)} |")
    return "\n".join(lines)


# BytePS's published comparisons with Horovod + NCCL (end-to-end training speed, 8 V100 GPUs per
# machine): github.com/bytedance/byteps README.md and docs/ps-or-allreduce.md. The text gives no GPU
# count for the CNN figures, so n = 64 (8 machines) is assumed there; BERT-large ran on 256 GPUs
# with mixed precision (2-byte gradients). Servers as in the tables above: s = n / 4.
DOC_BYTEPS = (
    ("ResNet-50", 102.2e6, 64, 20, "+44% (20 Gb/s TCP, NVLink)"),
    ("VGG-16", 553.4e6, 64, 20, "+100% (20 Gb/s TCP, NVLink)"),
    ("ResNet-50", 102.2e6, 64, 100, "+7% (100 Gb/s RoCE, PCIe only: PCIe-bound)"),
    ("VGG-16", 553.4e6, 64, 100, "+17% (100 Gb/s RoCE, PCIe only: PCIe-bound)"),
    ("BERT-large, fp16", 0.67e9, 256, 100, "~90% vs ~70% scaling efficiency (1.3x), 100 Gb/s RDMA"),
)


def byteps_table(latency_s: float) -> str:
    lines = ["| model | M | n | Gb/s | ring | hier. | BytePS-like | predicted speed-up of "
             "communication | BytePS's published speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for model, m, n, gbps, published in DOC_BYTEPS:
        c = Cluster(m, n, 8, n // 4, gbps * 1e9 / 8, latency_s)
        ring, hier = ring_allreduce(c, WIRE), hierarchical_allreduce(c, WIRE)
        byteps = parameter_servers(c, WIRE, PsSetup("sum", colocated=False, local_reduce=True,
                                                     pipelined=True), "BytePS-like")
        best = min(ring.seconds, hier.seconds)
        lines.append(f"| {model} | {m / 1e6:g} MB | {n} | {gbps} | {fmt_ms(ring.seconds)} | "
                     f"{fmt_ms(hier.seconds)} | {fmt_ms(byteps.seconds)} | "
                     f"{best / byteps.seconds:.2f}x | {published} |")
    return "\n".join(lines)


EXAMPLE = ["--model-bytes", "46.8e6", "--trainers", "64", "--servers", "16", "--gbps", "25"]
BEGIN = "<!-- generated by scripts/ps_or_allreduce.py --documented: begin -->"
END = "<!-- generated by scripts/ps_or_allreduce.py --documented: end -->"


def documented() -> str:
    """The Markdown docs/ps-or-allreduce.md holds between BEGIN and END."""
    args = parse(EXAMPLE)
    parts = [f"`scripts/ps_or_allreduce.py {' '.join(EXAMPLE)}`:", "", "```text",
             one_case(cluster(args), rates(args), args.rates), "```", ""]
    for preset, per_host, title in DOC_TABLES:
        parts += [f"**{title}** (`--rates {preset} --per-host {per_host}`; ms per step, "
                  f"{args.latency_us:g} us per message on the wire):", "",
                  doc_table(preset, per_host, args.latency_us * 1e-6), ""]
    parts += ["**Beside BytePS's published figures** (`--rates wire --per-host 8`, servers s = n/4 "
              "on machines of their own; ms of communication per step):", "",
              byteps_table(args.latency_us * 1e-6), ""]
    return "\n".join(parts).rstrip() + "\n"


def check(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"{path}: no block between '{BEGIN}' and '{END}'", file=sys.stderr)
        return 1
    current = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    if current == documented():
        print(f"{path}: the generated block matches the formulas")
        return 0
    print(f"{path}: the generated block differs from what the formulas give now; "
          f"replace it with the output of scripts/ps_or_allreduce.py --documented", file=sys.stderr)
    return 1


# Flags overriding a preset's rates: latencies in microseconds, rates in 10^9 bytes per second.
RATE_FLAGS = (
    ("--gloo-step-us", "gloo_step_s", "us"), ("--gloo-gbytes", "gloo_bytes_per_s", "GB/s"),
    ("--shm-us", "shm_s", "us"), ("--shm-gbytes", "shm_bytes_per_s", "GB/s"),
    ("--bcast-us", "bcast_s", "us"), ("--bcast-gbytes", "bcast_bytes_per_s", "GB/s"),
    ("--rpc-message-us", "rpc_message_s", "us"), ("--rpc-gbytes", "rpc_bytes_per_s", "GB/s"),
    ("--step-us", "step_s", "us"), ("--reduce-gbytes", "reduce_bytes_per_s", "GB/s"),
    ("--server-opt-gbytes", "server_opt_bytes_per_s", "GB/s"),
    ("--update-gbytes", "update_bytes_per_s", "GB/s"),
)


def parse(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                epilog="The model and its fit: docs/ps-or-allreduce.md.")
    p.add_argument("--model-bytes", type=float, help="M: gradient bytes per step (4 x parameters)")
    p.add_argument("--trainers", type=int, help="n: trainers")
    p.add_argument("--servers", type=int, help="s: parameter servers [n]")
    p.add_argument("--gbps", type=float, help="B: each machine's NIC, Gb/s each way")
    p.add_argument("--per-host", type=int, default=8, help="g: trainers per host [8]")
    p.add_argument("--latency-us", type=float, default=10.0,
                   help="a: one message's latency on the wire, one way [10]")
    p.add_argument("--rates", choices=sorted(PRESETS), default="gradwire",
                   help="the rates: gradwire's, fitted on the development machine, or the "
                        "wire alone (GPU trainers in the limit) [gradwire]")
    for flag, field, unit in RATE_FLAGS:
        p.add_argument(flag, dest=field, type=float, metavar=unit,
                       help=f"Rates.{field} in {unit} ('inf': no limit) [the preset's]")
    p.add_argument("--documented", action="store_true",
                   help="print the cases of docs/ps-or-allreduce.md (Markdown)")
    p.add_argument("--check", metavar="FILE",
                   help="exit 1 when FILE's generated block differs from --documented")
    args = p.parse_args(argv)
    if not (args.documented or args.check):
        missing = [f for f in ("model_bytes", "trainers", "gbps") if getattr(args, f) is None]
        if missing:
            p.error("needs " + ", ".join("--" + f.replace("_", "-") for f in missing))
        if args.trainers < 1 or (args.servers is not None and args.servers < 1):
            p.error("--trainers and --servers must be at least 1")
        if args.model_bytes <= 0 or args.gbps <= 0 or args.per_host < 1:
            p.error("--model-bytes, --gbps and --per-host must be positive")
    return args


def rates(args: argparse.Namespace) -> Rates:
    r = PRESETS[args.rates]
    changes = {}
    for field in Rates.__dataclass_fields__:
        value = getattr(args, field, None)
        if value is not None:
            changes[field] = value * (1e9 if field.endswith("bytes_per_s") else 1e-6)
    return replace(r, **changes)


def cluster(args: argparse.Namespace) -> Cluster:
    return Cluster(args.model_bytes, args.trainers, args.per_host,
                   args.servers or args.trainers, args.gbps * 1e9 / 8, args.latency_us * 1e-6)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse(argv)
    if args.check:
        return check(args.check)
    if args.documented:
        sys.stdout.write(documented())
        return 0
    print(one_case(cluster(args), rates(args), args.rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
