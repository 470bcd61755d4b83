"""What an interpreter built with Py_DEBUG checks and a release build lets
pass: the stack discipline of rewritten code (CPython's assertions) and
reference counts (none goes negative).  The test command runs the suite on
such an interpreter (``python3.14d``: ``tools/dev.py``'s ``3.14d`` run);
on a release build these tests pass too, checking the results only.

Each program runs in a fresh interpreter, so that an abort fails the test
that caused it instead of ending the whole run."""

import os
import subprocess
import sys
import textwrap

import pytest

DEBUG_BUILD = hasattr(sys, "gettotalrefcount")


def run_fresh(source):
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(source)],
                          capture_output=True, text=True,
                          env={**os.environ, "CASSETTE_NO_DISK_CACHE": "1"})
    assert done.returncode == 0, done.stderr[:3000]
    return done.stdout.split("\n")[:-1]


@pytest.mark.parametrize("context", ["Noop", "Counting"])
def test_a_with_block_whose_exit_suppresses_the_exception(context):
    # 3.14: the rewritten `with` kept NULL as its exit's self; after a
    # suppressed exception the interpreter's cleanup pops that slot with
    # POP_TOP, which Py_DEBUG asserts is not NULL (PyStackRef_CLOSE) — an
    # abort on 3.14d, harmless on a release build.  Every way to suppress:
    # a class's __exit__, contextlib.suppress (C-level manager methods
    # through Python code), a generator-based manager, an async with, and
    # nested blocks.
    lines = run_fresh("""
        import asyncio, contextlib, cassette

        class Noop(cassette.Context):
            pass

        class Counting(cassette.Context):
            def prehook(self, f, /, *args, **kwargs):
                self.metadata[0] += 1

        class Suppressing:
            def __enter__(self):
                return "entered"
            def __exit__(self, *exc):
                return True

        class AsyncSuppressing:
            async def __aenter__(self):
                return "entered"
            async def __aexit__(self, *exc):
                return True

        @contextlib.contextmanager
        def swallowing():
            try:
                yield "value"
            except LookupError:
                pass

        async def in_async():
            async with AsyncSuppressing() as value:
                raise KeyError(value)
            return "async suppressed"

        def program():
            out = []
            with Suppressing() as value:
                raise KeyError(value)
            out.append("class")
            with contextlib.suppress(ZeroDivisionError):
                1 / 0
            out.append("suppress")
            with swallowing() as value:
                {}[value]
            out.append("generator")
            with Suppressing(), contextlib.suppress(KeyError):
                with Suppressing():
                    raise ValueError
                {}["k"]
            out.append("nested")
            out.append(asyncio.run(in_async()))
            return out

        plain = program()
        print(plain)
        print(cassette.overdub(%s(metadata=[0]), program))
    """ % context)
    expected = "['class', 'suppress', 'generator', 'nested', 'async suppressed']"
    assert lines == [expected, expected]
