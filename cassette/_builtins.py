"""A snapshot of the builtins, taken when cassette is imported.

A program that replaces ``builtins.len`` or ``builtins.isinstance`` while it
runs overdubbed (CPython's own tests do: ``test_functools`` caches ``len``
with ``lru_cache``) must change what *its* code calls, never what cassette's
trampolines and decisions call.  Two ways to use this module:

* Modules that never call into the program (dispatch, rewriting, the
  version layer …) make the snapshot their ``__builtins__`` before defining
  any function (functions capture it since 3.11)::

      from ._builtins import BUILTINS as __builtins__

* Modules whose frames call into the program (the pure runtime, the
  engine's bodies, the operator protocols) keep the program's builtins —
  a C function called from their frames may read the calling frame's
  builtins (an iterator's ``__reduce__`` looks up ``iter`` there, ``exec``
  gives them to globals that lack ``__builtins__``) — and import the names
  they use from here instead, as module globals::

      from ._builtins import len, type
"""

import builtins

BUILTINS = dict(builtins.__dict__)

globals().update({name: value for name, value in BUILTINS.items()
                  if not name.startswith("__")})
