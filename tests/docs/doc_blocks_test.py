#!/usr/bin/env python3
"""Unit tests of doc_blocks: blocks, commands and markers, and the markers it refuses."""

import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import doc_blocks  # noqa: E402


def parse(text):
    return doc_blocks.parse("doc.md", text)


class Blocks(unittest.TestCase):
    def test_only_sh_blocks_with_their_lines_and_commands(self):
        blocks, errors = parse("text\n```cpp\nint x;\n```\n\n```sh\n# a comment\n"
                               "D=/data   # a variable\ntool convert $D \\\n    out\n\nls out\n```\n")
        self.assertEqual(errors, [])
        self.assertEqual([b.line for b in blocks], [6])
        commands = blocks[0].commands()
        self.assertEqual([c.line for c in commands], [8, 9, 12])
        self.assertEqual(commands[1].text, "tool convert $D \\\n    out")

    def test_indented_block_in_a_list(self):
        blocks, errors = parse("- item:\n\n  <!-- docs-test: skip: slow -->\n  ```sh\n  run\n  ```\n")
        self.assertEqual(errors, [])
        self.assertEqual(blocks[0].skip, "slow")

    def test_torch_commands(self):
        blocks, _ = parse("```sh\nbench ddp --reference pytorch\nbench ddp\n"
                          "run /usr/bin/python3 ref.py\n```\n")
        self.assertEqual([c.needs_torch() for c in blocks[0].commands()], [True, False, True])


class Markers(unittest.TestCase):
    def test_replace_and_setup(self):
        blocks, errors = parse("<!-- docs-test: replace '--repeat 3' '--repeat 1' -->\n"
                               "<!-- docs-test: replace 'a b' '' -->\n"
                               "<!-- docs-test: setup: cp x.json y.json -->\n"
                               "```sh\nbench --repeat 3 a b\nbench --repeat 3\n```\n")
        self.assertEqual(errors, [])
        block = blocks[0]
        self.assertEqual([c.text for c in block.commands()], ["bench --repeat 1 ", "bench --repeat 1"])
        self.assertEqual([(c.line, c.text) for c in block.setup], [(3, "cp x.json y.json")])

    def assert_refused(self, text, expected):
        _, errors = parse(text)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn(expected, errors[0])

    def test_replace_of_text_not_in_the_block(self):
        self.assert_refused("<!-- docs-test: replace '--repeat 5' '--repeat 1' -->\n"
                            "```sh\nbench --repeat 3\n```\n", "doc.md:1: replace: '--repeat 5'")

    def test_malformed_markers(self):
        block = "```sh\nrun\n```\n"
        self.assert_refused("<!-- docs-test: skip -->\n" + block, "unknown marker")
        self.assert_refused("<!-- docs-test: skip: -->\n" + block, "skip needs a reason")
        self.assert_refused("<!-- docs-test: replace 'a' -->\n" + block, "two quoted strings")
        self.assert_refused("<!-- docs-test: replace 'a -->\n" + block, "No closing quotation")
        self.assert_refused("<!-- docs-test: setup: -->\n" + block, "setup needs a command")
        self.assert_refused("<!--docs-test: skip: x -->\n" + block, "malformed")
        self.assert_refused("<!-- docs-test: skip: x\n" + block, "malformed")

    def test_marker_away_from_a_block(self):
        self.assert_refused("<!-- docs-test: skip: x -->\n\n```sh\nrun\n```\n", "not right above")
        self.assert_refused("<!-- docs-test: skip: x -->\n```cpp\nrun\n```\n", "not ```sh")
        self.assert_refused("text\n<!-- docs-test: skip: x -->\n", "not right above")

    def test_skip_goes_alone(self):
        self.assert_refused("<!-- docs-test: skip: x -->\n<!-- docs-test: replace 'run' 'go' -->\n"
                            "```sh\nrun\n```\n", "skip goes alone")

    def test_markers_shown_in_code_are_not_markers(self):
        _, errors = parse("```markdown\n<!-- docs-test: nonsense -->\n```\n"
                          "Write `<!-- docs-test: skip: REASON -->` above a block.\n")
        self.assertEqual(errors, [])

    def test_unclosed_block(self):
        self.assert_refused("```sh\nrun\n", "never closed")


if __name__ == "__main__":
    unittest.main()
