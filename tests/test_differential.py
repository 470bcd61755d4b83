"""Differential fuzzing: generated programs run plainly and overdubbed must
give the same results.

``tests/program_generator.py`` writes, from a seed, a valid, terminating and
deterministic program (``match`` in all its forms, comprehensions,
generators, ``with``, ``try``/``except*``, class bodies, closures, f- and
t-strings, unpacking, loops…) whose ``entry()`` returns what it observed,
exceptions included.  Each program is compiled and executed into a fresh
module namespace for each run; its result, compared by ``repr`` (values,
exception types and messages), must be the same plainly and overdubbed
under a context that defines nothing, one with a catch-all prehook and
posthook, and one with tagging enabled.

By default the test runs ``DEFAULT_COUNT`` programs from seed
``DEFAULT_SEED`` (a few seconds).  A longer run, on demand::

    CASSETTE_FUZZ_COUNT=5000 CASSETTE_FUZZ_SEED=1000 python -m pytest tests/test_differential.py

runs 5000 programs, seeds 1000 to 5999 (``CASSETTE_FUZZ_SEED`` alone moves
the default run).  On a mismatch the test fails with the seed, the context,
both results and the smallest failing program the reduction found (the
parts of the program that fail alone, with statements taken out while it
still fails), ready to paste into a file and run.  ``python
tests/test_differential.py SEED`` prints the program of one seed.
"""

import os
import sys
import types

import pytest

import cassette

import program_generator

DEFAULT_SEED = 20260
DEFAULT_COUNT = 40


class Nothing(cassette.Context):
    pass


class Hooking(cassette.Context):
    """A prehook and a posthook for every operation: each counts."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata[1] += 1


def tagging():
    return cassette.enabletagging(Nothing(), run_program)


CONTEXTS = {
    "nothing": Nothing,
    "hooking": lambda: Hooking(metadata=[0, 0]),
    "tagging": tagging,
}


def _settings():
    seed = int(os.environ.get("CASSETTE_FUZZ_SEED", DEFAULT_SEED))
    count = int(os.environ.get("CASSETTE_FUZZ_COUNT", DEFAULT_COUNT))
    return seed, count


def run_program(source, context=None):
    """The ``repr`` of what ``source``'s ``entry()`` returns, run plainly or
    (given a context) overdubbed, in a fresh module namespace; an exception
    that escapes ``entry`` is described instead."""
    module = types.ModuleType("generated")
    code = compile(source, "<generated>", "exec")
    exec(code, module.__dict__)
    try:
        if context is None:
            result = module.entry()
        else:
            result = cassette.overdub(context, module.entry)
    except BaseException as error:     # noqa: B902 - reported, not swallowed
        return f"escaped {type(error).__name__}: {error}"
    return repr(result)


_plain_results = {}


def plain_result(source):
    """``run_program(source)``, once per source (the contexts share it)."""
    result = _plain_results.get(source)
    if result is None:
        if len(_plain_results) > 1000:
            _plain_results.clear()
        result = _plain_results[source] = run_program(source)
    return result


def mismatch(source, make_context):
    """``(plain, overdubbed)`` results of ``source`` when they differ, else None."""
    plain = plain_result(source)
    dubbed = run_program(source, make_context())
    return None if plain == dubbed else (plain, dubbed)


def minimal_failing_source(program, make_context):
    """The smallest source found that still mismatches: the first part that
    fails alone (or all parts), then greedily without each statement (a
    line and the lines indented below it) while it compiles and fails."""
    source = program.source()
    for index in range(len(program.parts)):
        alone = program.source(keep=[index])
        if mismatch(alone, make_context):
            source = alone
            break
    lines = source.split("\n")
    index = len(lines) - 1
    while index >= 0:
        line = lines[index]
        if not line.strip() or line.startswith(("def entry", "PARTS")):
            index -= 1
            continue
        indent = len(line) - len(line.lstrip())
        end = index + 1
        while end < len(lines) and (not lines[end].strip()
                                    or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        candidates = [lines[:index] + lines[end:]]
        if line.rstrip().endswith(":"):
            # A compound statement may need a body: try ``pass`` instead.
            candidates.append(lines[:index + 1] + [" " * (indent + 4) + "pass"] + lines[end:])
        for candidate in candidates:
            text = "\n".join(candidate)
            try:
                compile(text, "<reduced>", "exec")
            except SyntaxError:
                continue
            try:
                still = mismatch(text, make_context)
            except Exception:
                still = None
            if still:
                lines = candidate
                break
        index = min(index, len(lines)) - 1
    return "\n".join(lines)


def seeds():
    seed, count = _settings()
    return range(seed, seed + count)


@pytest.mark.parametrize("context_name", sorted(CONTEXTS))
def test_generated_programs_run_alike_plain_and_overdubbed(context_name):
    make_context = CONTEXTS[context_name]
    failures = []
    for seed in seeds():
        program = program_generator.generate(seed)
        found = mismatch(program.source(), make_context)
        if found:
            failures.append((seed, program, found))
    if failures:
        seed, program, (plain, dubbed) = failures[0]
        reduced = minimal_failing_source(program, make_context)
        plain, dubbed = mismatch(reduced, make_context) or (plain, dubbed)
        pytest.fail(
            f"{len(failures)} of {len(seeds())} generated programs ran differently under "
            f"the {context_name!r} context (seeds {[f[0] for f in failures][:20]}).\n"
            f"First: seed {seed}; plain result:\n  {plain}\noverdubbed:\n  {dubbed}\n"
            f"Reduced program (run entry()):\n{reduced}")


def test_generated_programs_are_deterministic():
    """Two plain runs of the same program agree: what the differential
    test compares is the program's, not chance's."""
    seed, _ = _settings()
    for offset in range(5):
        source = program_generator.generate(seed + offset).source()
        assert run_program(source) == run_program(source)


if __name__ == "__main__":
    print(program_generator.generate(int(sys.argv[1])).source())
