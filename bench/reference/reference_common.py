"""What gradwire-bench's PyTorch reference scripts share: torchvision's models and the launcher.

ddp_reference.py, hybrid_reference.py and ps_reference.py import this module from the folder they
sit in (Python puts a script's own folder first on sys.path), so it must stay beside them: in
bench/reference, and in share/gradwire/bench where `cmake --install` puts them all. A copy of a
script passed with --reference-script needs a copy of this file beside it.

  - Models: ResNet/ResNeXt and VGG after torchvision's definitions, with its parameter names and
    order, its initialisation and its parameter counts (TORCHVISION_PARAMETERS, at 1000 classes;
    check_parameter_counts), so the references need no torchvision (Debian's python3-torch has
    none).
  - Launcher (hybrid and ps): run_workers starts one process of the calling script per worker,
    waits for them at most a timeout, and stops them all when one fails or time runs out, naming
    the worker that failed; the workers die with it (die_with_parent).
  - Plain step (hybrid and ps; compute parity, gradwire-bench's bench/cases/parity.h):
    time_plain_steps times the model trained in one process, without DDP or RPC, and
    add_to_document adds the figures to the document the workers wrote.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

import torch
import torch.nn as nn

# ---- models (torchvision's architectures and initialisation; same parameter names and order) ----

# torchvision's parameter counts at 1000 classes; gradwire's zoo has the same (tests/models).
# gradwire-bench's result schema (bench/harness/report.h kSchemaVersion): every script's document
# carries it, and gradwire-bench reads no other.
SCHEMA_VERSION = 2

TORCHVISION_PARAMETERS = {
    "resnet18": 11689512,
    "resnet50": 25557032,
    "resnet101": 44549160,
    "resnext50_32x4d": 25028904,
    "resnext101_32x8d": 88791336,
    "vgg11": 132863336,
    "vgg16": 138357544,
}


def conv3x3(cin, cout, stride=1, groups=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, groups=groups, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride, downsample, groups, width_per_group):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, planes, stride), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = conv3x3(planes, planes), nn.BatchNorm2d(planes)
        self.relu, self.downsample = nn.ReLU(inplace=True), downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):  # v1.5: the stride sits on the 3x3 conv
    expansion = 4

    def __init__(self, cin, planes, stride, downsample, groups, width_per_group):
        super().__init__()
        width = int(planes * (width_per_group / 64.0)) * groups
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = conv3x3(width, width, stride, groups), nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu, self.downsample = nn.ReLU(inplace=True), downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    def __init__(self, block, layers, groups=1, width_per_group=64, num_classes=1000):
        super().__init__()
        self.inplanes, self.groups, self.width = 64, groups, width_per_group
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._stage(block, 64, layers[0], 1)
        self.layer2 = self._stage(block, 128, layers[1], 2)
        self.layer3 = self._stage(block, 256, layers[2], 2)
        self.layer4 = self._stage(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _stage(self, block, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.width)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, 1, None, self.groups, self.width))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


VGG_CONFIGS = {  # channels of each 3x3 conv; "M": 2x2 max pooling (no batch norm)
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],  # configuration A
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"],  # configuration D
}


class Vgg(nn.Module):
    def __init__(self, config, num_classes=1000):
        super().__init__()
        layers, cin = [], 3
        for item in config:
            if item == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, item, 3, padding=1), nn.ReLU(inplace=True)]
                cin = item
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


TORCHVISION_MODELS = {
    "resnet18": lambda classes: ResNet(BasicBlock, [2, 2, 2, 2], num_classes=classes),
    "resnet50": lambda classes: ResNet(Bottleneck, [3, 4, 6, 3], num_classes=classes),
    "resnet101": lambda classes: ResNet(Bottleneck, [3, 4, 23, 3], num_classes=classes),
    "resnext50_32x4d": lambda classes: ResNet(Bottleneck, [3, 4, 6, 3], groups=32,
                                              width_per_group=4, num_classes=classes),
    "resnext101_32x8d": lambda classes: ResNet(Bottleneck, [3, 4, 23, 3], groups=32,
                                               width_per_group=8, num_classes=classes),
    "vgg11": lambda classes: Vgg(VGG_CONFIGS["vgg11"], classes),
    "vgg16": lambda classes: Vgg(VGG_CONFIGS["vgg16"], classes),
}


def torchvision_model(name, num_classes=1000):
    """torchvision's model `name` (a key of TORCHVISION_MODELS), built here."""
    if name not in TORCHVISION_MODELS:
        raise ValueError("no model '%s' here; known: %s" % (name, ", ".join(TORCHVISION_MODELS)))
    return TORCHVISION_MODELS[name](num_classes)


