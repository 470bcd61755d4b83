"""The per-Python-version bytecode layer.

Everything cassette knows about how a particular CPython release spells
calls, operators, loops and ``with`` blocks in bytecode lives in this package,
one module per release.  The rest of cassette talks to the layer for the
running interpreter, :data:`LAYER`, through the interface of
:class:`~cassette.versions.common.Layer`.  The layer knows nothing about
contexts, hooks or dispatch: it finds operation sites and emits instructions.

Supporting a new CPython release means adding one module here (and a branch
in the core's ``compat.h``); ``docs/architecture.md``, "Adding a CPython
version", is the checklist.
"""

import importlib
import sys

#: The CPython releases cassette runs on, and the module of each one's layer.
SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))


def layer_module(implementation, version):
    """The name of the layer module for ``implementation`` (as
    ``sys.implementation.name``) at ``version`` (``(major, minor)``); it
    defines the layer class ``Layer<major><minor>``.  Raises ImportError,
    naming the supported releases, for any other interpreter: this is the
    one place that decides whether cassette runs."""
    if implementation != "cpython" or tuple(version) not in SUPPORTED:
        names = ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED)
        raise ImportError(
            f"cassette supports CPython {names}; this is "
            f"{implementation} {version[0]}.{version[1]}")
    major, minor = version
    return f"{__name__}.py{major}{minor}"


def _running_layer():
    major, minor = sys.version_info[:2]
    module = importlib.import_module(layer_module(sys.implementation.name, (major, minor)))
    return getattr(module, f"Layer{major}{minor}")()


LAYER = _running_layer()
