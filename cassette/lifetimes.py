"""What a runtime's caches may keep of the program, and for how long.

A runtime caches what it decided for a callee (its target, its rewritten
body) by the callee's identity, and a target refers to the callee's parts:
its globals, its cells, the class itself.  For functions and classes that
live as long as their module (``callables.lives_with_its_module``) that
keeps nothing alive the program would free.  For what the program makes
while it runs — a local class, a ``namedtuple`` made in a call, a function
``exec`` made in a namespace of its own, a recursive local function — the
cache would: the target holds the callee, so it can never become garbage.

Such objects always belong to reference cycles (a class is in its own
``__mro__``; a function is in its globals or its cells), which only the
cyclic garbage collector frees.  So runtimes keep them like everything
else, note which entries they are, and drop those entries when a
collection of the older generations starts (``gc.callbacks``): that
collection — and every ``gc.collect()`` — then finds the program's objects
exactly as unreachable as in a plain run, and frees them at the same
moment.  The frequent collections of the youngest generation alone leave
the entries be (re-making them that often costs a run that makes a class,
as dataclasses' ``make_dataclass`` does, a tenth of its time): an object
dropped young is freed by the next older collection instead, and a plain
run's automatic collections come at other moments anyway (overdubbed code
allocates other objects).  A runtime re-makes what it dropped the next time
the program calls it.
"""

from __future__ import annotations

import gc

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_callbacks = gc.callbacks

# Runtimes holding entries to drop at the next collection.
_holders = []


def note_holder(runtime) -> None:
    """Have ``runtime.forget_dynamic()`` called when the next collection of
    the older generations starts.  A holder notes itself once until then
    (a runtime keeps a flag; the core's propagator cache notes itself when
    it stops being empty): each noting is one call back."""
    if not _holders and _forget_before_collecting not in _callbacks:
        _callbacks.append(_forget_before_collecting)
    _holders.append(runtime)


def _forget_before_collecting(phase, info):
    """The ``gc.callbacks`` hook: at the start of a collection of generation
    1 or 2, every noted runtime forgets (see the module's docstring)."""
    if phase != "start" or not _holders or info["generation"] < 1:
        return
    holders = _holders[:]
    del _holders[:]
    for runtime in holders:
        runtime.forget_dynamic()