def check_parameter_counts(names):
    """Prints each model's parameter count at 1000 classes against torchvision's; all equal?"""
    ok = True
    for name in names:
        count = sum(p.numel() for p in torchvision_model(name).parameters())
        expected = TORCHVISION_PARAMETERS[name]
        print("%-16s %11d parameters (torchvision: %d) %s"
              % (name, count, expected, "ok" if count == expected else "MISMATCH"), flush=True)
        ok = ok and count == expected
    return ok


# ---- the plain step: the same model trained in one process (compute parity) ----

def time_plain_steps(step, warmup, steps, threads):
    """Runs step() warmup + steps times on `threads` intra-op threads; the timed steps' figures.

    step() trains one plain step (no DDP, no RPC) and returns the seconds it measured itself, so
    that it can make its data off the clock. Returns {"seconds": [...], "warmup": warmup,
    "threads": threads}, the "plain_step" gradwire-bench reads (parse_plain_step). Call it where
    nothing else computes: in the launcher, before it starts the workers.
    """
    torch.set_num_threads(threads)
    seconds = [step() for _ in range(warmup + steps)][warmup:]
    return {"seconds": seconds, "warmup": warmup, "threads": threads}


def add_to_document(path, key, value):
    """Sets `key` of the JSON document at `path` to `value` (the file replaced whole)."""
    with open(path) as f:
        document = json.load(f)
    document[key] = value
    with open(path + ".tmp", "w") as f:
        json.dump(document, f, indent=1)
    os.replace(path + ".tmp", path)


# ---- launcher: the workers of one run, as processes of the calling script ----

def free_port():
    """A loopback port free at the moment (the workers bind it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent(launcher_pid):
    """Makes this worker die when its launcher (process `launcher_pid`, run_workers) does."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != launcher_pid:  # the launcher died before prctl
        sys.exit("%s: the launcher is gone" % os.path.basename(sys.argv[0]))


def stop(processes):
    """Terminates the processes still running; kills those still there 5 s later."""
    for p in processes:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 5
    for p in processes:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def describe_exit(code):
    return "was killed by signal %d" % -code if code < 0 else "exited with status %d" % code


def run_workers(script, arguments, names, json_path, timeout, env):
    """Runs one worker per name in `names` and waits for them; the exit status (0 or 1).

    Worker r is `python script ARGUMENTS --launcher-pid PID --rank r` with `env` (the whole
    environment); the script's worker calls die_with_parent(PID). 0 only when every worker exits
    with 0 and `json_path` was written during the run (a file there before is removed first).
    Otherwise 1, after a line on stderr naming the worker that failed first (a signal before an
    error status: its peers' RPC errors follow it), or the workers still running after `timeout`
    seconds, or the missing file. Every worker still running is stopped on return, also when this
    process gets SIGTERM. Call it from the main thread (it sets the SIGTERM handler).
    """
    prefix = os.path.basename(script)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # run `finally`
    if os.path.exists(json_path):
        os.remove(json_path)  # only this run's document counts as success
    command = [sys.executable, os.path.abspath(script)] + list(arguments) + \
        ["--launcher-pid", str(os.getpid())]
    processes = [subprocess.Popen(command + ["--rank", str(r)], stdin=subprocess.DEVNULL, env=env)
                 for r in range(len(names))]
    deadline = time.monotonic() + timeout
    try:
        while True:
            codes = [p.poll() for p in processes]
            failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                first = min(failed, key=lambda r: (codes[r] >= 0, r))
                others = ", ".join("%s %s" % (names[r], describe_exit(codes[r]))
                                   for r in failed if r != first)
                print("%s: %s (pid %d) %s%s; stopping the others"
                      % (prefix, names[first], processes[first].pid, describe_exit(codes[first]),
                         "; also " + others if others else ""), file=sys.stderr, flush=True)
                return 1
            if all(c == 0 for c in codes):
                if os.path.exists(json_path):
                    return 0
                print("%s: every worker succeeded but %s was not written" % (prefix, json_path),
                      file=sys.stderr, flush=True)
                return 1
            if time.monotonic() > deadline:
                running = ", ".join(names[r] for r, c in enumerate(codes) if c is None)
                print("%s: not finished after %d s (still running: %s); stopping the workers"
                      % (prefix, timeout, running), file=sys.stderr, flush=True)
                return 1
            time.sleep(0.05)
    finally:
        stop(processes)
