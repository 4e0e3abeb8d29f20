"""The pure half of view_trace.py: reading a trace, counting its events, checking them against
the trace event format as the viewers read it, and judging what a viewer reports it shows.
No browser, no side effects beyond reading the file; each function returns problems as
sentences (none: fine)."""

import json

# Phases of the Chrome trace event format that Perfetto and DevTools import.
KNOWN_PHASES = set("BEXiICbneMsftPONDRcS")
ASYNC_PHASES = ("b", "e", "n")
# Slack for slices whose ends meet after the merge's rounding (microseconds).
NESTING_SLACK_US = 0.001


def load_trace(path):
    """The trace at path as {"traceEvents": [...]}, from either JSON form; raises OSError or
    ValueError when it cannot be read as one."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    trace = json.loads(text)
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("neither a JSON array of events nor an object with traceEvents")
    return trace


def file_counts(events):
    """Per pid: the process's name and how many events of each kind the file holds (X: complete
    slices; async: async spans, counted at their begin; other: instants, counters, ...)."""
    counts = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        pid = event.get("pid")
        entry = counts.setdefault(pid, {"name": None, "X": 0, "async": 0, "other": 0})
        phase = event.get("ph")
        if phase == "M":
            if event.get("name") == "process_name":
                entry["name"] = event.get("args", {}).get("name")
        elif phase == "X":
            entry["X"] += 1
        elif phase == "b":
            entry["async"] += 1
        elif phase != "e":
            entry["other"] += 1
    return counts


def slice_span(events):
    """(first, last) microseconds of the complete slices: the earliest ts and the latest
    ts + dur; None when there is none."""
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if isinstance(e, dict) and e.get("ph") == "X" and _is_number(e.get("ts"))
             and _is_number(e.get("dur"))]
    if not spans:
        return None
    return (min(s[0] for s in spans), max(s[1] for s in spans))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_problems(events, limit=20):
    """What Perfetto's or DevTools' importer would drop or misdraw: unknown phases, events
    without a pid, tid or time, slices without a duration, a thread's slices that overlap without
    nesting, and async spans (by process, category, id and name) that end unbegun or never end.
    At most `limit` sentences."""
    problems = []
    slices = {}  # (pid, tid) -> [(ts, dur, name)]
    open_spans = {}  # (pid, cat, id, name) -> begins not yet ended
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") not in KNOWN_PHASES:
            problems.append("event %d: not an event of a known phase: %.80s"
                            % (index, json.dumps(event)))
            continue
        phase = event["ph"]
        if not isinstance(event.get("pid"), int) or not isinstance(event.get("tid", 0), int):
            problems.append("event %d (%s): pid and tid must be integers" % (index, phase))
            continue
        if phase == "M":
            continue
        if not _is_number(event.get("ts")) or event["ts"] < 0:
            problems.append("event %d (%s %r): no time (ts)" % (index, phase, event.get("name")))
            continue
        if phase == "X":
            if not _is_number(event.get("dur")) or event["dur"] < 0:
                problems.append("event %d (X %r): no duration (dur)" % (index, event.get("name")))
                continue
            slices.setdefault((event["pid"], event.get("tid")), []).append(
                (event["ts"], event["dur"], event.get("name")))
        elif phase in ASYNC_PHASES:
            if "id" not in event and "id2" not in event:
                problems.append("event %d (%s %r): an async event without an id"
                                % (index, phase, event.get("name")))
                continue
            key = (event["pid"], event.get("cat"), json.dumps(event.get("id", event.get("id2"))),
                   event.get("name"))
            if phase == "b":
                open_spans[key] = open_spans.get(key, 0) + 1
            elif phase == "e":
                if open_spans.get(key, 0) == 0:
                    problems.append("event %d: async %r (id %s) of process %s ends unbegun"
                                    % (index, key[3], key[2], key[0]))
                else:
                    open_spans[key] -= 1
    for key, left in sorted(open_spans.items(), key=str):
        if left:
            problems.append("async %r (id %s) of process %s: %d begun, never ended"
                            % (key[3], key[2], key[0], left))
    for (pid, tid), spans in sorted(slices.items(), key=str):
        problems.extend(_nesting_problems(pid, tid, spans))
    return problems[:limit] + (["... and %d more" % (len(problems) - limit)]
                               if len(problems) > limit else [])


def _nesting_problems(pid, tid, spans):
    """A thread's slices must nest: each that starts inside another ends inside it too."""
    problems = []
    stack = []  # ends of the enclosing slices
    for ts, dur, name in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][0] <= ts + NESTING_SLACK_US:
            stack.pop()
        end = ts + dur
        if stack and end > stack[-1][0] + NESTING_SLACK_US:
            problems.append("process %s thread %s: %r at %.3f us overlaps %r without nesting"
                            % (pid, tid, name, ts, stack[-1][1]))
            continue
        stack.append((end, name))
    return problems


def viewer_problems(summary, counts, expected):
    """What is wrong with what the viewer shows: summary lists its processes (pid, name,
    threads with their slice counts) and the errors it reported (console); counts are
    file_counts of the file; expected, process names it must show."""
    problems = []
    for level, text in summary["console"]:
        problems.append("the viewer reported an %s: %s" % (level, text))
    shown = {p["name"] if p["name"] is not None else "pid %s" % p["pid"]: p
             for p in summary["processes"]}
    total = sum(t["slices"] for p in summary["processes"] for t in p["threads"])
    if total == 0:
        problems.append("the viewer shows no slices")
    for pid, count in counts.items():
        process = next((p for p in summary["processes"] if p["pid"] == pid), None)
        drawn = sum(t["slices"] for t in process["threads"]) if process else 0
        if drawn < count["X"]:
            problems.append("process %s (%s): the viewer shows %d of the file's %d slices"
                            % (pid, count["name"], drawn, count["X"]))
    for label in expected:
        if label not in shown:
            problems.append("no process named %r (the viewer shows: %s)"
                            % (label, ", ".join(sorted(shown)) or "none"))
    return problems
