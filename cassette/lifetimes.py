"""What a runtime's caches may keep of the program, and for how long.

A runtime caches what it decided for a callee (its target, its rewritten
body) by the callee's identity, and a target refers to the callee's parts:
its globals, its cells, its defaults, the class itself.  The rule: **no
cache is ever what keeps a program's object alive**, at any moment of a
run.  Each entry is one of three kinds:

* held while its module reaches it: a class its module reaches by its
  qualified name (``callables.lives_with_its_module``) lives as long as
  the module does, so whatever the entry reaches the module reaches too —
  until the program drops the class from the module (``del``, a reload, a
  notebook cell run again).  A class is in a reference cycle (its own
  ``__mro__``), so only a collection can free it: when one starts,
  runtimes ask again whether the module still reaches it and forget the
  entry if not;
* held weakly: the entry dies with the callee (a weak reference's
  callback), and what it holds cannot reach the callee back
  (``callables.may_be_cached_weakly``), so the callee dies — by its
  reference count or by a collection — exactly as in a plain run.  Every
  function is held so, a module's too: the program may drop it from its
  module, and it dies there and then;
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
entry), and asks again about the classes it noted since then; at a
collection of the older generations it forgets them all, and asks about
every class.  A
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
import weakref

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_callbacks = gc.callbacks
_ref = weakref.ref

# Weak references to the runtimes holding entries to drop or to ask about
# again at collections (weak: a runtime holding classes of loaded modules
# is noted for as long as it lives, and a note must not keep it — and its
# context — alive); the references dropped at a collection, freed later
# (never while one starts: see the module's docstring); module-level
# caches, asked before the runtimes (whose call sites copy what they hold).
_holders = []
_dropped = []
_module_holders = []

#: Every collection examines every object (the free-threaded build).
EVERY_COLLECTION_IS_FULL = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def note_holder(holder) -> None:
    """Have ``holder.forget_dynamic(everything)`` called when the next
    collection starts, while ``holder`` lives (it is held weakly);
    ``everything``: the collection examines the older generations too.  It
    returns whether the holder still holds entries to forget or to ask
    about (it stays noted then).  A holder notes itself once until it is
    called back (a runtime keeps a flag): each noting is one call back."""
    watch_collections()
    del _dropped[:]
    _holders.append(_ref(holder))


def note_module_holder(holder) -> None:
    """Have ``holder.forget_dynamic(everything)`` called when every
    collection starts, before the runtimes are: for a cache of a module,
    held for good (noted once)."""
    watch_collections()
    if holder not in _module_holders:
        _module_holders.append(holder)


def watch_collections() -> None:
    """Have the hook called when collections start even while no holder is
    noted (the Cython core's caches of what it saw last forget then)."""
    if _callback[0] not in _callbacks:
        _callbacks.append(_callback[0])


def call_back_through(callback) -> None:
    """Have the garbage collector call ``callback(phase, info)`` instead of
    this module's hook, which it is to call: the Cython core's, which calls
    it as cassette's own work (with frames lent: a collection may start
    while the program is at its recursion limit, where a Python hook
    could not even be entered)."""
    if _callback[0] in _callbacks:
        _callbacks[_callbacks.index(_callback[0])] = callback
    _callback[0] = callback


def forget_before_collecting(phase, info):
    """The ``gc.callbacks`` hook: at the start of every collection, every
    noted holder forgets (see the module's docstring)."""
    if phase != "start":
        return
    everything = EVERY_COLLECTION_IS_FULL or info["generation"] >= 1
    for holder in _module_holders:
        holder.forget_dynamic(everything)
    noted = _holders[:]
    del _holders[:]
    for ref in noted:
        holder = ref()
        if holder is not None and holder.forget_dynamic(everything):
            _holders.append(ref)
        else:
            _dropped.append(ref)


# What gc.callbacks holds (see call_back_through).
_callback = [forget_before_collecting]
