"""What a runtime's caches may keep of the program, and for how long.

A runtime caches what it decided for a callee (its target, its rewritten
body) by the callee's identity, and a target refers to the callee's parts:
its globals, its cells, its defaults, the class itself.  The rule: **no
cache is ever what keeps a program's object alive**, at any moment of a
run.  Each entry is one of three kinds:

* held for good: the callee lives as long as a loaded module
  (``callables.lives_with_its_module``), so whatever the entry reaches
  the module reaches too;
* held weakly: the entry dies with the callee (a weak reference's
  callback), and what it holds cannot reach the callee back
  (``callables.may_be_cached_weakly``), so the callee dies — by its
  reference count or by a collection — exactly as in a plain run;
* forgotten before collections: the entry may keep the callee alive (a
  class's target holds the class; a closure's copy holds cells that may
  reach it).  Such a callee is in a reference cycle (a class is in its own
  ``__mro__``; a function its own parts reach is in one), which only the
  cyclic garbage collector frees: runtimes drop those entries when a
  collection starts (``gc.callbacks``), and the collection finds the
  program's objects exactly as unreachable as plainly.  A callee that is
  not in a cycle (a function held by nothing else) is never kept this
  way: it must die the moment the program drops it.

A collection of the youngest generation examines only the objects made
since the previous collection; whatever survived one is older.  So at a
young collection a runtime forgets only the entries it noted since the
previous collection whose callee it has not seen survive one (a *young*
entry); at a collection of the older generations it forgets them all.  A
runtime re-makes what it dropped the next time the program calls it, and
notes the callee as a survivor (weakly): its entry, made again, is then
forgotten only by the older generations' collections — re-making every
entry at each young collection cost a run that makes a class, as
dataclasses' ``make_dataclass`` does, a tenth of its time.

Where every collection examines every object (the free-threaded build),
every collection forgets every entry.

On 3.11 a collection can start at any allocation, the core's own work
included, so two rules keep the interpreter safe: the core's runtimes
forget nothing while a resolution is in progress (``Runtime._resolve_miss``,
whose C frames hold entries as they read them: the entries wait for the
next collection), and every runtime empties a weakly kept
function's entry instead of freeing it (``FunctionEntry.forget``: a weak
reference freed while its function's weak references are being cleared
corrupts the interpreter).
"""

from __future__ import annotations

import gc
import sysconfig

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_callbacks = gc.callbacks

# Runtimes (and other holders) holding entries to drop at collections.
_holders = []

#: Every collection examines every object (the free-threaded build).
EVERY_COLLECTION_IS_FULL = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def note_holder(holder) -> None:
    """Have ``holder.forget_dynamic(everything)`` called when the next
    collection starts; ``everything``: the collection examines the older
    generations too.  It returns whether the holder still holds entries to
    forget (it stays noted then).  A holder notes itself once until it is
    called back (a runtime keeps a flag; the core's propagator cache notes
    itself when it stops being empty): each noting is one call back."""
    if not _holders and _forget_before_collecting not in _callbacks:
        _callbacks.append(_forget_before_collecting)
    _holders.append(holder)


def _forget_before_collecting(phase, info):
    """The ``gc.callbacks`` hook: at the start of every collection, every
    noted holder forgets (see the module's docstring)."""
    if phase != "start" or not _holders:
        return
    everything = EVERY_COLLECTION_IS_FULL or info["generation"] >= 1
    holders = _holders[:]
    del _holders[:]
    for holder in holders:
        if holder.forget_dynamic(everything):
            _holders.append(holder)
