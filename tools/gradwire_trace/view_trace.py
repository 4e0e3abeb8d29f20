#!/usr/bin/env python3
"""Opens a trace in the trace viewer of headless Chromium and says what the viewer shows.

Usage: view_trace.py TRACE [--screenshot PNG [--window FROM_MS:TO_MS]] [--expect-process LABEL ...]
                     [--timeout SECONDS]

Chromium 156 no longer ships chrome://tracing (Catapult's trace viewer): its page fails with
ERR_FAILED even with the internal debugging pages enabled, and its scripts are gone from
resources.pak. The trace viewer it does ship is DevTools' Performance panel, which opens Chrome
trace event files ("Load profile") through the same trace engine as recordings. This script loads
the bundled DevTools front end (devtools://devtools/bundled/devtools_app.html) in headless
Chromium, driven through the DevTools protocol over --remote-debugging-pipe (standard library
only), parses TRACE with the panel's trace engine (Trace.TraceModel), and prints, per process the
viewer shows, its name and threads with the slices drawn on each; with --screenshot it loads the
trace into the Performance panel itself, expands every process and writes a PNG of the timeline.

Before the browser, trace_check.py (beside this script) checks the events against the trace
event format as Perfetto and DevTools import them: known phases, a pid, tid and time on each
event, a duration on each slice, a thread's slices nested, every async span begun and ended.

It exits with 0 when the file passes that check and the viewer imported it and shows every
process and every complete ("X") slice of the file; 1 when the check finds a problem, the viewer
reports an error, shows no slices, drops slices, or misses a process named with
--expect-process; 2 for usage errors; 77 when Chromium is absent (ctest's SKIP_RETURN_CODE).
Everything is bounded by --timeout, and Chromium (started in a process group of its own, with a
temporary profile) is always stopped and its profile removed.

What the Performance panel does not draw: async spans ("b"/"e", e.g. DDP's buckets and the
collectives), counters and instant events of a generic trace. They are counted from the file,
checked by trace_check.py and printed beside the slices, but only Perfetto (ui.perfetto.dev)
shows them.
"""

import argparse
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import trace_check  # noqa: E402  (beside this script)

DEFAULT_CHROMIUM = "/usr/bin/chromium"
FRONT_END = "devtools://devtools/bundled/devtools_app.html"
EXIT_SKIP = 77
MAX_HEIGHT = 4000  # pixels: a screenshot grows to show every track, up to this


class ViewerError(Exception):
    """Chromium or the viewer failed: it did not start, timed out, or a script threw."""


