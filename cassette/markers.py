"""The markers rewritten code carries among its constants, which the
rewriter emits, the runtimes bind and the disk cache stores by name: a leaf
module, so that each of them can import it.

* :class:`Slot` — a placeholder constant standing for a runtime callable
  (``Slot(name)`` is interned: one object per name);
* :data:`RUNTIME` — the slot every rewritten code object ends its
  constants with;
* :data:`EXHAUSTED` — what a rewritten ``for`` step gets when the iterator
  is exhausted.

None of them decides anything alone when a program holds it: the program
can reach every one (a frame's ``f_code.co_consts``, ``gc.get_objects()``).
An iterator may yield :data:`EXHAUSTED`; a step returning it is a hint the
rewritten loop confirms with the runtime (the ``for_ended`` slot).  A
program's own code may carry a :class:`Slot` among its constants; the
rewriter loads such a constant so that binding leaves it alone.
"""

from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

__all__ = ["EXHAUSTED", "RUNTIME", "Slot"]


class Slot:
    """A placeholder constant standing for a runtime callable."""

    __slots__ = ("name",)
    _interned = {}

    def __new__(cls, name):
        slot = cls._interned.get(name)
        if slot is None:
            slot = object.__new__(cls)
            slot.name = name
            cls._interned[name] = slot
        return slot

    def __repr__(self):
        return f"<slot {self.name}>"

    def __reduce__(self):
        return (Slot, (self.name,))


class _Exhausted:
    __slots__ = ()

    def __repr__(self):
        return "cassette.EXHAUSTED"


#: What the ``for`` slot returns when the iterator is exhausted, or when
#: the iterator yielded this object (the ``for_ended`` slot tells which).
EXHAUSTED = _Exhausted()


#: The last constant of every rewritten code object, bound to the runtime
#: itself: which runtime a running frame belongs to is a property of its
#: code (the core's trampoline and the escape counter read it).
RUNTIME = Slot("runtime")
