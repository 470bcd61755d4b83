"""The locks cassette's modules share with the program's threads, sound
across ``os.fork``.

A process made by ``fork`` has one thread, the one that forked; a lock
another thread held at that moment stays held in the child for ever, and
the child's first overdub — under the command line, a ``multiprocessing``
child's whole life — would wait on it.  So every lock cassette makes comes
from :func:`lock`, and at a fork:

* before it, the forking thread takes each of them (in the order they were
  made, waiting at most ``FORK_WAIT`` seconds for each): the child's
  copies of what they guard are then as consistent as the parent's, as the
  ``logging`` module does for its own lock;
* after it, the parent releases what it took; the child too, and a lock
  that was not taken (another thread kept it past the wait: it may be
  waiting for one the forking thread took) is made anew there, unlocked.

The locks are reentrant because the interpreter runs the other at-fork
hooks while the forking thread holds them: those the program or the
standard library registered (``logging``'s, ``threading``'s) are routed,
so overdubbed, and use these locks again — in the child too, where a
hook registered before this module's runs before this module's releases
them (the child's thread has the forking thread's identity).
"""

from __future__ import annotations

import os
import threading
import weakref

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_RLock, _ref = threading.RLock, weakref.ref

#: How long, at most, the forking thread waits for each lock.
FORK_WAIT = 1.0

_made = []          # weak references to every lock made here, oldest first
_taken = []         # the locks the forking thread took for the fork in progress


def lock():
    """A new ``threading.RLock``, sound across forks."""
    return _noted(_RLock())


def _noted(made):
    _made.append(_ref(made))
    if len(_made) % 64 == 0:
        _made[:] = [ref for ref in _made if ref() is not None]
    return made


def _before_fork():
    _taken.clear()
    for ref in list(_made):
        made = ref()
        if made is not None:
            _taken.append((made, made.acquire(timeout=FORK_WAIT)))


def _after_fork_in_parent():
    for made, taken in reversed(_taken):
        if taken:
            made.release()
    _taken.clear()


def _after_fork_in_child():
    for made, taken in reversed(_taken):
        if taken:
            made.release()
        else:
            made._at_fork_reinit()
    _taken.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
