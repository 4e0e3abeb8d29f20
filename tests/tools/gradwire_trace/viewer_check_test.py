#!/usr/bin/env python3
"""The pure half of tools/gradwire_trace/trace_check.py (trace_check.py), without a browser: what
the file holds, its check against the trace event format, the verdict on what the viewer shows,
and trace_check.py's exit codes before Chromium starts.
Usage: viewer_check_test.py VIEW_TRACE_PY"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "../../../tools/gradwire_trace/trace_check.py")
spec = importlib.util.spec_from_file_location(
    "trace_check", os.path.join(os.path.dirname(SCRIPT), "trace_check.py"))
trace_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace_check)

EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "rank 0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "trainer"}},
    {"ph": "X", "name": "forward", "pid": 1, "tid": 11, "ts": 0, "dur": 5},
    {"ph": "X", "name": "backward", "pid": 1, "tid": 11, "ts": 6, "dur": 5},
    {"ph": "b", "name": "allreduce", "cat": "comm", "id": 1, "pid": 1, "tid": 11, "ts": 7},
    {"ph": "e", "name": "allreduce", "cat": "comm", "id": 1, "pid": 1, "tid": 11, "ts": 9},
    {"ph": "i", "name": "restart", "pid": 1, "tid": 11, "ts": 12, "s": "p"},
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "rank 1"}},
    {"ph": "X", "name": "forward", "pid": 2, "tid": 21, "ts": 0, "dur": 5},
]


def summary(slices_by_pid, console=()):
    """What the viewer reports: each pid's process with one thread of that many slices."""
    return {"console": list(console), "processes": [
        {"pid": pid, "name": "rank %d" % (pid - 1),
         "threads": [{"tid": pid * 10 + 1, "name": "trainer", "slices": n}]}
        for pid, n in slices_by_pid.items()]}


class FileCountsTest(unittest.TestCase):
    def test_counts_each_process_by_kind(self):
        counts = trace_check.file_counts(EVENTS)
        self.assertEqual(counts[1], {"name": "rank 0", "X": 2, "async": 1, "other": 1})
        self.assertEqual(counts[2], {"name": "rank 1", "X": 1, "async": 0, "other": 0})


class SliceSpanTest(unittest.TestCase):
    def test_from_the_first_slice_to_the_last_end(self):
        self.assertEqual(trace_check.slice_span(EVENTS), (0, 11))

    def test_none_without_slices(self):
        self.assertIsNone(trace_check.slice_span(EVENTS[4:7]))


class FormatTest(unittest.TestCase):
    def test_a_well_formed_trace_passes(self):
        self.assertEqual(trace_check.format_problems(EVENTS), [])

    def test_slices_that_overlap_without_nesting_fail(self):
        events = EVENTS + [{"ph": "X", "name": "step", "pid": 1, "tid": 11, "ts": 3, "dur": 5}]
        problems = trace_check.format_problems(events)
        self.assertEqual(len(problems), 1)
        self.assertIn("'step' at 3.000 us overlaps 'forward' without nesting", problems[0])

    def test_slices_of_different_threads_may_overlap(self):
        events = EVENTS + [{"ph": "X", "name": "step", "pid": 1, "tid": 12, "ts": 3, "dur": 5}]
        self.assertEqual(trace_check.format_problems(events), [])

    def test_async_spans_must_begin_and_end(self):
        events = EVENTS + [
            {"ph": "b", "name": "bucket 0", "cat": "ddp", "id": 2, "pid": 1, "tid": 11, "ts": 1},
            {"ph": "e", "name": "bucket 1", "cat": "ddp", "id": 3, "pid": 1, "tid": 11, "ts": 2}]
        self.assertEqual(trace_check.format_problems(events), [
            "event 10: async 'bucket 1' (id 3) of process 1 ends unbegun",
            "async 'bucket 0' (id 2) of process 1: 1 begun, never ended"])

    def test_events_without_time_duration_or_known_phase_fail(self):
        events = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0},
                  {"ph": "i", "name": "b", "pid": 1, "tid": 1},
                  {"ph": "Q", "pid": 1, "tid": 1, "ts": 0},
                  {"ph": "X", "name": "c", "pid": "1", "tid": 1, "ts": 0, "dur": 1}]
        problems = trace_check.format_problems(events)
        self.assertEqual(len(problems), 4, problems)
        self.assertIn("no duration", problems[0])
        self.assertIn("no time", problems[1])
        self.assertIn("known phase", problems[2])
        self.assertIn("integers", problems[3])


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.counts = trace_check.file_counts(EVENTS)

    def test_every_slice_and_process_shown_passes(self):
        self.assertEqual(trace_check.viewer_problems(summary({1: 2, 2: 1}), self.counts,
                                          ["rank 0", "rank 1"]), [])

    def test_a_missing_expected_process_fails(self):
        problems = trace_check.viewer_problems(summary({1: 2, 2: 1}), self.counts, ["rank 7"])
        self.assertEqual(len(problems), 1)
        self.assertIn("'rank 7'", problems[0])

    def test_dropped_slices_fail(self):
        problems = trace_check.viewer_problems(summary({1: 1, 2: 1}), self.counts, [])
        self.assertEqual(problems,
                         ["process 1 (rank 0): the viewer shows 1 of the file's 2 slices"])

    def test_no_slices_fail(self):
        problems = trace_check.viewer_problems(summary({}), {}, [])
        self.assertEqual(problems, ["the viewer shows no slices"])

    def test_import_errors_fail(self):
        problems = trace_check.viewer_problems(summary({1: 2, 2: 1}, [("error", "bad event")]),
                                    self.counts, [])
        self.assertEqual(problems, ["the viewer reported an error: bad event"])


class LoadTraceTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        self.addCleanup(os.unlink, f.name)
        f.write(text)
        f.close()
        return f.name

    def test_both_json_forms(self):
        self.assertEqual(trace_check.load_trace(self.write(json.dumps(EVENTS)))["traceEvents"],
                         EVENTS)
        self.assertEqual(trace_check.load_trace(
            self.write(json.dumps({"traceEvents": EVENTS})))["traceEvents"], EVENTS)

    def test_other_json_is_refused(self):
        with self.assertRaises(ValueError):
            trace_check.load_trace(self.write('{"events": []}'))


class ExitCodeTest(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              timeout=30)

    def test_skips_without_chromium(self):
        result = self.run_script("trace.json", "--chromium", "/nonexistent/chromium")
        self.assertEqual(result.returncode, 77, result.stderr)
        self.assertIn("is absent", result.stderr)

    def test_an_unreadable_trace_fails_before_the_browser_starts(self):
        # /bin/true stands in for the browser: the trace is read first, and it is not JSON.
        result = self.run_script(__file__, "--chromium", "/bin/true")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("cannot read", result.stderr)

    def test_usage_errors(self):
        self.assertEqual(self.run_script().returncode, 2)
        for window in ("10", "20:10", "-1:5", "a:b"):
            result = self.run_script("trace.json", "--window", window)
            self.assertEqual(result.returncode, 2, window)
            self.assertIn("--window", result.stderr)


if __name__ == "__main__":
    unittest.main()
