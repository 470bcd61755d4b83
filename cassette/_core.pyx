# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True, always_allow_keywords=False
"""The Cython core: the trampoline that rewritten code calls.

This is the hot path of cassette — resolving call sites, running the hook
protocol of one operation, operator and loop slots.  It behaves as
:mod:`cassette._pyruntime`, the runtime written in Python, behaves (with
more classes: its caches and fast paths have classes of their own); every
*decision* (what a call site should call, which handlers apply, how a class is
instantiated) comes from :mod:`cassette.engine` and :mod:`cassette.dispatch`
and is cached here.

One extension module, written as this file and one file per concern in
``_core_src/`` (docs/architecture.md, "A map of the core"): the Cython parts
are included below in order, their C declarations are in ``_core.pxd`` and
their C in the headers beside them; the end of this file wires the parts
together at import.
"""

from cpython.object cimport (PyObject, PyObject_Call, PyObject_GenericGetAttr, PyObject_GenericSetAttr,
                             PyObject_TypeCheck, PyTypeObject)
from cpython.ref cimport Py_DECREF, Py_INCREF
cimport cython
from libc.stdint cimport uint64_t, uintptr_t
from libc.string cimport memset
from cpython.dict cimport PyDict_Size
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.list cimport PyList_GET_ITEM
from cpython.iterator cimport PyIter_Check
from cpython.pythread cimport PyThread_get_thread_ident

import functools
import operator
import sys
import types

from cassette import callables, dispatch, engine, lifetimes, routing
from cassette._singletons import (NoMetaData, OverdubInstead, TAGGED_DATA_SLOT, TAGGED_TAG_SLOT,
                                  TAGGED_VALUE_SLOT)
from cassette.operations import ARRANGED_SITES, OPERATIONS, STRUCTURAL_SLOTS
from cassette.markers import EXHAUSTED
from cassette.versions import LAYER
from cassette.context import checks_metadata_loss

# -- the parts, one concern each (cassette/_core_src/) -----------------------

include "_core_src/runtime.pxi"
include "_core_src/protocol.pxi"
include "_core_src/tagging.pxi"
include "_core_src/propagation.pxi"
include "_core_src/sites.pxi"
include "_core_src/routing.pxi"


def make_entry(implementation, strip, module_name):
    """``cassette.overdub``: a C function calling ``implementation`` that, when
    it raises, first calls ``strip(exception)`` to tidy its traceback."""
    state = ModuleType(module_name + "._overdub_state")
    state.implementation = implementation
    state.strip = strip
    return cassette_make_entry(state, module_name)


# -- wiring: what the core installs at import ----------------------------------

dispatch.on_generation_change(_on_generation_change)
cassette_install_tagged_call(<void *>_tagged_vectorcall, TaggedPrimitive)
cassette_note_builtin_len(len)
_enable_vectorcalls()
cassette_install_held_entry(<void *>_hooked_vectorcall)
cassette_install_slot_entries(<void *>_operation_entry, <void *>_propagation_entry)
cassette_install_runtime_slots(<void *>_resolve_entry, <void *>_method_site_entry)
# Any Python function shows the interpreter's vectorcall entry.
assert type(callables.lookup_on_type) is FunctionType
cassette_install_routing(Runtime, _ACTING_CODES, <void *>_redirect, callables.lookup_on_type,
                         callables.library_entries_dropped)
callables.register_runtime_class(Runtime)


cassette_install_argument_routing(routing.route_argument, routing.route_holder,
                                  functools.partial, MethodWrapperType, routing.WRAPPER_DEPTH)


def install_routing():
    """Make :mod:`cassette.routing` route through this core: called by
    :mod:`cassette.entry` when the core is the runtime (the pure-Python
    runtime imports the core for its entry only, and has no trampoline
    that would recognise its code)."""
    _install_attribute_load_pin()
    routing.install(route, class_seen, note_class_seen, type_defines, watch_module_fetches,
                    install_holders)
