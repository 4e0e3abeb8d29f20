#!/usr/bin/env python3
"""The timeline's cost on a training benchmark, side by side in one run (docs/timeline.md, "The cost").

Runs a `gradwire-bench ddp|hybrid|ps` command ROUNDS times with the timeline off and ROUNDS times
with it on (GRADWIRE_TIMELINE set for every process of the case), alternating off/on and on/off
round by round so that drift in the machine's load falls on both sides alike, and prints for each
configuration the median over rounds of the p50 step time off and on and the median of the
per-round ratios on/off. Also counts the events the processes recorded per step.

    scripts/timeline_overhead.py --rounds 5 -- build/bin/gradwire-bench ddp --preset quick \\
        --world-sizes 2
    scripts/timeline_overhead.py --rounds 5 -- build/bin/gradwire-bench hybrid --preset quick \\
        --servers 8

With --alternate MS (gradwire-bench ddp or hybrid), each round is one run with the timeline alternating
every MS milliseconds (GRADWIRE_TIMELINE_ALTERNATE_MS): the run compares its epochs recorded with
those not recorded, which removes the run-to-run noise of the machine; the script prints the
median over rounds of the runs' ratios.

    scripts/timeline_overhead.py --rounds 10 --alternate 100 -- build/bin/gradwire-bench hybrid \
        --trainers 2 --servers 8 --epochs 300 --warmup 3

The command must not name --json (the script adds its own). Writes the figures as JSON with
--json PATH. Exits 1 when a run fails.
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def trainer_case_label(document):
    """"hybrid 2x8": a trainer case's configuration, as the tables label it."""
    return "%s %dx%d" % (document["benchmark"], document["settings"]["trainers"],
                         document["settings"]["servers"])


def step_times(document):
    """{configuration: p50 step seconds} of one gradwire-bench JSON document."""
    found = {}
    if document.get("benchmark") == "ddp":
        for benchmark in document["benchmark_results"]:
            for result in benchmark["result"]:
                if not result.get("ddp"):
                    continue
                label = "%s %s" % (benchmark["model"], result["label"])
                found[label] = statistics.median(result["measurements"])
    else:
        summary = document["summary"]["all"]
        key = next(k for k in summary if k.startswith("p50_sec_per_"))
        found[trainer_case_label(document)] = summary[key]
    return found


def steps_of(document):
    """Timed steps per process of one run (iterations or epochs x batches), for events per step."""
    if document.get("benchmark") == "ddp":
        return document["iterations"] + document["warmup"]
    settings = document["settings"]
    return (settings["epochs"] + settings["warmup"]) * settings["batches_per_epoch"]


def count_events(folder):
    """Trace events (not metadata) in the process files of one run."""
    events = 0
    files = glob.glob(os.path.join(folder, "*.json"))
    for path in files:
        with open(path) as handle:
            for line in handle:
                if '"ph":"M"' not in line and line.startswith((",{", "[{")):
                    events += 1
    return events, len(files)


