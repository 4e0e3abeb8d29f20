#!/usr/bin/env python3
"""How long a worker's death stops the survivors, three ways in one run (docs/elastic.md, "What
recovery costs"): gradwire's in-memory elastic training, gradwire-run's restart from a checkpoint,
and torchrun's restart of a PyTorch job (when the project's .venv has torch and torchrun).

Each way trains the same MLP with 3 workers; one dies (SIGKILL) at step DIE. The figure is the
time from its death to the next step a survivor (or the restarted group) completes; the median
of --repeat runs. Prints a table and writes --out (JSON).

    python3 bench/elastic/measure_recovery.py --build build [--repeat 3] [--out results/...]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

STEP = re.compile(r"recovery: step (\d+) at (\d+) ms")
DEATH = re.compile(r"recovery: death at (\d+) ms")


def recovery_ms(output, die_step):
    """From the death to the first report of a step past it (a survivor that finished the step
    before the death may report it a moment after)."""
    death = DEATH.search(output)
    if not death:
        raise RuntimeError("no death reported:\n" + output[-3000:])
    died = int(death.group(1))
    after = [int(m.group(2)) for m in STEP.finditer(output)
             if int(m.group(1)) > die_step and int(m.group(2)) > died]
    if not after:
        raise RuntimeError("no step after the death:\n" + output[-3000:])
    return after[0] - died


def run(command, env):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n"
                           + done.stdout[-3000:])
    return done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--die", type=int, default=15, help="the step the worker dies at")
    parser.add_argument("--out", default="results/elastic_recovery.json")
    args = parser.parse_args()
    binary = os.path.join(args.build, "bin")
    run_tool = os.path.join(binary, "gradwire-run")
    worker = os.path.join(binary, "elastic-recovery-worker")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    torchrun = os.path.join(root, ".venv", "bin", "torchrun")
    env = dict(os.environ, GRADWIRE_TIMEOUT="30s", OMP_NUM_THREADS="1")
    die = f"1:{args.die}"

    ways = {
        "gradwire elastic (in memory)": lambda scratch: [
            run_tool, "--elastic", "-n", "3", worker, "elastic", str(args.steps), die],
        "gradwire-run --max-restarts (checkpoint)": lambda scratch: [
            run_tool, "-n", "3", "--max-restarts", "1", worker, "checkpoint", str(args.steps),
            die, scratch],
    }
    if os.path.exists(torchrun):
        ways["torchrun --max-restarts (PyTorch, checkpoint)"] = lambda scratch: [
            torchrun, "--nproc-per-node", "3", "--max-restarts", "1",
            os.path.join(here, "recovery_torch.py"), str(args.steps), die, scratch]
    else:
        print(f"measure_recovery: no {torchrun}: the torchrun way is left out", file=sys.stderr)

    results = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, command in ways.items():  # alternated, so drift hits every way alike
            scratch = tempfile.mkdtemp(prefix="gradwire-recovery-")
            try:
                results[name].append(recovery_ms(run(command(scratch), env), args.die))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

    print(f"From a worker's death (SIGKILL at step {args.die} of {args.steps}, 3 workers) to the "
          f"next completed step, median of {args.repeat}:")
    print(f"{'way':48} {'median ms':>10}  runs (ms)")
    summary = {}
    for name, values in results.items():
        median = statistics.median(values)
        summary[name] = {"median_ms": median, "runs_ms": values}
        print(f"{name:48} {median:10.0f}  {', '.join(str(v) for v in values)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"case": "elastic_recovery", "schema_version": 1, "workers": 3,
                   "steps": args.steps, "die_step": args.die, "repeat": args.repeat,
                   "ways": summary}, out, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
