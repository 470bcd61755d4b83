"""Passes: user bytecode transforms attached to a context (SPEC §5).

This module only defines the value type; running passes belongs to the
rewriting layer.

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
"""

import functools
import sys

__all__ = ["Pass", "NoPass"]


class Pass:
    """A bytecode pass (see the module docstring for the contract)."""

    def __init__(self, transform):
        if isinstance(transform, Pass):
            transform = transform.transform
        if not callable(transform):
            raise TypeError(
                "cassette.Pass expects a callable transform(ctx_type, func, code) -> code, "
                f"got {type(transform).__name__} {transform!r}")
        self.transform = transform
        functools.update_wrapper(self, transform, updated=())
        if "__name__" not in self.__dict__:
            self.__name__ = type(transform).__name__
        if "__qualname__" not in self.__dict__:
            self.__qualname__ = self.__name__

    def __call__(self, ctx_type, func, code):
        return self.transform(ctx_type, func, code)

    def __repr__(self):
        if self is NoPass:
            return "cassette.NoPass"
        return f"<cassette.Pass {self.__qualname__}>"

    def _is_global(self):
        """True if ``module.qualname`` resolves to this very object."""
        module = sys.modules.get(self.__dict__.get("__module__"))
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
