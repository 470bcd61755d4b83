"""Every ```python block of ``docs/*.md`` runs, and its ``assert``s hold.

The blocks of one file run in order in one namespace, like a doctest file:
a later block may use what an earlier one defined.  That namespace is a real
module registered in ``sys.modules`` while the file runs, so classes and
functions defined by the examples pickle by reference as they would in a
user's module.  Each block is compiled with the Markdown file's path and its
own line numbers, so a failing ``assert`` points at the line of the guide.

Blocks that are not meant to run are fenced as ```text (or another
language); a fence spelled like Python but not exactly ```python (```py,
```python3, ```pycon) is rejected so that no example escapes the test by
accident.
"""

import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
GUIDES = sorted(DOCS.glob("*.md"))

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[^\s`]*)")
_PYTHONISH = {"py", "python3", "pycon", "ipython", "py3"}


class Block:
    """One fenced code block: its language, first line number and source."""

    def __init__(self, language, line, source):
        self.language = language
        self.line = line          # 1-based line of the first line of code
        self.source = source

    def __repr__(self):
        return f"<{self.language} block at line {self.line}>"


def fenced_blocks(text):
    """The fenced blocks of a Markdown text, in order."""
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence = match.group("fence")
        indent = len(match.group("indent"))
        language = match.group("info").lower()
        body = []
        index += 1
        start = index + 1
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence) and not closing.strip(fence[0]):
                break
            body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
            index += 1
        else:
            raise ValueError(f"unclosed fence opened before line {start}")
        blocks.append(Block(language, start, "\n".join(body) + "\n"))
        index += 1
    return blocks


#: Libraries a guide's example may use that an interpreter may lack (a
#: debug build has no wheels of them): the guide runs up to that example.
OPTIONAL_LIBRARIES = ("numpy", "scipy", "pandas")


def python_blocks(path):
    return [b for b in fenced_blocks(path.read_text(encoding="utf-8")) if b.language == "python"]


def run_guide(path):
    """Run the ```python blocks of ``path`` in one fresh module namespace."""
    name = "cassette_docs_" + re.sub(r"\W", "_", path.stem)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        for block in python_blocks(path):
            # Pad with blank lines so line numbers are the guide's own.
            source = "\n" * (block.line - 1) + block.source
            code = compile(source, str(path), "exec")
            try:
                exec(code, module.__dict__)
            except ModuleNotFoundError as exc:
                if exc.name not in OPTIONAL_LIBRARIES:
                    raise
                pytest.skip(f"could not import '{exc.name}': {path.name} from line "
                            f"{block.line} on not run")
    finally:
        del sys.modules[name]
    return module


def test_guides_exist():
    names = {p.name for p in GUIDES}
    assert {"overdub.md", "dispatch.md", "architecture.md"} <= names


@pytest.mark.parametrize("path", GUIDES, ids=[p.name for p in GUIDES])
def test_fences_are_unambiguous(path):
    for block in fenced_blocks(path.read_text(encoding="utf-8")):
        assert block.language not in _PYTHONISH, (
            f"{path.name}:{block.line}: fence a runnable example as ```python "
            f"and a non-runnable one as ```text, not ```{block.language}")


@pytest.mark.parametrize("path", GUIDES, ids=[p.name for p in GUIDES])
def test_examples_make_assertions(path):
    blocks = python_blocks(path)
    assert blocks, f"{path.name} has no ```python examples"
    asserting = [b for b in blocks if re.search(r"^\s*assert\b", b.source, re.M)]
    assert len(asserting) * 2 >= len(blocks), (
        f"{path.name}: most examples should check their claims with assert "
        f"({len(asserting)} of {len(blocks)} do)")


@pytest.mark.skipif(sys.flags.optimize > 0, reason="assert statements are stripped under -O")
@pytest.mark.parametrize("path", GUIDES, ids=[p.name for p in GUIDES])
def test_examples_run(path):
    run_guide(path)


def test_block_parser():
    text = "\n".join([
        "intro",
        "```python",
        "x = 1",
        "```",
        "```text",
        "not code",
        "```",
        "- item",
        "",
        "  ```python",
        "  y = 2",
        "  ```",
    ])
    blocks = fenced_blocks(text)
    assert [(b.language, b.line, b.source) for b in blocks] == [
        ("python", 3, "x = 1\n"),
        ("text", 6, "not code\n"),
        ("python", 11, "y = 2\n"),
    ]
