"""The examples of ``docs/cli.md`` print what the guide shows.

The guide's ```python blocks that start with a ``# name.py`` comment are
programs: they are written to a temporary directory.  Each ```console block
is a list of ``$ command`` lines, each followed by its expected output; the
command runs there (``python`` is this interpreter; standard error merged
into standard output, unbuffered, as a terminal shows them) and its output
must equal the text shown, with two allowances stated in the guide: numbers
with three decimals (times) compare as ``#.###``, and ``…`` stands for any
text within a line, or, alone on the last line, for the rest of the output.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from test_docs import fenced_blocks

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
_TIME = re.compile(r"\d+\.\d{3}\b")


def programs_and_commands():
    programs, commands = {}, []
    for block in fenced_blocks(GUIDE.read_text(encoding="utf-8")):
        first = block.source.split("\n", 1)[0]
        if block.language == "python" and re.fullmatch(r"# \w+\.py", first):
            programs[first[2:]] = block.source
        elif block.language == "console":
            for chunk in re.split(r"^\$ ", block.source, flags=re.M)[1:]:
                command, _, output = chunk.partition("\n")
                commands.append((block.line, command, output))
    return programs, commands


PROGRAMS, COMMANDS = programs_and_commands()


def matches(expected, actual):
    expected, actual = _TIME.sub("#.###", expected), _TIME.sub("#.###", actual)
    expected_lines, actual_lines = expected.splitlines(), actual.splitlines()
    if expected_lines and expected_lines[-1] == "…":
        expected_lines = expected_lines[:-1]
        actual_lines = actual_lines[:len(expected_lines)]
    if len(expected_lines) != len(actual_lines):
        return False
    return all(re.fullmatch(".*".join(map(re.escape, want.split("…"))), got)
               for want, got in zip(expected_lines, actual_lines))


def test_the_guide_has_examples():
    assert {"fib.py", "bodies.py"} <= set(PROGRAMS) and len(COMMANDS) >= 4


@pytest.mark.parametrize("line, command, expected", COMMANDS,
                         ids=[f"line{line}" for line, _, _ in COMMANDS])
def test_command_output(tmp_path, line, command, expected):
    for name, source in PROGRAMS.items():
        (tmp_path / name).write_text(source)
    words = shlex.split(command)
    assert words[0] == "python"
    environment = dict(os.environ, PYTHONUNBUFFERED="1")
    environment.pop("NO_COLOR", None)
    result = subprocess.run([sys.executable, *words[1:]], cwd=tmp_path, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=300)
    assert matches(expected, result.stdout), (
        f"docs/cli.md:{line}: {command}\n--- expected\n{expected}--- got\n{result.stdout}")


def test_matching_rules():
    assert matches("in 0.012 seconds\n", "in 3.141 seconds\n")
    assert matches("a …/x.py\n", "a /tmp/y/x.py\n") and not matches("a\n", "b\n")
    assert matches("one\n…\n", "one\ntwo\n") and not matches("one\n", "one\ntwo\n")
