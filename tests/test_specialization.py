"""Rewritten code keeps the interpreter's own specializations.

The interpreter specializes a call of a Python function only when the
function has a version, which its MAKE_FUNCTION gives every function it
makes.  From 3.13 on, a function made through the C API has none, so the
Cython core gives each function it makes the version of its code; without
it every call of a rewritten function would push its frame through the
interpreter's generic path (3.13 and 3.14's `fib` ran 1.8-2x plain for
that alone).  The pure-Python runtime makes its functions with
``types.FunctionType``: on 3.11 and 3.12 they get a version when a call
first specializes, on 3.13+ never.
"""

import dis
import gc
import sys
import types

import pytest

import cassette
from cassette.entry import IMPLEMENTATION


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


class Nothing(cassette.Context):
    pass


def _rewritten_copies(function):
    return [obj for obj in gc.get_objects()
            if type(obj) is types.FunctionType and obj is not function
            and obj.__name__ == function.__name__
            and obj.__code__.co_firstlineno == function.__code__.co_firstlineno
            and obj.__code__ is not function.__code__]


def _specialized_calls(function):
    return sorted({instruction.opname for instruction in
                   dis.get_instructions(function, adaptive=True)
                   if instruction.opname.startswith(("CALL", "PRECALL"))})


@pytest.mark.skipif(IMPLEMENTATION == "python" and sys.version_info >= (3, 13),
                    reason="the pure-Python runtime makes functions through "
                           "types.FunctionType, which gives 3.13+ functions no version")
def test_calls_of_rewritten_functions_specialize():
    ctx = Nothing()
    for _ in range(20):
        assert cassette.overdub(ctx, fib, 12) == fib(12)
    copies = _rewritten_copies(fib)
    assert copies, "no rewritten copy of fib found"
    seen = [_specialized_calls(copy) for copy in copies]
    assert any("CALL_PY_EXACT_ARGS" in calls for calls in seen), seen
