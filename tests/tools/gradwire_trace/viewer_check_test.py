#!/usr/bin/env python3
"""The pure parts of tools/gradwire_trace/view_trace.py, without a browser: what the file holds,
the verdict on what the viewer shows, and the exit codes before Chromium starts.
Usage: viewer_check_test.py VIEW_TRACE_PY"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "../../../tools/gradwire_trace/view_trace.py")
spec = importlib.util.spec_from_file_location("view_trace", SCRIPT)
view_trace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(view_trace)

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
        counts = view_trace.file_counts(EVENTS)
        self.assertEqual(counts[1], {"name": "rank 0", "X": 2, "async": 1, "other": 1})
        self.assertEqual(counts[2], {"name": "rank 1", "X": 1, "async": 0, "other": 0})


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.counts = view_trace.file_counts(EVENTS)

    def test_every_slice_and_process_shown_passes(self):
        self.assertEqual(view_trace.check(summary({1: 2, 2: 1}), self.counts,
                                          ["rank 0", "rank 1"]), [])

    def test_a_missing_expected_process_fails(self):
        problems = view_trace.check(summary({1: 2, 2: 1}), self.counts, ["rank 7"])
        self.assertEqual(len(problems), 1)
        self.assertIn("'rank 7'", problems[0])

    def test_dropped_slices_fail(self):
        problems = view_trace.check(summary({1: 1, 2: 1}), self.counts, [])
        self.assertEqual(problems, ["process 1 (rank 0): the viewer shows 1 of the file's 2 slices"])

    def test_no_slices_fail(self):
        problems = view_trace.check(summary({}), {}, [])
        self.assertEqual(problems, ["the viewer shows no slices"])

    def test_import_errors_fail(self):
        problems = view_trace.check(summary({1: 2, 2: 1}, [("error", "bad event")]),
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
        self.assertEqual(view_trace.load_trace(self.write(json.dumps(EVENTS)))["traceEvents"],
                         EVENTS)
        self.assertEqual(view_trace.load_trace(
            self.write(json.dumps({"traceEvents": EVENTS})))["traceEvents"], EVENTS)

    def test_other_json_is_refused(self):
        with self.assertRaises(ValueError):
            view_trace.load_trace(self.write('{"events": []}'))


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

    def test_usage_error(self):
        self.assertEqual(self.run_script().returncode, 2)


if __name__ == "__main__":
    unittest.main()
