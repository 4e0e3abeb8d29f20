"""The ```sh blocks of gradwire's Markdown files and their docs-test markers (tests/docs/README.md).

Pure functions of a file's text: nothing here reads files or starts processes.

A marker is an HTML comment on its own line, in the run of marker lines right above a block's
opening fence (rendered pages do not show it):

    <!-- docs-test: skip: REASON -->          the block is not run; the test prints REASON
    <!-- docs-test: replace 'OLD' 'NEW' -->    every OLD in the block becomes NEW (short settings)
    <!-- docs-test: setup: COMMAND -->        COMMAND runs first, in the block's directory

Any other line that starts with `<!--` and names docs-test, a marker that is not right above a
```sh block, `skip` together with other markers, or a `replace` whose OLD is not in the block is
an error, so markers cannot rot.
"""

import re
import shlex
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

_FENCE = re.compile(r"^\s*(```+|~~~+)(.*)$")
_MARKER = re.compile(r"^<!-- docs-test: (.*\S) -->$")
_TORCH = re.compile(r"--reference[ =]pytorch|\bpython3?\b")


@dataclass
class Command:
    """One command of a block: its first line in the Markdown file and its text, continuation
    lines (ending in a backslash) included."""
    line: int
    text: str

    def needs_torch(self) -> bool:
        """Whether the command runs Python with torch (`--reference pytorch`, a python3 script)."""
        return bool(_TORCH.search(self.text))


@dataclass
class Block:
    """A ```sh block as written, with its markers."""
    path: str
    line: int  # the opening fence's line (1-based)
    text: str  # the lines between the fences, each ending in a newline
    skip: Optional[str] = None
    replacements: List[Tuple[str, str]] = field(default_factory=list)
    setup: List[Command] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def runnable_text(self) -> str:
        """The block's text with every replacement made (each OLD is known to occur)."""
        text = self.text
        for old, new in self.replacements:
            text = text.replace(old, new)
        return text

    def commands(self) -> List[Command]:
        """The commands the test runs, replacements made; comments and blank lines left out."""
        return split_commands(self.runnable_text(), self.line + 1)


def split_commands(text: str, first_line: int) -> List[Command]:
    """Splits shell text into commands: a line ending in a backslash continues on the next."""
    commands: List[Command] = []
    pending: List[str] = []
    start = first_line
    for number, line in enumerate(text.splitlines(), first_line):
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        pending.append(line)
        if not line.endswith("\\"):
            commands.append(Command(start, "\n".join(pending)))
            pending = []
    if pending:
        commands.append(Command(start, "\n".join(pending)))
    return commands


def _parse_marker(body: str, number: int, block_markers: dict, errors: List[str], path: str):
    def error(message: str):
        errors.append(f"{path}:{number}: {message}: <!-- docs-test: {body} -->")

    kind, _, rest = body.partition(" ")
    rest = rest.strip()
    if kind == "skip:":
        if not rest:
            error("skip needs a reason")
        else:
            block_markers.setdefault("skip", []).append(rest)
    elif kind == "replace":
        try:
            words = shlex.split(rest)
        except ValueError as problem:
            error(f"replace: {problem}")
            return
        if len(words) != 2 or not words[0]:
            error("replace wants two quoted strings, 'OLD' 'NEW', OLD not empty")
        else:
            block_markers.setdefault("replace", []).append((number, words[0], words[1]))
    elif kind == "setup:":
        if not rest:
            error("setup needs a command")
        else:
            block_markers.setdefault("setup", []).append(Command(number, rest))
    else:
        error("unknown marker (skip:, replace or setup:)")


def parse(path: str, text: str) -> Tuple[List[Block], List[str]]:
    """The ```sh blocks of one Markdown file and the marker errors, each 'path:line: what'."""
    blocks: List[Block] = []
    errors: List[str] = []
    lines = text.splitlines()
    markers: dict = {}
    marker_line = 0  # the first line of the pending run of markers, 0 when none
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            ticks, info = fence.group(1), fence.group(2).strip()
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith(ticks):
                end += 1
            if end == len(lines):
                errors.append(f"{path}:{number}: the block is never closed")
            body = "".join(l + "\n" for l in lines[i + 1:end])
            if info.split()[:1] == ["sh"]:
                block = Block(path, number, body)
                _attach(block, markers, errors)
                blocks.append(block)
            elif marker_line:
                errors.append(f"{path}:{marker_line}: docs-test marker above a block that is not "
                              f"```sh (line {number})")
            markers, marker_line = {}, 0
            i = end + 1
            continue
        if line.lstrip().startswith("<!--") and "docs-test" in line:
            match = _MARKER.match(line.strip())
            if not match:
                errors.append(f"{path}:{number}: malformed docs-test marker (wanted "
                              f"'<!-- docs-test: ... -->' alone on its line): {line}")
            else:
                _parse_marker(match.group(1), number, markers, errors, path)
            marker_line = marker_line or number
        elif marker_line:
            errors.append(f"{path}:{marker_line}: docs-test marker not right above a ```sh block")
            markers, marker_line = {}, 0
        i += 1
    if marker_line:
        errors.append(f"{path}:{marker_line}: docs-test marker not right above a ```sh block")
    return blocks, errors


def _attach(block: Block, markers: dict, errors: List[str]):
    skips = markers.get("skip", [])
    if skips and (len(skips) > 1 or markers.get("replace") or markers.get("setup")):
        errors.append(f"{block.where()}: skip goes alone: a skipped block has no other markers")
    block.skip = skips[0] if skips else None
    text = block.text
    for number, old, new in markers.get("replace", []):
        if old not in text:
            errors.append(f"{block.path}:{number}: replace: {old!r} is not in the block at line "
                          f"{block.line}")
        text = text.replace(old, new)
        block.replacements.append((old, new))
    block.setup = markers.get("setup", [])
