"""A snapshot of the builtins, taken when cassette is imported.

cassette's runtime modules run with this snapshot as their ``__builtins__``::

    from ._builtins import BUILTINS as __builtins__  # before any def

Since 3.11 a function captures its module's ``__builtins__`` when it is
defined, so a program that replaces ``builtins.len`` or
``builtins.isinstance`` while it runs overdubbed (CPython's own tests do:
``test_functools`` caches ``len`` with ``lru_cache``) changes what *its*
code calls, never what cassette's trampolines and decisions call.
"""

import builtins

BUILTINS = dict(builtins.__dict__)
