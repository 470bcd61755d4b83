"""Rewritten code's location table reads the same to both of the
interpreter's readers and covers exactly its instructions.

The line walker (``co_lines``; 3.11's tracing fills a per-instruction line
array from it) finds entries by their first byte's top bit; the position
reader (``co_positions``, tracebacks) by their formats.  The ``bytecode``
package writes a column of 128 to 255 as a raw byte of the one-line form,
which the walker took for an entry: lines were off from there on, the walk
reached past the code, and under a profile or trace function 3.11 wrote
past the end of the array (networkx's suite crashed with escapes counted).
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import cassette
from cassette import rewrite
from cassette.operations import Intercept

from test_rewrite_stack import MODULES, _code_objects, functions_of

KINDS = rewrite.kinds_for(Intercept.ALL)


def lines_by_walker(code):
    """The line of each code unit, as ``co_lines`` gives it."""
    lines = {}
    for start, end, line in code.co_lines():
        for unit in range(start // 2, end // 2):
            lines[unit] = line
    return lines


def lines_by_positions(code):
    return {unit: position[0] for unit, position in enumerate(code.co_positions())}


def assert_readers_agree(code, name):
    walked = lines_by_walker(code)
    assert max(walked, default=-1) < len(code.co_code) // 2, name
    assert walked == lines_by_positions(code), name


# One line, columns past 127, a line below the one before: the one-line
# form, with a column byte the walker reads as an entry.
LONG_LINE = ("lambda _cls, name, signature, def_sig, call_sig, names, n_positional, args, kwargs:"
             " _tuple_new(_cls, (name, signature, def_sig, call_sig, names, n_positional, "
             "args, kwargs))")

WIDE = textwrap.dedent("""
    def wide(a, b):
        x = 1
        return (a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a + b, str(a), str(b))
""")


def test_long_lines_read_alike_rewritten():
    namespace = {}
    exec(compile(WIDE, "<wide>", "exec"), namespace)
    sources = [compile(LONG_LINE, "<string>", "eval"), namespace["wide"].__code__]
    for original in sources:
        for code in _code_objects(original):
            assert_readers_agree(code, code.co_qualname)        # the compiler's own
            rewritten = rewrite._rewritten_code(code, KINDS, (), None)
            assert_readers_agree(rewritten, code.co_qualname)
            # Every position the original has survives, column past 127 included.
            assert set(code.co_positions()) <= set(rewritten.co_positions()), code.co_qualname


@pytest.mark.parametrize("name", MODULES + ["attr._make", "collections"])
def test_rewritten_modules_read_alike(name):
    module = pytest.importorskip(name)
    checked = 0
    for function in functions_of(module):
        for code in _code_objects(function.__code__):
            assert_readers_agree(rewrite._rewritten_code(code, KINDS, (), None),
                                 function.__qualname__)
            checked += 1
    assert checked >= 5


AFTER_WIDE = textwrap.dedent("""
    def wide_then_fail(a, b):
        x = 1
        pair = (a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a + b, str(a), str(b))
        count = len(pair)
        return pair[count] + x
""")


def test_a_traceback_below_a_long_line_names_the_plain_position():
    import traceback

    class Nothing(cassette.Context):
        pass

    namespace = {}
    exec(compile(AFTER_WIDE, "<after-wide>", "exec"), namespace)
    function = namespace["wide_then_fail"]

    def where(call):
        with pytest.raises(IndexError) as caught:
            call(function, 1, 2)
        last = traceback.extract_tb(caught.value.__traceback__)[-1]
        return last.name, last.lineno, getattr(last, "colno", None), getattr(last, "end_colno", None)

    plain = where(lambda f, *a: f(*a))
    assert plain[:2] == ("wide_then_fail", 6)
    assert where(lambda f, *a: cassette.overdub(Nothing(), f, *a)) == plain


SCRIPT = textwrap.dedent("""
    import collections, sys, cassette
    class Nothing(cassette.Context):
        pass
    def program():
        T = collections.namedtuple("T", "name signature def_sig call_sig names "
                                        "n_positional args kwargs")
        return sum(T(*range(8)))
    def watch(frame, event, arg):
        return None
    for install in (sys.setprofile, sys.settrace):
        install(watch)
        print(cassette.overdub(Nothing(), program))
        install(None)
""")


def run_checked(script, watch_every_block=True):
    """Run ``script`` in a fresh interpreter with no disk cache and return
    its output, asserting that nothing was written or read out of bounds:
    on 3.11, whose tracing writes by the line walker, under valgrind where
    it is installed (it sees a write past any block when it happens), else
    with the debug allocator (which sees one when the block is freed).
    ``watch_every_block=False``: the debug allocator only (valgrind is
    slow: a script importing attrs takes 30 s)."""
    env = {**os.environ, "CASSETTE_NO_DISK_CACHE": "1"}
    command = [sys.executable, "-c", script]
    valgrind = (shutil.which("valgrind")
                if watch_every_block and sys.version_info[:2] == (3, 11) else None)
    if valgrind is not None:
        command = [valgrind, "-q", "--error-limit=no", *command]
        env["PYTHONMALLOC"] = "malloc"
    else:
        env["PYTHONMALLOC"] = "debug"
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    out_of_bounds = [line for line in done.stderr.splitlines()
                     if "Invalid read" in line or "Invalid write" in line
                     or "Invalid free" in line]
    assert not out_of_bounds, done.stderr[-4000:]
    return done.stdout.strip()


def test_a_watched_long_line_does_not_corrupt_the_heap():
    """The crash (3.11): a profile function (``count_escapes``) or a trace
    function watching rewritten code with such a line wrote past the line
    array."""
    assert run_checked(SCRIPT).split() == [str(sum(range(8)))] * 2


def test_attrs_under_a_tracer_does_not_corrupt_the_heap():
    """The same, first seen as attrs' class decorator overdubbed under
    ``sys.settrace``."""
    pytest.importorskip("attrs")
    script = textwrap.dedent("""
        import sys, attrs, cassette
        def program():
            @attrs.define
            class Dims:
                w: int = attrs.field(default=1)
                h: int = 2
            return Dims(3).w + Dims(4).h
        class Nothing(cassette.Context):
            pass
        def trace(frame, event, arg):
            return trace
        sys.settrace(trace)
        print(cassette.overdub(Nothing(), program))
    """)
    assert run_checked(script, watch_every_block=False) == "5"
