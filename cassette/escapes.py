"""Counting escapes (reference §3.3).

While ``overdub`` runs, every Python frame that executes on behalf of the
overdubbed program must run rewritten code.  A frame of the program that
runs un-rewritten is an *escape*: its operations are invisible to the
context.  :func:`count_escapes` counts them::

    with cassette.count_escapes() as escapes:
        cassette.overdub(ctx, main)
    assert escapes.total == 0, escapes.report()

A frame runs *on behalf of the program* when the frame that called it runs
rewritten code, or is one of cassette's own functions acting for the
program (the body of an instantiation, a ``class`` statement, ``exec`` …)
called on behalf of the program.  Frames started for a context's handlers
are the handlers' own, and cassette's own code is never counted.  An escape
is such a frame whose code was not rewritten: one the interpreter started
from C (a Python ``__add__`` behind ``+``, a sort key, a property getter)
without cassette's routing reaching it, or code cassette could not rewrite
(listed in ``cassette.rewrite.UNREWRITABLE``).

Counting uses a profile function (``sys.setprofile``) on the calling thread
for the duration of the block, chained to any profile function already
installed; it slows the code it watches several times over.  On 3.11 a
profile function also turns off the interpreter's specialization, under
which it would inline a Python ``__getitem__`` at a hot ``obj[i]``; cassette
keeps that from happening (see ``cassette/_core_src/compat.h``), but the counter
cannot witness it there.

With the Cython core, the interpreter's own calls of Python code are routed
(:mod:`cassette.routing`) and do not escape.  The pure-Python runtime has no
routing: code the interpreter calls from C — a Python ``__add__`` behind
``a + b``, a sort key, a property getter — escapes under it, and this
counter reports it.
"""

from __future__ import annotations

import collections
import os
import sys
from typing import Any, Literal

from . import callables
from .entry import IMPLEMENTATION
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_collections_Counter = collections.Counter
_getprofile = sys.getprofile
_path_abspath = os.path.abspath
_path_dirname = os.path.dirname
_setprofile = sys.setprofile

if IMPLEMENTATION == "cython":
    from ._core import (frame_runtime as _frame_runtime,
                        handler_being_called as _handler_being_called,
                        is_barrier as _is_barrier)
else:
    _frame_runtime = _handler_being_called = _is_barrier = None

_BYTECODE_DIR = os.path.dirname(os.path.abspath(sys.modules["bytecode"].__file__))


class Escapes:
    """What a :func:`count_escapes` block saw.

    ``frames`` maps ``"file:line qualname"`` of each escaping code object to
    the number of times a frame of it started or resumed; ``total`` is their
    sum."""

    __slots__ = ("frames",)
    frames: collections.Counter[str]

    def __init__(self) -> None:
        self.frames = _collections_Counter()

    @property
    def total(self) -> int:
        return sum(self.frames.values())

    def report(self, limit: int = 20) -> str:
        """The most frequent escapes, one per line, for an assertion message."""
        lines = [f"{self.total} escapes"]
        lines += [f"  x{count}: {where}" for where, count in self.frames.most_common(limit)]
        return "\n".join(lines)

    def __repr__(self):
        return f"<Escapes total={self.total} in {len(self.frames)} code objects>"


_runtime_of_code = callables.runtime_of_code


def _is_cassettes(code):
    filename = code.co_filename
    return (callables.is_library_code(code)
            or _path_dirname(_path_abspath(filename)).startswith(_PACKAGE_DIR)
            or filename.startswith(_BYTECODE_DIR))


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def on_behalf_of_program(frame):
    """True when code called by ``frame`` runs on behalf of an overdubbed
    program (see the module documentation)."""
    if frame is None:
        return False
    if _frame_runtime is not None:
        return _frame_runtime(frame) is not None
    acting = callables.acting_for_program_codes()
    while frame is not None:
        code = frame.f_code
        if _runtime_of_code(code) is not None:
            return True
        if code not in acting:
            return False
        frame = frame.f_back
    return False


def _is_handler_frame(frame):
    """True for the first frame of a handler the core is calling, and for
    frames the interpreter starts while calling it, before it has a frame
    (a ``__hash__`` of a keyword the handler's ``**kwargs`` collects).  The
    pure-Python runtime calls handlers from a frame of its own, which
    :func:`on_behalf_of_program` does not look past."""
    if _handler_being_called is None:
        return False
    if _is_barrier(frame.f_back):
        return True
    handler = _handler_being_called()
    if handler is None:
        return False
    function = getattr(handler, "__func__", handler)
    code = getattr(function, "__code__", None)
    if code is None:
        call = callables.lookup_on_type(type(handler), "__call__")
        code = getattr(getattr(call, "__func__", call), "__code__", None)
    return code is frame.f_code


class _Counter:
    def __init__(self, escapes, previous):
        self.escapes = escapes
        self.previous = previous
        self.verdicts = {}        # id(code) -> (code, escaping?)

    def _escaping(self, code):
        entry = self.verdicts.get(id(code))
        if entry is not None and entry[0] is code:
            return entry[1]
        verdict = _runtime_of_code(code) is None and not _is_cassettes(code)
        self.verdicts[id(code)] = (code, verdict)
        return verdict

    def __call__(self, frame, event, arg):
        if (event == "call" and self._escaping(frame.f_code)
                and on_behalf_of_program(frame.f_back) and not _is_handler_frame(frame)):
            code = frame.f_code
            self.escapes.frames[f"{code.co_filename}:{code.co_firstlineno} {code.co_qualname}"] += 1
        if self.previous is not None:
            self.previous(frame, event, arg)


class count_escapes:
    """A context manager counting the escapes of overdubbed code running on
    this thread inside its block; ``as`` gives the :class:`Escapes`."""

    def __init__(self) -> None:
        self.escapes = Escapes()
        self._previous = None

    def __enter__(self) -> Escapes:
        self._previous = _getprofile()
        _setprofile(_Counter(self.escapes, self._previous))
        return self.escapes

    def __exit__(self, *exc_info: object) -> Literal[False]:
        _setprofile(self._previous)
        return False
