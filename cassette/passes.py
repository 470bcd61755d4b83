"""Passes: user bytecode transforms attached to a context (reference §5).

This module defines the value type and how the rewriting layer runs passes
(:func:`run_passes`); the helpers pass authors build with are in
:mod:`cassette.ir`.

* ``Pass(transform)`` wraps a callable ``transform(ctx_type, func, code) ->
  code`` (``code`` is a ``bytecode.Bytecode``).  It works as a decorator
  (``@cassette.Pass``); the result carries the transform's ``__name__``,
  ``__qualname__``, ``__module__`` and ``__doc__`` and exposes the callable as
  ``.transform``.  Calling the Pass calls the transform.
* Passes compare and hash by identity (caches key on them).
* Pickling is by reference: a Pass bound at module level under its qualified
  name (the decorator form) pickles as that global; any other Pass pickles as
  ``Pass(transform)``, which works when the transform itself pickles (a
  module-level function does, by reference).
* :data:`NoPass` is the singleton "no transform" Pass (its transform returns
  the code unchanged); it is the default ``pass_`` of every context and keeps
  its identity through ``pickle`` and ``copy``.
* :func:`run_passes` runs a chain of passes on one function's code: the
  first transform gets a fresh ``bytecode.Bytecode`` of it, each next one what
  the previous returned; whatever goes wrong — the transform raises, returns something
  that is not a ``Bytecode`` (a ``ConcreteBytecode`` or ``ControlFlowGraph``
  is converted), or returns code :func:`cassette.verify.check` rejects —
  raises :class:`cassette.PassError` naming the pass and the function, with
  the cause chained.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any, Callable

import bytecode as _bytecode

from .errors import PassError
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_contextmanager = contextlib.contextmanager
_modules = sys.modules
_update_wrapper = functools.update_wrapper

__all__ = ["Pass", "NoPass", "Transform"]


#: What a pass's transform is: ``transform(ctx_type, func, code) -> code``,
#: ``code`` a ``bytecode.Bytecode`` (a ``ConcreteBytecode`` or
#: ``ControlFlowGraph`` returned is converted).
PassResult = _bytecode.Bytecode | _bytecode.ConcreteBytecode | _bytecode.ControlFlowGraph
Transform = Callable[[type, Any, _bytecode.Bytecode], PassResult]


class Pass:
    """A bytecode pass (see the module docstring for the contract)."""

    transform: Transform

    def __init__(self, transform: Transform | Pass) -> None:
        if isinstance(transform, Pass):
            transform = transform.transform
        if not callable(transform):
            raise TypeError(
                "cassette.Pass expects a callable transform(ctx_type, func, code) -> code, "
                f"got {type(transform).__name__} {transform!r}")
        self.transform = transform
        _update_wrapper(self, transform, updated=())
        if "__name__" not in self.__dict__:
            self.__name__ = type(transform).__name__
        if "__qualname__" not in self.__dict__:
            self.__qualname__ = self.__name__

    def __call__(self, ctx_type: type, func: Any,
                 code: _bytecode.Bytecode) -> PassResult:
        return self.transform(ctx_type, func, code)

    def __repr__(self):
        if self is NoPass:
            return "cassette.NoPass"
        return f"<cassette.Pass {self.__qualname__}>"

    def _is_global(self):
        """True if ``module.qualname`` resolves to this very object."""
        module = _modules.get(self.__dict__.get("__module__"))
        if module is None:
            return False
        obj = module
        for part in self.__qualname__.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
        return obj is self

    def __reduce__(self):
        if self._is_global():
            # pickle stores a reference to the global `__module__.__qualname__`.
            return self.__qualname__
        return (Pass, (self.transform,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _no_transform(ctx_type, func, code):
    """The transform of :data:`NoPass`: returns ``code`` unchanged."""
    return code


#: The default pass: no transform.  A singleton (compare with ``is``).
NoPass = Pass(_no_transform)
NoPass.__name__ = NoPass.__qualname__ = "NoPass"
NoPass.__module__ = __name__
NoPass.__doc__ = "The default pass: leaves code unchanged (a singleton)."


def describe_function(function, code):
    """``qualname (file:line)`` of the function a pass runs on."""
    name = getattr(function, "__qualname__", None) or code.co_qualname
    return f"{name} ({code.co_filename}:{code.co_firstlineno})"


def run_passes(passes, function, code, bytecode):
    """``bytecode`` (of ``code``, the code of ``function``) transformed by
    each ``(context class, Pass)`` of ``passes`` in turn, verified."""
    from . import verify

    for ctx_type, pass_ in passes:
        where = f"cassette pass {pass_.__qualname__} on {describe_function(function, code)}"
        try:
            result = pass_(ctx_type, function, bytecode)
        except Exception as error:
            raise PassError(f"{where} raised {type(error).__name__}: {error}") from error
        result = _as_bytecode(result, where)
        try:
            verify.check(result, code)
        except verify.InvalidBytecode as error:
            raise PassError(f"{where} returned invalid bytecode: {error}") from error
        bytecode = result
    return bytecode


def _as_bytecode(result, where):
    if isinstance(result, _bytecode.Bytecode):
        return result
    try:
        if isinstance(result, _bytecode.ConcreteBytecode):
            return result.to_bytecode(conserve_exception_block_stackdepth=True)
        if isinstance(result, _bytecode.ControlFlowGraph):
            return result.to_bytecode()
    except Exception as error:
        raise PassError(f"{where} returned {type(result).__name__} that does not convert "
                        f"to bytecode.Bytecode: {error}") from error
    raise PassError(f"{where} returned {type(result).__name__} {result!r:.80}, "
                    "not a bytecode.Bytecode")


@_contextmanager
def pass_failures(passes, function, code):
    """Errors raised inside the block (rewriting and assembling a pass's
    output) become :class:`PassError`: the pass made code that does not
    assemble."""
    try:
        yield
    except (RecursionError, MemoryError):
        raise
    except Exception as error:
        names = ", ".join(pass_.__qualname__ for _ctx_type, pass_ in passes)
        raise PassError(
            f"cassette pass {names} on {describe_function(function, code)} made code that "
            f"does not assemble: {type(error).__name__}: {error}") from error