class Chromium:
    """A headless Chromium driven through the DevTools protocol on fds 3 (in) and 4 (out).

    Messages are JSON texts, each ended by a NUL byte. Not thread-safe; use as a context manager:
    leaving it closes the browser, kills its process group and removes its profile.
    """

    def __init__(self, executable, deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="gradwire-view-trace-")
        self.next_id = 0
        self.buffer = b""
        self.console = []  # (level, text) of the page's console and uncaught exceptions
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "about:blank"],
            pass_fds=(3, 4), preexec_fn=child_fds, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.profile, "chromium.log"), "w"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.process.poll() is None:
            try:
                self.deadline = min(self.deadline, time.monotonic() + 2)
                self._send("Browser.close", {}, None)
                self.process.wait(timeout=3)
            except (ViewerError, OSError, subprocess.TimeoutExpired):
                pass
        try:  # renderers and zygotes share the browser's process group
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _send(self, method, params, session):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.to_chrome, data):]
        return self.next_id

    def _receive(self):
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ViewerError("timed out waiting for Chromium")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise ViewerError("Chromium exited (its log: %s)" % self.log_tail())
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None):
        """Sends a command and returns its result; records console messages meanwhile."""
        wanted = self._send(method, params or {}, session)
        while True:
            message = self._receive()
            if message.get("id") == wanted:
                if "error" in message:
                    raise ViewerError("%s: %s" % (method, message["error"].get("message")))
                return message["result"]
            if message.get("method") == "Runtime.consoleAPICalled":
                p = message["params"]
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                self.console.append((p["type"], text))
            elif message.get("method") == "Runtime.exceptionThrown":
                details = message["params"]["exceptionDetails"]
                self.console.append(("exception", details.get("exception", {}).get(
                    "description", details.get("text", ""))))

    def evaluate(self, session, expression):
        """The value of a script (awaited when it is a promise); a thrown error is a ViewerError."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ViewerError(details.get("exception", {}).get("description", details.get("text")))
        return result["result"].get("value")

    def log_tail(self):
        try:
            with open(os.path.join(self.profile, "chromium.log"), errors="replace") as log:
                return log.read()[-2000:]
        except OSError:
            return "(none)"


# Parses window.gradwireTrace with the Performance panel's trace engine and describes what the
# viewer built: processes (named by process_name metadata), their threads and each thread's
# entries (the slices drawn on its track).
SUMMARIZE = r"""(async () => {
  const Trace = await import('./models/trace/trace.js');
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  const events = window.gradwireTrace.traceEvents;
  await model.parse(events, {metadata: {}, isFreshRecording: false});
  const parsed = model.parsedTrace(0);
  if (!parsed) throw new Error('the trace engine built no model');
  const data = parsed.data;
  const names = new Map([...data.Meta.processNames].map(([pid, e]) => [pid, e.args.name]));
  const processes = [...data.Renderer.processes].map(([pid, process]) => ({
    pid, name: names.get(pid) ?? null,
    threads: [...process.threads].map(([tid, thread]) => ({
      tid, name: thread.name ?? null, slices: thread.entries.length}))}));
  for (const [pid, name] of names) {
    if (!processes.some(p => p.pid === pid)) processes.push({pid, name, threads: []});
  }
  const warnings = [];
  for (const [kind, list] of data.Warnings.perWarning ?? []) warnings.push([kind, list.length]);
  return {generic: data.Meta.traceIsGeneric, processes, warnings,
          rangeMs: data.Meta.traceBounds.range / 1000};
})()"""

# Loads window.gradwireTrace into the Performance panel, closes what covers the timeline,
# expands every process track, zooms to the whole trace and returns the tracks' names.
SHOW_IN_PANEL = r"""(async () => {
  const Common = await import('./core/common/common.js');
  const UI = await import('./ui/legacy/legacy.js');
  const Timeline = await import('./panels/timeline/timeline.js');
  Common.Settings.Settings.instance()
      .createSetting('timeline.user-had-shortcuts-dialog-opened-once', false).set(true);
  await UI.ViewManager.ViewManager.instance().showView('timeline');
  const panel = Timeline.TimelinePanel.TimelinePanel.instance();
  await panel.loadFromEvents(window.gradwireTrace.traceEvents);
  for (let i = 0; i < 100 && !panel.hasActiveTrace(); i++) {
    await new Promise(r => setTimeout(r, 50));
  }
  if (!panel.hasActiveTrace()) throw new Error('the Performance panel shows no trace');
  const split = panel.splitWidget();
  if (split.sidebarIsShowing()) split.hideSidebar();
  panel.flameChart.detailsSplitWidget.hideSidebar();  // the details pane below the chart
  const chart = panel.flameChart.mainFlameChart;
  const groups = chart.timelineData().groups;
  for (let i = 0; i < groups.length; i++) {
    if (!groups[i].expanded) chart.toggleGroupExpand(i);
  }
  const Bounds = await import('./services/trace_bounds/trace_bounds.js');
  const bounds = Bounds.TraceBounds.BoundsManager.instance();
  // The whole trace, with every slice: DevTools leaves events at ts 0 out of its trace bounds,
  // and a merged trace starts at 0.
  const whole = bounds.state().micro.entireTraceBounds;
  const slices = window.gradwireSlices;
  let first = slices.first === null ? whole.min : Math.min(whole.min, slices.first);
  let last = slices.last === null ? whole.max : Math.max(whole.max, slices.last);
  if (slices.window) [first, last] = slices.window;  // --window, in the file's microseconds
  bounds.setTimelineVisibleWindow({min: first, max: last, range: last - first},
                                  {ignoreMiniMapBounds: true, shouldAnimate: false});
  await new Promise(r => setTimeout(r, 300));
  return groups.map(g => g.name);
})()"""

# The rectangle of the Performance panel's timeline down to its last track, and the viewport
# height that would show every track.
MEASURE_PANEL = r"""(async () => {
  await new Promise(r => setTimeout(r, 200));
  const Timeline = await import('./panels/timeline/timeline.js');
  const view = Timeline.TimelinePanel.TimelinePanel.instance().flameChart;
  const chart = view.mainFlameChart;
  const box = view.element.getBoundingClientRect();
  const contentBottom = chart.element.getBoundingClientRect().y + chart.totalContentHeight() + 24;
  const bottom = Math.min(box.y + box.height, contentBottom);
  return {x: box.x, y: box.y, width: box.width, height: Math.max(bottom - box.y, 100),
          viewportNeeded: Math.ceil(window.innerHeight + contentBottom - (box.y + box.height))};
})()"""


def view(args, trace):
    """Opens the trace in the viewer and returns what it shows: generic, rangeMs, processes,
    warnings, console (the errors the page reported while it parsed the trace),
    console_warnings (its warnings) and, with
    --screenshot, tracks (the track names drawn)."""
    deadline = time.monotonic() + args.timeout
    with Chromium(args.chromium, deadline) as chromium:
        target = chromium.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = chromium.call("Target.attachToTarget",
                                {"targetId": target, "flatten": True})["sessionId"]
        chromium.call("Runtime.enable", {}, session)
        chromium.call("Page.enable", {}, session)
        chromium.call("Emulation.setDeviceMetricsOverride",
                      {"width": args.width, "height": args.height, "deviceScaleFactor": 1,
                       "mobile": False}, session)
        chromium.call("Page.navigate", {"url": FRONT_END}, session)
        # The front end is up when its root view is in the page.
        while not chromium.evaluate(session, "document.readyState === 'complete' && "
                                    "!!document.querySelector('body > .root-view')"):
            if chromium.evaluate(session, "location.protocol") == "chrome-error:":
                raise ViewerError("this Chromium does not serve " + FRONT_END)
            time.sleep(0.1)
            if time.monotonic() > deadline:
                raise ViewerError("timed out loading the DevTools front end")
        first_us, last_us = trace_check.slice_span(trace["traceEvents"]) or (None, None)
        slices = json.dumps({"first": first_us, "last": last_us, "window": args.window and
                             [args.window[0] * 1000, args.window[1] * 1000]})
        chromium.call("Runtime.evaluate", {"expression": "window.gradwireTrace = %s; "
                                           "window.gradwireSlices = %s; 0"
                                           % (json.dumps(trace), slices)}, session)
        chromium.console.clear()  # the front end's own start-up messages are not the trace's
        summary = chromium.evaluate(session, SUMMARIZE)
        summary["console"] = [m for m in chromium.console if m[0] in ("error", "exception")]
        summary["console_warnings"] = [text for level, text in chromium.console
                                       if level in ("warning", "warn")]
        if args.screenshot:
            tracks = chromium.evaluate(session, SHOW_IN_PANEL)
            box = chromium.evaluate(session, MEASURE_PANEL)
            if box["viewportNeeded"] > args.height:  # taller, to show every track
                chromium.call("Emulation.setDeviceMetricsOverride", {
                    "width": args.width, "height": min(box["viewportNeeded"], MAX_HEIGHT),
                    "deviceScaleFactor": 1, "mobile": False}, session)
                box = chromium.evaluate(session, MEASURE_PANEL)
            shot = chromium.call("Page.captureScreenshot", {
                "format": "png", "clip": {"x": box["x"], "y": box["y"], "width": box["width"],
                                          "height": box["height"], "scale": 1}}, session)
            with open(args.screenshot, "wb") as png:
                png.write(base64.b64decode(shot["data"]))
            summary["tracks"] = tracks
        return summary


def parse_window(text):
    """FROM_MS:TO_MS as two numbers, FROM_MS < TO_MS (argparse's type for --window)."""
    try:
        first, last = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("not FROM_MS:TO_MS: %r" % text)
    if not 0 <= first < last:
        raise argparse.ArgumentTypeError("FROM_MS must be at least 0 and below TO_MS: %r" % text)
    return (first, last)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a trace in the Chrome trace event format (JSON)")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="also draw the trace in the Performance panel and write a PNG")
    parser.add_argument("--expect-process", metavar="LABEL", action="append", default=[],
                        help="a process track the viewer must show (repeat for more)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds in all (60)")
    parser.add_argument("--width", type=int, default=1600, help="viewport width (1600)")
    parser.add_argument("--height", type=int, default=900, help="viewport height (900)")
    parser.add_argument("--window", metavar="FROM_MS:TO_MS", type=parse_window,
                        help="the screenshot's time window, in the trace's milliseconds "
                        "(default: the whole trace)")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", DEFAULT_CHROMIUM),
                        help="the browser ($CHROMIUM, else %s)" % DEFAULT_CHROMIUM)
    args = parser.parse_args()

    if not (os.path.isfile(args.chromium) and os.access(args.chromium, os.X_OK)):
        print("view_trace: %s is absent: scripts/setup installs it (Debian package chromium)"
              % args.chromium, file=sys.stderr)
        return EXIT_SKIP
    try:
        trace = trace_check.load_trace(args.trace)
    except (OSError, ValueError) as e:
        print("view_trace: cannot read %s: %s" % (args.trace, e), file=sys.stderr)
        return 1
    counts = trace_check.file_counts(trace["traceEvents"])
    format_problems = trace_check.format_problems(trace["traceEvents"])
    try:
        summary = view(args, trace)
    except ViewerError as e:
        print("view_trace: the viewer failed on %s: %s" % (args.trace, e), file=sys.stderr)
        return 1

    print("%s in DevTools' Performance panel (Chromium): %d processes, %.1f ms%s"
          % (args.trace, len(summary["processes"]), summary["rangeMs"],
             "" if summary["generic"] else " (read as a Chrome recording)"))
    for process in sorted(summary["processes"], key=lambda p: p["pid"]):
        count = counts.get(process["pid"], {"X": 0, "async": 0, "other": 0})
        print("  %s (pid %s): %d slices shown of %d; not drawn: %d async spans, %d other events"
              % (process["name"] or "(unnamed)", process["pid"],
                 sum(t["slices"] for t in process["threads"]), count["X"], count["async"],
                 count["other"]))
        for thread in process["threads"]:
            print("    thread %s (tid %s): %d slices"
                  % (thread["name"] or "(unnamed)", thread["tid"], thread["slices"]))
    for kind, n in summary["warnings"]:
        print("  viewer warning %s: %d" % (kind, n))
    for text in summary["console_warnings"]:
        print("  viewer console warning: %s" % text)
    if args.screenshot:
        print("wrote %s (tracks: %s)" % (args.screenshot, ", ".join(summary["tracks"])))
    problems = format_problems + trace_check.viewer_problems(summary, counts, args.expect_process)
    for problem in problems:
        print("view_trace: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
