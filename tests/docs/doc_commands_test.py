#!/usr/bin/env python3
"""Runs every ```sh block of README.md and docs/ as written, as a reader of a fresh checkout would.

Usage: doc_commands_test.py --source DIR --build DIR [--only TEXT] [--keep] [--markers-only]

Each Markdown file gets a scratch directory that looks like a fresh checkout: the source tree's
top-level entries as symbolic links, `build` linked to the build directory, nothing else. Its
blocks run there in order (a later block may use what an earlier one wrote, as a reader following
the page would), each as one `bash -e -o pipefail` script in its own session with a time limit.
Outputs (results/, data/, *.json) land in the scratch directory, never in the source tree.
Markers (tests/docs/README.md, doc_blocks.py) skip a block with a reason, or run it with shorter
settings. Commands that need Python with torch are left out, and said so, when
`python3 -c 'import torch'` fails. When a block ends, every process it started is killed.

Exit status 0 when every run block succeeded and no marker is malformed; 1 otherwise, naming the
file, line and command that failed.
"""

import argparse
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import List

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import doc_blocks  # noqa: E402

BLOCK_TIMEOUT_S = 300
TOKEN_VARIABLE = "GRADWIRE_DOCS_TEST_TOKEN"
# Entries of the source tree a fresh checkout does not have (build outputs, documented outputs).
NOT_IN_CHECKOUT = {"build", "results", "data", "install", "ckpt", ".git", ".cache"}
# Variables that would make gradwire-bench join an outside job instead of starting its own ranks.
JOB_VARIABLE_PREFIXES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                         "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_", "OMPI_", "PMI_", "SLURM_",
                         "GRADWIRE_")