def run_bench(command, env, result_path):
    """Runs the command with `env` and --json result_path; returns the document it wrote."""
    completed = subprocess.run(
        command + ["--json", result_path], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    if completed.returncode != 0:
        sys.stderr.write(completed.stderr)
        raise SystemExit("timeline_overhead: %s failed with exit status %d" %
                         (" ".join(command), completed.returncode))
    with open(result_path) as handle:
        return json.load(handle)


def run_once(command, work, timeline):
    result_path = os.path.join(work, "result.json")
    env = dict(os.environ)
    env.pop("GRADWIRE_TIMELINE", None)
    trace = os.path.join(work, "trace.json")
    if timeline:
        shutil.rmtree(trace + ".d", ignore_errors=True)
        env["GRADWIRE_TIMELINE"] = trace
    document = run_bench(command, env, result_path)
    events = None
    if timeline:
        count, files = count_events(trace + ".d")
        events = {"events": count, "files": files, "steps": steps_of(document)}
    return step_times(document), events


def alternating_figures(document):
    """{configuration: recorded/unrecorded p50 ratio} of one run with an alternating timeline."""
    found = {}
    if document.get("benchmark") == "ddp":
        for benchmark in document["benchmark_results"]:
            for result in benchmark["result"]:
                if result.get("timeline_alternating"):
                    label = "%s %s" % (benchmark["model"], result["label"])
                    found[label] = result["timeline_alternating"]["p50_ratio"]
    elif document["summary"].get("timeline_alternating"):
        found[trainer_case_label(document)] = (
            document["summary"]["timeline_alternating"]["p50_ratio"])
    return found


def alternating(command, rounds, alternate_ms, json_path):
    """--alternate: one run a round, its recorded and unrecorded steps compared."""
    ratios = {}
    with tempfile.TemporaryDirectory(prefix="timeline-overhead-") as work:
        result_path = os.path.join(work, "result.json")
        trace = os.path.join(work, "trace.json")
        for round_index in range(rounds):
            shutil.rmtree(trace + ".d", ignore_errors=True)
            env = dict(os.environ, GRADWIRE_TIMELINE=trace,
                       GRADWIRE_TIMELINE_ALTERNATE_MS=str(alternate_ms))
            figures = alternating_figures(run_bench(command, env, result_path))
            if not figures:
                raise SystemExit("timeline_overhead: the run split no steps (--alternate needs "
                                 "gradwire-bench ddp or hybrid, and steps shorter than a window)")
            for label, ratio in figures.items():
                ratios.setdefault(label, []).append(ratio)
            print("round %d/%d: %s" % (round_index + 1, rounds, ", ".join(
                "%s %.4f" % item for item in figures.items())), file=sys.stderr)
    print("timeline alternating every %d ms: recorded/unrecorded p50 step time, median of %d runs"
          % (alternate_ms, rounds))
    for label, values in ratios.items():
        print("%-28s %9.4fx   runs: %s" % (label, statistics.median(values),
                                          ", ".join("%.3f" % r for r in values)))
    if json_path:
        with open(json_path, "w") as handle:
            json.dump({"command": command, "rounds": rounds, "alternate_ms": alternate_ms,
                       "rows": [{"configuration": label, "ratio_median": statistics.median(values),
                                 "ratios": values} for label, values in ratios.items()]},
                      handle, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--alternate", type=int, metavar="MS",
                        help="one run a round, the timeline alternating every MS ms")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or "--json" in command:
        parser.error("give the gradwire-bench command after --, without --json")
    if args.alternate:
        alternating(command, args.rounds, args.alternate, args.json)
        return

    off, on, ratios, events = {}, {}, {}, []
    with tempfile.TemporaryDirectory(prefix="timeline-overhead-") as work:
        for round_index in range(args.rounds):
            order = (False, True) if round_index % 2 == 0 else (True, False)
            times = {}
            for timeline in order:
                times[timeline], counted = run_once(command, work, timeline)
                if counted:
                    events.append(counted)
            for label, seconds in times[False].items():
                off.setdefault(label, []).append(seconds)
                on.setdefault(label, []).append(times[True][label])
                ratios.setdefault(label, []).append(times[True][label] / seconds)
            print("round %d/%d: %s" % (round_index + 1, args.rounds, ", ".join(
                "%s %.4f/%.4f" % (label, times[False][label], times[True][label])
                for label in times[False])), file=sys.stderr)

    rows = []
    print("%-28s %12s %12s %10s   %s" % ("configuration", "off s/step", "on s/step",
                                         "on/off", "per-round ratios"))
    for label in off:
        row = {
            "configuration": label,
            "off_p50_s": statistics.median(off[label]),
            "on_p50_s": statistics.median(on[label]),
            "ratio_median": statistics.median(ratios[label]),
            "ratios": ratios[label],
        }
        rows.append(row)
        print("%-28s %12.5f %12.5f %9.3fx   %s" % (
            label, row["off_p50_s"], row["on_p50_s"], row["ratio_median"],
            ", ".join("%.3f" % r for r in ratios[label])))
    last = events[-1] if events else None
    if last:
        print("events recorded in the last traced run: %d in %d process files, %d steps per process"
              " (%.0f events per step and process)" % (
                  last["events"], last["files"], last["steps"],
                  last["events"] / max(1, last["files"] * last["steps"])))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"command": command, "rounds": args.rounds, "rows": rows,
                       "events": last}, handle, indent=1)


if __name__ == "__main__":
    main()
