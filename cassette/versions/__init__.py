"""The per-Python-version bytecode layer.

Everything cassette knows about how a particular CPython release spells
calls, operators, loops and ``with`` blocks in bytecode lives in this package,
one module per release.  The rest of cassette talks to the layer for the
running interpreter, :data:`LAYER`, through the interface of
:class:`~cassette.versions.common.Layer`.  The layer knows nothing about
contexts, hooks or dispatch: it finds operation sites and emits instructions.

Supporting a new CPython release means adding one module here.
"""

import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13))

if sys.implementation.name != "cpython" or sys.version_info[:2] not in SUPPORTED:
    raise ImportError(
        "cassette supports CPython 3.11, 3.12 and 3.13; this is "
        f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}"
    )

if sys.version_info[:2] == (3, 11):
    from .py311 import Layer311 as _Layer
elif sys.version_info[:2] == (3, 12):
    from .py312 import Layer312 as _Layer
else:
    from .py313 import Layer313 as _Layer

LAYER = _Layer()