def markdown_files(source: Path):
    files = [source / "README.md"] + sorted((source / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def make_checkout(source: Path, build: Path, where: Path):
    where.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name in NOT_IN_CHECKOUT or entry.name.startswith("build-"):
            continue
        (where / entry.name).symlink_to(entry)
    (where / "build").symlink_to(build)


def block_script(block: doc_blocks.Block, commands, status_file: Path) -> str:
    """The bash script of a block: before each command, its line goes to status_file and the
    command to the output; after it, the seconds it took."""
    lines = ["set -e -o pipefail"]
    for command in list(block.setup) + commands:
        lines.append(f"printf '%s\\n' {command.line} > {shlex.quote(str(status_file))}")
        lines.append(f"printf '+ %s\\n' {shlex.quote(command.text)}")
        lines.append("__docs_test_start=$SECONDS")
        lines.append(command.text)
        lines.append("printf '+ (%s s)\\n' $((SECONDS - __docs_test_start))")
    return "\n".join(lines) + "\n"


def processes_with_token(token: str):
    """Ids of this user's live processes whose environment carries the block's token."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            pass  # gone, or not ours
    return found


def kill_block(session: int, token: str):
    """Kills the block's session and every process that inherited its token (a launcher's workers
    and servers run in process groups of their own). Returns the ids still found alive before."""
    try:
        os.killpg(session, signal.SIGKILL)
    except OSError:
        pass
    leftovers = processes_with_token(token)
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return leftovers


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Outcome:
    status: int
    timed_out: bool
    leftovers: List[int]  # processes still running when the block ended, since killed
    seconds: float
    cpu_seconds: float  # of the block's processes that were waited for


class Runner:
    def __init__(self, source: Path, build: Path, scratch: Path, torch: bool):
        self.source, self.build, self.scratch, self.torch = source, build, scratch, torch
        self.failures = []
        self.counts = {"as written": 0, "short settings": 0, "skipped": 0}
        self.current = None  # (session, token) of the running block

    def environment(self, token: str):
        env = {k: v for k, v in os.environ.items() if not k.startswith(JOB_VARIABLE_PREFIXES)}
        tmp = self.scratch / "tmp"
        tmp.mkdir(exist_ok=True)
        env.update({TOKEN_VARIABLE: token, "TMPDIR": str(tmp)})
        return env

    def run_file(self, markdown: Path, blocks):
        if not blocks:
            return
        checkout = self.scratch / str(markdown.relative_to(self.source)).replace("/", "_")
        make_checkout(self.source, self.build, checkout)
        for block in blocks:
            self.run_block(block, checkout)

    def skip(self, block, reason):
        self.counts["skipped"] += 1
        print(f"SKIP {block.where()}: {reason}", flush=True)

    def run_block(self, block: doc_blocks.Block, checkout: Path):
        if block.skip:
            return self.skip(block, block.skip)
        commands = block.commands()
        left_out = [] if self.torch else [c for c in commands if c.needs_torch()]
        commands = [c for c in commands if c not in left_out]
        if not commands:
            return self.skip(block, "needs python3 with torch (python3 -c 'import torch' fails)")
        shortened = bool(block.replacements or block.setup or left_out)
        how = "short settings" if shortened else "as written"
        self.counts[how] += 1
        notes = [f"replace {old!r} by {new!r}" for old, new in block.replacements]
        notes += [f"setup: {c.text}" for c in block.setup]
        notes += [f"left out line {c.line} (needs python3 with torch)" for c in left_out]
        print(f"RUN  {block.where()} ({how}{': ' if notes else ''}{'; '.join(notes)})", flush=True)

        name = f"{block.path.replace('/', '_')}-{block.line}"
        status_file = self.scratch / f"{name}.status"
        script = self.scratch / f"{name}.sh"
        script.write_text(block_script(block, commands, status_file))
        log_path = self.scratch / f"{name}.log"
        outcome = self.execute(script, checkout, log_path)
        if outcome.status == 0 and not outcome.leftovers:
            print(f"     ok in {outcome.seconds:.1f} s ({outcome.cpu_seconds:.1f} s of CPU)",
                  flush=True)
            return
        failed_line = status_file.read_text().strip() if status_file.exists() else "?"
        failed = next((c for c in list(block.setup) + commands if str(c.line) == failed_line),
                      None)
        command = (failed.text if failed else "?").replace("\n", "\n        ")
        if outcome.timed_out:
            message = f"{block.path}:{failed_line}: timed out after {BLOCK_TIMEOUT_S} s: {command}"
        elif outcome.status != 0:
            message = f"{block.path}:{failed_line}: exit status {outcome.status}: {command}"
        else:
            message = (f"{block.where()}: the block left {len(outcome.leftovers)} process(es) "
                       f"running (killed: {' '.join(map(str, outcome.leftovers))})")
        self.failures.append(message)
        print(f"FAIL {message}\n     last lines of its output ({log_path.name}):", flush=True)
        for line in log_path.read_text(errors="replace").splitlines()[-40:]:
            print(f"     | {line}")
        sys.stdout.flush()

    def execute(self, script: Path, checkout: Path, log_path: Path) -> "Outcome":
        """Runs a block's script in a session of its own with the time limit, then kills every
        process it started."""
        token = uuid.uuid4().hex
        start, cpu_start = time.monotonic(), _children_cpu_seconds()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(["bash", "--noprofile", "--norc", str(script)],
                                       cwd=checkout, env=self.environment(token), stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.current = (process.pid, token)
        timed_out = False
        try:
            status = process.wait(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_block(process.pid, token)
            status = process.wait()
        # Give exiting processes a moment; anything still carrying the token then is a leak.
        deadline = time.monotonic() + 5
        while processes_with_token(token) and time.monotonic() < deadline:
            time.sleep(0.2)
        leftovers = kill_block(process.pid, token)
        self.current = None
        return Outcome(status, timed_out, leftovers, time.monotonic() - start,
                       _children_cpu_seconds() - cpu_start)

    def stop(self, signum, _frame):
        if self.current:
            kill_block(*self.current)
        print(f"docs test: stopped by signal {signum}; killed the running block", flush=True)
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--only", default="", help="run only blocks whose 'path:line' has this")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--markers-only", action="store_true",
                        help="check the markers of every block and run nothing")
    args = parser.parse_args()
    source, build = args.source.resolve(), args.build.resolve()

    parsed, errors = [], []
    for markdown in markdown_files(source):
        blocks, file_errors = doc_blocks.parse(str(markdown.relative_to(source)),
                                               markdown.read_text())
        parsed.append((markdown, [b for b in blocks if args.only in b.where()]))
        errors += file_errors
    if errors:
        print("docs-test markers are malformed (tests/docs/README.md):")
        for error in errors:
            print(f"  {error}")
        return 1
    if args.markers_only:
        blocks = sum(len(blocks) for _, blocks in parsed)
        print(f"{blocks} blocks, their markers well-formed")
        return 0

    torch = subprocess.run(["python3", "-c", "import torch"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL).returncode == 0
    print(f"python3 with torch: {'yes' if torch else 'no (its commands are left out)'}")
    scratch = Path(tempfile.mkdtemp(prefix="gradwire-docs-test-"))
    runner = Runner(source, build, scratch, torch)
    signal.signal(signal.SIGTERM, runner.stop)
    signal.signal(signal.SIGINT, runner.stop)
    start = time.monotonic()
    try:
        for markdown, blocks in parsed:
            runner.run_file(markdown, blocks)
    finally:
        if args.keep:
            print(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    counts = runner.counts
    print(f"\n{sum(counts.values())} blocks: {counts['as written']} run as written, "
          f"{counts['short settings']} with short settings, {counts['skipped']} skipped; "
          f"{time.monotonic() - start:.0f} s")
    if runner.failures:
        print(f"{len(runner.failures)} failed:")
        for failure in runner.failures:
            print(f"  {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
