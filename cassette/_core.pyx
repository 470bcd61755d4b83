# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True, always_allow_keywords=False
"""The Cython core: the trampoline that rewritten code calls.

This is the hot path of cassette — resolving call sites, running the hook
protocol of one operation, operator and loop slots.  It implements the same
classes as :mod:`cassette._pyruntime` with the same behaviour; every
*decision* (what a call site should call, which handlers apply, how a class is
instantiated) comes from :mod:`cassette.engine` and :mod:`cassette.dispatch`
and is cached here.
"""

from cpython.object cimport (PyObject, PyObject_GenericGetAttr, PyObject_GenericSetAttr,
                             PyObject_TypeCheck, PyTypeObject)
from cpython.ref cimport Py_DECREF, Py_INCREF
cimport cython
from libc.stdint cimport uint64_t, uintptr_t
from libc.string cimport memset
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

import functools
import operator
import sys
import types

from cassette import callables, dispatch, engine, routing
from cassette._singletons import (NoMetaData, OverdubInstead, TAGGED_DATA_SLOT, TAGGED_TAG_SLOT,
                                  TAGGED_VALUE_SLOT)
from cassette.operations import ARRANGED_SITES, OPERATIONS, STRUCTURAL_SLOTS
from cassette.markers import EXHAUSTED

cdef extern from "Python.h":
    ctypedef struct PyFunctionObject:
        PyObject *func_code
        PyObject *func_defaults
        PyObject *func_closure
        PyObject *func_kwdefaults
        PyObject *func_name
        PyObject *func_qualname
    PyObject *PyEval_GetGlobals()
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)
    object PyWeakref_NewRef(object, object)
    object PyMethod_New(object, object)
    PyObject *PyMethod_GET_FUNCTION(object)
    PyObject *PyMethod_GET_SELF(object)
    object PyLong_FromVoidPtr(void *)
    PyObject *PyDict_GetItemWithError(object, object) except? NULL
    object PyObject_Vectorcall(object, PyObject **, size_t, PyObject *)
    object PyObject_VectorcallDict(object, PyObject **, size_t, object)
    PyTypeObject *Py_TYPE(object)
    # Declared without an exception value: the callers check and clear.
    Py_ssize_t PyLong_AsSsize_t(object)
    PyObject *PyErr_Occurred()
    void PyErr_Clear()

# What the core reads or changes inside the interpreter, one branch per
# supported release (see the header).  Included before every block below.
cdef extern from "_compat.h":
    PyObject *cassette_type_lookup(PyTypeObject *, object)
    int cassette_get_method(object obj, object name, PyObject **out) except -1
    void cassette_credit_python_frames(int count)
    PyObject *cassette_weakref_target(object ref)

cdef extern from *:
    """
    /* A vectorcall object whose only reference is its target (DropSelf). */
    typedef struct {
        PyObject_HEAD
        PyObject *target;
        vectorcallfunc vectorcall;
    } CassetteHolder;

    static int cassette_holder_traverse(PyObject *self, visitproc visit, void *arg) {
        Py_VISIT(((CassetteHolder *)self)->target);
        return 0;
    }

    static int cassette_holder_clear(PyObject *self) {
        Py_CLEAR(((CassetteHolder *)self)->target);
        return 0;
    }

    static void cassette_holder_dealloc(PyObject *self) {
        PyObject_GC_UnTrack(self);
        cassette_holder_clear(self);
        PyObject_GC_Del(self);
    }

    /* DropSelf: called as M(obj, *args) by a rewritten method call whose
       attribute was not a method (3.11/3.12), it calls its target without
       obj, forwarding the argument array as it is. */
    typedef CassetteHolder CassetteDropSelf;

    static PyObject *cassette_dropself_call(PyObject *self, PyObject *const *args,
                                            size_t nargsf, PyObject *kwnames) {
        Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
        if (nargs < 1) {
            PyErr_SetString(PyExc_TypeError, "DropSelf expects the object it drops");
            return NULL;
        }
        return PyObject_Vectorcall(((CassetteDropSelf *)self)->target, args + 1,
                                   (size_t)(nargs - 1) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                   kwnames);
    }

    static PyTypeObject CassetteDropSelfType = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "cassette._core.DropSelf",
        .tp_basicsize = sizeof(CassetteDropSelf),
        .tp_dealloc = cassette_holder_dealloc,
        .tp_vectorcall_offset = offsetof(CassetteDropSelf, vectorcall),
        .tp_call = PyVectorcall_Call,
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
        .tp_doc = "Calls its target without the first argument.",
        .tp_traverse = cassette_holder_traverse,
        .tp_clear = cassette_holder_clear,
    };

    static PyObject *cassette_dropself_new(PyObject *target) {
        if (!(CassetteDropSelfType.tp_flags & Py_TPFLAGS_READY)
                && PyType_Ready(&CassetteDropSelfType) < 0)
            return NULL;
        CassetteDropSelf *self = PyObject_GC_New(CassetteDropSelf, &CassetteDropSelfType);
        if (self == NULL) return NULL;
        Py_INCREF(target);
        self->target = target;
        self->vectorcall = cassette_dropself_call;
        PyObject_GC_Track((PyObject *)self);
        return (PyObject *)self;
    }
    """
    object cassette_dropself_new(object target)


cdef extern from *:
    """
    /* Recursion budgets.  The interpreter counts Python frames (3.11: and
       calls of C functions) against sys.getrecursionlimit(), and from 3.12
       entries into C against a C limit that keeps the C stack from
       overflowing.  Cassette's own work and its calls into the program may
       cost levels a plain run does not spend; the credits below give those
       back while the call runs, so overdubbed code reaches the depth it
       reaches plainly.  A credit never exceeds what the path costs: a level
       that cost nothing would let runaway recursion overflow the C stack
       instead of raising RecursionError (tests/test_overdub_faithfulness.py
       runs away through every construct). */

    /* For cassette's own work (rewriting a code object, a lookup, routing a
       class), which must not spend the program's budget: it may run where
       the program, plainly, needs no frame at all.  Unlike raising the
       limit, taking the frames back never fails, even at a depth above the
       program's limit, and other threads keep their budgets. */
    static inline void cassette_lend_frames(int count) {
        cassette_credit_python_frames(count);
    }

    /* A handler's own frame is cassette's, not the program's: a Python
       function called as a handler is credited the frame it costs (what it
       calls counts as usual), so that a program at its recursion limit can
       still be hooked there.  A handler that re-enters the program (an
       `execute` calling overdub) still pays for every level the program
       adds.  Returns the credit, to be taken back with the negative. */
    static inline int cassette_handler_credit(PyObject *handler) {
        int credit = PyFunction_Check(handler);
        cassette_credit_python_frames(credit);
        return credit;
    }

    /* The program's own call site, specialized, calls a fast-call C
       function without counting it (`next(gen)`, `sorted(xs, key=f)`,
       `len`, `d.get(k)`, `xs.sort()`; see
       CASSETTE_SPECIALIZED_C_CALLS_UNCOUNTED); called by cassette, those
       are credited the call, so that they cost what they cost plainly; the
       others (`abs`, `repr`, `xs.sort(key=f)`) cost it either way.
       Returns the credit, to be taken back with
       cassette_credit_c_calls(-credit). */
    static PyObject *cassette_builtin_len = NULL;
    static inline int cassette_builtin_credit(PyObject *target, PyObject *kwnames) {
        int credit = 0;
        if (!CASSETTE_SPECIALIZED_C_CALLS_UNCOUNTED)
            return 0;
        if (PyCFunction_Check(target))
            credit = (PyCFunction_GET_FLAGS(target) & METH_FASTCALL) != 0
                     || target == cassette_builtin_len;
        else if (Py_IS_TYPE(target, &PyMethodDescr_Type))
            credit = kwnames == NULL
                     && (((PyMethodDescrObject *)target)->d_method->ml_flags & METH_FASTCALL);
        cassette_credit_c_calls(credit);
        return credit;
    }
    static void cassette_note_builtin_len(PyObject *len) {
        Py_XINCREF(len);
        cassette_builtin_len = len;
    }

    /* A hooked call runs its body from C (by vectorcall: no level of its
       own, see cassette_enable_vectorcall).  A builtin body is credited as
       above; a Python body, the entry from C a plain, inlined call does
       not make (CASSETTE_C_ENTRY_CREDIT). */
    static inline int cassette_body_credit(PyObject *body, PyObject *kwargs) {
        if (PyCFunction_Check(body) || Py_IS_TYPE(body, &PyMethodDescr_Type))
            return cassette_builtin_credit(body, kwargs);
        cassette_credit_c_calls(CASSETTE_C_ENTRY_CREDIT);
        return CASSETTE_C_ENTRY_CREDIT;
    }

    /* f(*args, **kwargs) for a primitive f (a builtin, an operator's
       implementation) that cassette calls for the program, by vectorcall,
       with the credit of cassette_builtin_credit. */
    static inline PyObject *cassette_primitive_call_tuple(PyObject *f, PyObject *args,
                                                          PyObject *kwargs) {
        if (kwargs == Py_None || (kwargs != NULL && PyDict_GET_SIZE(kwargs) == 0))
            kwargs = NULL;
        int credit = cassette_builtin_credit(f, kwargs);
        PyObject *result = PyObject_VectorcallDict(
            f, ((PyTupleObject *)args)->ob_item, PyTuple_GET_SIZE(args), kwargs);
        cassette_credit_c_calls(-credit);
        return result;
    }

    /* f(*args, **kwargs) with the recursion credit of a body's call, and
       nothing between: a try/finally would normalize an exception passing
       through, which 3.11 leaves for the frame that catches it (whose
       traceback depends on when an instantiation that fails happens). */
    static inline PyObject *cassette_credited_call(PyObject *f, PyObject *args,
                                                   PyObject *kwargs) {
        if (kwargs == Py_None) kwargs = NULL;
        int credit = cassette_body_credit(f, kwargs);
        PyObject *result = PyObject_Call(f, args, kwargs);
        cassette_credit_c_calls(-credit);
        return result;
    }
    """
    object cassette_credited_call(object f, object args, object kwargs)
    object cassette_primitive_call_tuple(object f, tuple args, object kwargs)
    void cassette_lend_frames(int count)
    int cassette_handler_credit(object handler)
    void cassette_note_builtin_len(object len)

cdef extern from *:
    """
    /* The entry point cassette.overdub: a C function, so that an exception
       passing through it gains no traceback entry, and so that it can remove
       the library's own entries before the exception reaches the caller.
       `self` is a module object whose dict holds `implementation` and
       `strip` (a module, so the function reprs and pickles by name). */
    static PyObject *cassette_entry_call(PyObject *self, PyObject *const *args,
                                         Py_ssize_t nargs, PyObject *kwnames) {
        PyObject *state = PyModule_GetDict(self);
        PyObject *implementation = PyDict_GetItemString(state, "implementation");
        PyObject *strip = PyDict_GetItemString(state, "strip");
        if (implementation == NULL || strip == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "cassette.overdub is not initialised");
            return NULL;
        }
        PyObject *result = PyObject_Vectorcall(implementation, args, nargs, kwnames);
        if (result != NULL) return result;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (value != NULL) {
            if (tb != NULL) PyException_SetTraceback(value, tb);
            PyObject *done = PyObject_CallOneArg(strip, value);
            if (done == NULL) PyErr_Clear(); else Py_DECREF(done);
            Py_XDECREF(tb);
            tb = PyException_GetTraceback(value);
        }
        PyErr_Restore(type, value, tb);
        return NULL;
    }

    static PyMethodDef cassette_entry_def = {
        "overdub", (PyCFunction)(void (*)(void))cassette_entry_call,
        METH_FASTCALL | METH_KEYWORDS,
        "overdub(ctx, f, /, *args, **kwargs)\\n--\\n\\n"
        "Run f(*args, **kwargs) with every operation in its body -- and,\\n"
        "recursively, in everything it calls -- routed through ctx.\\n\\n"
        "Returns what the plain call returns and raises what it raises.  The\\n"
        "call of f itself is not hooked (write overdub(ctx, lambda: f(x)) to\\n"
        "hook it too).  Called from code that is itself being overdubbed, the\\n"
        "enclosing context intercepts everything the inner run does, its\\n"
        "handlers included."
    };

    static PyObject *cassette_make_entry(PyObject *state, PyObject *module_name) {
        return PyCFunction_NewEx(&cassette_entry_def, state, module_name);
    }
    """
    object cassette_make_entry(object state, object module_name)


cdef extern from *:
    """
    /* Routing.  The interpreter calls Python functions on its own -- the
       Python __add__ behind `a + b`, a sort key, a property getter, an
       __init_subclass__ -- through the function's vectorcall entry.  A
       *routed* function has that entry replaced by cassette_trampoline,
       which asks on whose behalf the call is made: when the running frame
       (past cassette's own frames) runs rewritten code, the call is an
       operation of that code's runtime and its body runs overdubbed;
       otherwise the function runs exactly as it always does.  Routing
       changes nothing a program can observe: the function object, its code
       and its attributes stay the same.

       The barrier: a handler written in Python runs in frames of its own,
       which are not rewritten, so what the interpreter calls for it stays
       its own (reference §3.2).  A handler that is C code (a builtin such as
       print used as a hook) has no frame: while it runs, the frame that
       called it is the barrier, and calls made while it is the running
       frame are the handler's, not the program's. */
    #if defined(_MSC_VER)
    #define CASSETTE_THREAD_LOCAL __declspec(thread)
    #else
    #define CASSETTE_THREAD_LOCAL _Thread_local
    #endif

    static CASSETTE_THREAD_LOCAL void *cassette_barrier = NULL;
    static PyTypeObject *cassette_runtime_type = NULL;
    /* The interpreter's own vectorcall entry of Python functions (read
       from a function at install: 3.13 no longer exports its name). */
    static vectorcallfunc cassette_function_vectorcall = NULL;
    static PyObject *cassette_acting_codes = NULL;
    static PyObject *(*cassette_redirect)(PyObject *, PyObject *, PyObject *const *,
                                          size_t, PyObject *) = NULL;

    static inline void *cassette_set_barrier(void *frame) {
        void *previous = cassette_barrier;
        cassette_barrier = frame;
        return previous;
    }

    /* The handler a runtime is calling on this thread (borrowed; compared
       only): the escape counter tells a handler's first frame by it. */
    static CASSETTE_THREAD_LOCAL void *cassette_handler = NULL;

    static inline void *cassette_set_handler(void *handler) {
        void *previous = cassette_handler;
        cassette_handler = handler;
        return previous;
    }

    /* Is `frame` (a frame object) the barrier: the frame whose calls,
       while a handler is being called, are the handler's?  The escape
       counter asks. */
    static int cassette_is_barrier(PyObject *frame) {
        return cassette_barrier != NULL && PyFrame_Check(frame)
            && cassette_frame_of(frame) == cassette_barrier;
    }

    static PyObject *cassette_handler_being_called(void) {
        PyObject *handler = cassette_handler == NULL ? Py_None : (PyObject *)cassette_handler;
        Py_INCREF(handler);
        return handler;
    }

    /* The runtime a code object was rewritten for (its last constant), or
       NULL; borrowed. */
    static inline PyObject *cassette_code_runtime(PyCodeObject *code) {
        PyObject *consts = code->co_consts;
        Py_ssize_t n = PyTuple_GET_SIZE(consts);
        if (n == 0 || cassette_runtime_type == NULL) return NULL;
        PyObject *last = PyTuple_GET_ITEM(consts, n - 1);
        return Py_TYPE(last) == cassette_runtime_type ? last : NULL;
    }

    /* Is `code` one of the library's functions acting for the program (its
       frames are looked past)? */
    static inline int cassette_acts_for_program(PyCodeObject *code) {
        if (cassette_acting_codes == NULL) return 0;
        Py_ssize_t n = PyTuple_GET_SIZE(cassette_acting_codes);
        for (Py_ssize_t i = 0; i < n; i++)
            if (PyTuple_GET_ITEM(cassette_acting_codes, i) == (PyObject *)code) return 1;
        return 0;
    }

    /* The runtime on whose behalf `frame` (a new reference, consumed) runs:
       the runtime of its code if it was rewritten, else -- when it is one
       of the library's functions acting for the program -- that of the
       frame that called it; NULL when the program is not being overdubbed
       there. */
    static PyObject *cassette_runtime_from(PyFrameObject *frame) {
        while (frame != NULL) {
            PyCodeObject *code = PyFrame_GetCode(frame);
            PyObject *runtime = cassette_code_runtime(code);
            int acting = runtime == NULL && cassette_acts_for_program(code);
            Py_DECREF(code);
            if (runtime != NULL) {
                Py_INCREF(runtime);
                Py_DECREF(frame);
                return runtime;
            }
            if (!acting) break;
            PyFrameObject *back = PyFrame_GetBack(frame);
            Py_DECREF(frame);
            frame = back;
        }
        Py_XDECREF(frame);
        return NULL;
    }

    /* The runtime on whose behalf the running frame runs (a new reference),
       or NULL, with an exception set only on failure. */
    static PyObject *cassette_running_runtime(void) {
        PyFrameObject *frame = PyEval_GetFrame();
        if (frame == NULL) return NULL;
        Py_INCREF(frame);
        return cassette_runtime_from(frame);
    }

    /* For Python: the runtime on whose behalf `frame` runs, or None. */
    static PyObject *cassette_frame_runtime(PyObject *frame) {
        Py_INCREF(frame);
        PyObject *runtime = cassette_runtime_from((PyFrameObject *)frame);
        if (runtime == NULL && !PyErr_Occurred()) {
            Py_INCREF(Py_None);
            return Py_None;
        }
        return runtime;
    }

    /* callables.library_entries_dropped: a traceback without its leading
       entries of cassette's own frames. */
    static PyObject *cassette_entries_dropped = NULL;

    /* An exception leaving a routed call through the trampoline carries
       the entries of the core's frames it passed; the interpreter that
       called the function may keep or drop the traceback by whether there
       is one (3.11 normalizing an exception raised from C keeps the one it
       had when instantiating fails without a traceback), so it gets the
       traceback a plain call would give. */
    static void cassette_drop_library_entries(void) {
        PyObject *type, *value, *tb;
        if (cassette_entries_dropped == NULL) return;
        PyErr_Fetch(&type, &value, &tb);
        if (tb != NULL) {
            PyObject *kept = PyObject_CallOneArg(cassette_entries_dropped, tb);
            if (kept == NULL) {
                PyErr_Clear();
            } else {
                Py_DECREF(tb);
                if (kept == Py_None) {
                    Py_DECREF(kept);
                    kept = NULL;
                }
                tb = kept;
            }
        }
        PyErr_Restore(type, value, tb);
    }

    static PyObject *cassette_trampoline(PyObject *func, PyObject *const *args,
                                         size_t nargsf, PyObject *kwnames) {
        if (cassette_redirect != NULL && cassette_current_frame() != cassette_barrier) {
            PyObject *runtime = cassette_running_runtime();
            if (runtime != NULL) {
                PyObject *result = cassette_redirect(runtime, func, args, nargsf, kwnames);
                Py_DECREF(runtime);
                if (result == NULL) cassette_drop_library_entries();
                return result;
            }
            if (PyErr_Occurred()) return NULL;
        }
        return cassette_function_vectorcall(func, args, nargsf, kwnames);
    }

    /* Route a Python function: 1 if done now, 0 if it was routed already or
       has a vectorcall entry of its own (another tool's).

       The interpreter also calls Python functions without their vectorcall
       entry: a specialized CALL of a Python function pushes its frame
       directly, and so do the specializations of `obj[i]` (a Python
       __getitem__), property loads and, on 3.13, instantiation (__init__).
       A Python-to-Python call needs no routing (rewritten code resolves its
       calls), so plain functions keep their specializations and run as fast
       as ever from un-rewritten code; a *protocol* function (a special
       method or a property accessor) must not be inlined by a protocol
       specialization (cassette_route_protocol_function). */
    static int cassette_route_function(PyObject *func, int protocol) {
        if (Py_TYPE(func) != &PyFunction_Type) return 0;
        PyFunctionObject *f = (PyFunctionObject *)func;
        int routed = f->vectorcall == cassette_trampoline;
        if (!routed && (f->vectorcall == NULL || f->vectorcall != cassette_function_vectorcall))
            return 0;
        if (protocol) {
            int done = cassette_route_protocol_function(f, cassette_trampoline, routed);
            if (done >= 0) return done;
        }
        if (routed) return 0;
        f->vectorcall = cassette_trampoline;
        return 1;
    }

    static inline int cassette_is_routed(PyObject *func) {
        return Py_TYPE(func) == &PyFunction_Type
            && ((PyFunctionObject *)func)->vectorcall == cassette_trampoline;
    }

    static PyObject *cassette_plain_call(PyObject *func, PyObject *const *args,
                                         size_t nargsf, PyObject *kwnames) {
        return cassette_function_vectorcall(func, args, nargsf, kwnames);
    }

    /* Installed at import: the runtime type, the code objects of the
       library's functions that act for the program (a tuple the module
       keeps alive), the function running a routed call as an operation and
       callables.library_entries_dropped. */
    static void cassette_install_routing(PyObject *runtime_type, PyObject *acting_codes,
                                         void *redirect, PyObject *sample_function,
                                         PyObject *entries_dropped) {
        Py_INCREF(entries_dropped);
        cassette_entries_dropped = entries_dropped;
        cassette_function_vectorcall = ((PyFunctionObject *)sample_function)->vectorcall;
        cassette_runtime_type = (PyTypeObject *)runtime_type;
        cassette_acting_codes = acting_codes;
        cassette_redirect = (PyObject *(*)(PyObject *, PyObject *, PyObject *const *,
                                           size_t, PyObject *))redirect;
    }

    /* Arguments of primitives.  A C function the program calls may call
       back into Python: the callables it is handed (a sort key, a map
       function) and the methods of the classes of its arguments (heappush
       compares items).  Before a primitive runs, each argument that could
       lead there is handed to routing.route_argument -- once per class
       version and per function, thanks to a small table of classes already
       seen (a class's version tag changes whenever the class does). */
    #define CASSETTE_SEEN_SIZE 512
    typedef struct { PyTypeObject *type; unsigned int version; } CassetteSeen;
    static CassetteSeen cassette_seen[CASSETTE_SEEN_SIZE];
    static PyObject *cassette_route_argument = NULL;   /* routing.route_argument */
    static PyTypeObject *cassette_partial_type = NULL;
    static PyTypeObject *cassette_method_wrapper_type = NULL;

    static inline int cassette_class_seen(PyTypeObject *tp) {
        unsigned int version = cassette_class_version(tp);
        if (version == 0) return 0;
        CassetteSeen *slot = &cassette_seen[((uintptr_t)tp >> 4) % CASSETTE_SEEN_SIZE];
        return slot->type == tp && slot->version == version;
    }

    static inline void cassette_class_saw(PyTypeObject *tp) {
        if (cassette_class_version(tp) == 0)
            return;
        CassetteSeen *slot = &cassette_seen[((uintptr_t)tp >> 4) % CASSETTE_SEEN_SIZE];
        slot->type = tp;
        slot->version = tp->tp_version_tag;
    }

    /* 0, or -1 with an exception set. */
    static int cassette_route_one(PyObject *arg) {
        PyTypeObject *tp = Py_TYPE(arg);
        PyTypeObject *cls = NULL;   /* the class to note as seen */
        if (tp == &PyFunction_Type) {
            if (((PyFunctionObject *)arg)->vectorcall != cassette_function_vectorcall)
                return 0;
        } else if (tp == &PyMethod_Type) {
            PyObject *func = PyMethod_GET_FUNCTION(arg);
            PyObject *self = PyMethod_GET_SELF(arg);
            if ((Py_TYPE(func) != &PyFunction_Type
                    || ((PyFunctionObject *)func)->vectorcall != cassette_function_vectorcall)
                    && (!(Py_TYPE(self)->tp_flags & Py_TPFLAGS_HEAPTYPE)
                        || cassette_class_seen(Py_TYPE(self))))
                return 0;
        } else if (PyType_Check(arg)) {
            cls = (PyTypeObject *)arg;
            if (!(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || cassette_class_seen(cls)) return 0;
        } else if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) {
            if (cassette_class_seen(tp)) return 0;
            cls = tp;
        } else if (tp != cassette_partial_type && tp != cassette_method_wrapper_type) {
            return 0;
        }
        if (cassette_route_argument == NULL) return 0;
        /* Routing is the library's business: whatever goes wrong in it
           (memory) must not become the program's exception. */
        PyObject *done = PyObject_CallOneArg(cassette_route_argument, arg);
        if (done == NULL) PyErr_Clear(); else Py_DECREF(done);
        if (cls != NULL) cassette_class_saw(cls);
        return 0;
    }

    static int cassette_route_arguments(PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames) {
        Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
        for (Py_ssize_t i = 0; i < total; i++)
            if (cassette_route_one(args[i]) < 0) return -1;
        return 0;
    }

    /* Give a class of this module a vectorcall entry: instances keep the
       function at `offset` (NULL: the class's tp_call is used).  A
       callable object called through tp_call costs the interpreter a
       recursion level per call (3.11: of the Python limit; 3.12+: of the C
       limit, which 3.13 also spends on every frame the interpreter enters
       from C); one called through vectorcall costs none, as a Python
       function inlined by the interpreter costs none. */
    static void cassette_enable_vectorcall(PyObject *type, Py_ssize_t offset) {
        PyTypeObject *tp = (PyTypeObject *)type;
        tp->tp_vectorcall_offset = offset;
        tp->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        PyType_Modified(tp);
    }

    /* A primitive as rewritten code calls it: arguments routed, then the
       call, its result routed when it is a class just made (type(name,
       bases, namespace), namedtuple ...). */
    typedef struct {
        PyObject_HEAD
        PyObject *target;
        vectorcallfunc vectorcall;
        PyObject *named;    /* whose __qualname__/__module__ to report */
    } CassettePrimitive;

    /* Under tagging: ``target`` is the TaggedPrimitive deciding the call,
       and this runs it (set by the Cython module). */
    static PyObject *(*cassette_tagged_call)(PyObject *, PyObject *const *, size_t,
                                             PyObject *) = NULL;
    static PyTypeObject *cassette_tagged_primitive_type = NULL;


    static void cassette_install_tagged_call(void *call, PyObject *type) {
        cassette_tagged_call = (PyObject *(*)(PyObject *, PyObject *const *, size_t,
                                              PyObject *))call;
        cassette_tagged_primitive_type = (PyTypeObject *)type;
    }

    static PyObject *cassette_primitive_call(PyObject *self, PyObject *const *args,
                                             size_t nargsf, PyObject *kwnames) {
        if (cassette_route_arguments(args, PyVectorcall_NARGS(nargsf), kwnames) < 0)
            return NULL;
        PyObject *target = ((CassettePrimitive *)self)->target;
        if (Py_TYPE(target) == cassette_tagged_primitive_type)
            return cassette_tagged_call(target, args, nargsf, kwnames);
        int credit = cassette_builtin_credit(target, kwnames);
        PyObject *result = PyObject_Vectorcall(target, args, nargsf, kwnames);
        cassette_credit_c_calls(-credit);
        if (result != NULL && PyType_Check(result)
                && (((PyTypeObject *)result)->tp_flags & Py_TPFLAGS_HEAPTYPE)
                && !cassette_class_seen((PyTypeObject *)result)
                && cassette_route_one(result) < 0) {
            Py_DECREF(result);
            return NULL;
        }
        return result;
    }

    /* Not a GC object: it only refers to a primitive (a C callable), and
       programs that count their objects (gc.get_objects()) must not see
       cassette's. */
    static void cassette_primitive_dealloc(PyObject *self) {
        Py_CLEAR(((CassettePrimitive *)self)->target);
        Py_CLEAR(((CassettePrimitive *)self)->named);
        PyObject_Free(self);
    }

    static PyObject *cassette_primitive_repr(PyObject *self) {
        return PyUnicode_FromFormat("<primitive %R>", ((CassettePrimitive *)self)->named);
    }

    /* A message naming a callable without a __qualname__ (``None argument
       after * must be an iterable``) uses its str(): the primitive's. */
    static PyObject *cassette_primitive_str(PyObject *self) {
        return PyObject_Str(((CassettePrimitive *)self)->named);
    }

    /* The primitive's own __qualname__ and __module__: the interpreter's
       messages that name a callable (``len() argument after * must be an
       iterable``) name the primitive, as without cassette. */
    static PyObject *cassette_primitive_getattro(PyObject *self, PyObject *name) {
        if (PyUnicode_Check(name)
                && (PyUnicode_CompareWithASCIIString(name, "__qualname__") == 0
                    || PyUnicode_CompareWithASCIIString(name, "__module__") == 0))
            return PyObject_GetAttr(((CassettePrimitive *)self)->named, name);
        return PyObject_GenericGetAttr(self, name);
    }

    static PyTypeObject CassettePrimitiveType = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "cassette._core.Primitive",
        .tp_basicsize = sizeof(CassettePrimitive),
        .tp_dealloc = cassette_primitive_dealloc,
        .tp_vectorcall_offset = offsetof(CassettePrimitive, vectorcall),
        .tp_call = PyVectorcall_Call,
        .tp_repr = cassette_primitive_repr,
        .tp_str = cassette_primitive_str,
        .tp_getattro = cassette_primitive_getattro,
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
        .tp_doc = "A primitive called from rewritten code: its arguments routed first.",
    };

    /* ``named``: what the primitive calls itself in messages (``target``
       when it calls the primitive directly, the primitive when ``target``
       is a tagging context's fallback for it). */
    static PyObject *cassette_primitive_named(PyObject *target, PyObject *named) {
        if (!(CassettePrimitiveType.tp_flags & Py_TPFLAGS_READY)
                && PyType_Ready(&CassettePrimitiveType) < 0)
            return NULL;
        CassettePrimitive *self = PyObject_New(CassettePrimitive, &CassettePrimitiveType);
        if (self == NULL) return NULL;
        Py_INCREF(target);
        self->target = target;
        Py_INCREF(named);
        self->named = named;
        self->vectorcall = cassette_primitive_call;
        return (PyObject *)self;
    }

    static PyObject *cassette_primitive_new(PyObject *target) {
        return cassette_primitive_named(target, target);
    }

    /* The constant rewritten code calls for an operator or propagation
       slot: a builtin method of its site whose C function is the site's
       entry (``cassette_install_slot_entries``).  A METH_FASTCALL builtin is
       what the interpreter's call instruction specializes for: it calls
       the entry with the operands in place, without a generic call or
       argument parsing. */
    static PyMethodDef cassette_operation_slot_def = {
        "operation_slot", NULL, METH_FASTCALL,
        "An operator slot of rewritten code: calls its site."};
    static PyMethodDef cassette_propagation_slot_def = {
        "propagation_slot", NULL, METH_FASTCALL,
        "A propagation slot of rewritten code: calls its site."};

    static void cassette_install_slot_entries(void *operation, void *propagation) {
        cassette_operation_slot_def.ml_meth = (PyCFunction)(void(*)(void))operation;
        cassette_propagation_slot_def.ml_meth = (PyCFunction)(void(*)(void))propagation;
    }

    static PyObject *cassette_operation_slot(PyObject *site) {
        return PyCFunction_NewEx(&cassette_operation_slot_def, site, NULL);
    }

    static PyObject *cassette_propagation_slot(PyObject *site) {
        return PyCFunction_NewEx(&cassette_propagation_slot_def, site, NULL);
    }

    /* The sys hooks the interpreter calls from C (sys.unraisablehook,
       sys.excepthook) may have been installed by overdubbed code a moment
       ago, by a plain store that no site saw: the audit event raised just
       before the call names the hook, which is routed then. */
    static int cassette_audit(const char *event, PyObject *args, void *data) {
        (void)data;
        if (event[0] != 's' || cassette_route_argument == NULL
                || (strcmp(event, "sys.unraisablehook") != 0
                    && strcmp(event, "sys.excepthook") != 0)
                || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1)
            return 0;
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (cassette_route_one(PyTuple_GET_ITEM(args, 0)) < 0) PyErr_Clear();
        PyErr_Restore(type, value, traceback);
        return 0;
    }

    static void cassette_install_argument_routing(PyObject *route_argument,
                                                  PyObject *partial_type,
                                                  PyObject *method_wrapper_type) {
        Py_XINCREF(route_argument);
        cassette_route_argument = route_argument;
        cassette_partial_type = (PyTypeObject *)partial_type;
        cassette_method_wrapper_type = (PyTypeObject *)method_wrapper_type;
        PySys_AddAuditHook(cassette_audit, NULL);
    }
    """
    void *cassette_current_frame()
    void *cassette_set_barrier(void *frame)
    void *cassette_set_handler(void *handler)
    object cassette_handler_being_called()
    bint cassette_is_barrier(object frame)
    object cassette_primitive_new(object target)
    void cassette_enable_vectorcall(object type, Py_ssize_t offset)
    object cassette_primitive_named(object target, object named)
    void cassette_install_slot_entries(void *operation, void *propagation)
    object cassette_operation_slot(object site)
    object cassette_propagation_slot(object site)
    void cassette_install_tagged_call(void *call, object type)
    int cassette_class_seen(PyTypeObject *tp)
    void cassette_class_saw(PyTypeObject *tp)
    int cassette_route_one(object arg) except -1
    void cassette_install_argument_routing(object route_argument, object partial_type,
                                           object method_wrapper_type)
    void cassette_install_routing(object runtime_type, object acting_codes, void *redirect,
                                  object sample_function, object entries_dropped)
    object cassette_frame_runtime(object frame)
    int cassette_route_function(object func, int protocol)
    bint cassette_is_routed(object func)
    object cassette_plain_call(object func, PyObject **args, size_t nargsf, PyObject *kwnames)


def make_entry(implementation, strip, module_name):
    """``cassette.overdub``: a C function calling ``implementation`` that, when
    it raises, first calls ``strip(exception)`` to tidy its traceback."""
    state = types.ModuleType(module_name + "._overdub_state")
    state.implementation = implementation
    state.strip = strip
    return cassette_make_entry(state, module_name)

cdef object FunctionType = types.FunctionType
cdef object MethodType = types.MethodType
cdef object MethodWrapperType = types.MethodWrapperType
cdef object _split_bound = callables.split_bound
cdef object BuiltinFunctionType = types.BuiltinFunctionType
cdef object MethodDescriptorType = types.MethodDescriptorType
cdef object WrapperDescriptorType = types.WrapperDescriptorType
cdef object NO_SELF = callables.NO_SELF
cdef object EMPTY = dispatch.Plan.empty
cdef object _EXHAUSTED = EXHAUSTED
cdef object _OverdubInstead = OverdubInstead
cdef object _dispatch_module = dispatch
cdef object _is_stable = callables.is_stable
cdef object _lookup = callables.lookup_on_type
cdef object _remove_library_entries = callables.remove_library_entries
cdef object _is_method_descriptor = callables.is_method_descriptor
cdef object _is_frame_sensitive = callables.is_frame_sensitive
cdef object _route_class = routing.route_class
cdef object _route_callee = routing.route_callee
cdef object _operation_has_body = engine.operation_has_body

cdef Py_ssize_t _generation = -1

#: Frames lent to cassette's own Python helpers where the program may be at
#: its recursion limit (see cassette_lend_frames).
cdef int _LENT_FRAMES = 50


cdef object _own(object helper, tuple args):
    """``helper(*args)``: cassette's own Python work done for the program
    (a lookup, a rewrite, routing a class), with frames lent for it.  The
    program may be at its recursion limit where a plain run needs no frame
    at all (a first call, a `with`, an exception handler): cassette's frames
    must not fail there.  The helper must not run program code (which would
    then get the lent frames too)."""
    cassette_lend_frames(_LENT_FRAMES)
    try:
        return _call_tuple(helper, args, None)
    finally:
        cassette_lend_frames(-_LENT_FRAMES)

cdef Py_ssize_t CACHE_MAX = engine.RESOLUTION_CACHE_MAX

#: How many records of lists and tuples a runtime remembers (see
#: ``Runtime._record_of``).
cdef enum:
    RECENT_RECORDS_BITS = 5
    RECENT_RECORDS = 1 << RECENT_RECORDS_BITS


def _on_generation_change(Py_ssize_t generation):
    global _generation
    _generation = generation


dispatch.on_generation_change(_on_generation_change)

# Slots whose value is a method of the runtime (the rest are operations).
cdef dict _STRUCTURAL = STRUCTURAL_SLOTS

# The arrangements of operations.ARRANGED_SITES, as the codes the operation
# sites switch on (0: the stack order is the arguments' order).
cdef dict _ARRANGEMENT_CODES = {"swap": 1, "value_last": 2, "slice": 3, "slice_value_last": 4}


cdef inline long _owned(object tag, object value) except -1:
    """1 when ``value`` is tagged with ``tag`` (its outermost tag), else 0."""
    return 1 if tag is not None and _tagged_by(value, tag) else 0


cdef tuple _MASKS = tuple(range(8))     # own masks of up to three operands


cdef inline tuple _by_types_key(tuple types, long mask):
    """The key of ``Selector.by_types`` (as ``Selector.select`` builds it):
    the arguments' types, then the mask of those the context tagged (see
    ``_owned``) when there are any."""
    return types + (mask,) if mask else types


cdef object _select(object fixed, object selector, dict by_types, object tag, object ctx,
                    tuple args):
    """The handler of one hook kind for ``args``: the one that always wins,
    else the selector's answer — read from its cache by argument types when
    it has one (``Selector.by_types``, keyed as ``Selector.select`` keys it:
    the types, then the mask of the arguments tagged with ``tag``, the
    context's, when there are any), which spares calling ``select``."""
    cdef PyObject *hit
    cdef Py_ssize_t n, i
    cdef long mask = 0
    if fixed is not None:
        return fixed
    if selector is None:
        return None
    if by_types is not None:
        n = len(args)
        if n == 1:
            types = (type(args[0]),)
        elif n == 2:
            types = (type(args[0]), type(args[1]))
        else:
            types = tuple([type(args[i]) for i in range(n)])
        if tag is not None:
            for i in range(n):
                mask |= _owned(tag, args[i]) << i
        hit = PyDict_GetItemWithError(by_types, _by_types_key(types, mask))
        if hit is not NULL:
            return <object>hit
    return selector.select(ctx, args)


cdef object _call_prefixed(object f, object a, object b, object c, object d, int nprefix,
                           tuple args, dict kwargs):
    """``f(a, b[, c[, d]], *args, **kwargs)`` (``nprefix``: 0, 2, 3 or 4 of
    ``a, b, c, d``) without building an argument tuple."""
    cdef PyObject *stack[12]
    cdef Py_ssize_t n = len(args)
    cdef Py_ssize_t i
    if n + nprefix > 12:
        prefix = (a, b, c, d)[:nprefix]
        return f(*prefix, *args, **(kwargs or {}))
    stack[0] = <PyObject *>a
    stack[1] = <PyObject *>b
    if nprefix >= 3:
        stack[2] = <PyObject *>c
    if nprefix == 4:
        stack[3] = <PyObject *>d
    for i in range(n):
        stack[nprefix + i] = <PyObject *>args[i]
    if kwargs:
        return PyObject_VectorcallDict(f, stack, nprefix + n, kwargs)
    return PyObject_Vectorcall(f, stack, nprefix + n, NULL)


cdef object _call_tuple(object f, tuple args, dict kwargs):
    """``f(*args, **kwargs)`` by vectorcall."""
    cdef PyObject *stack[12]
    cdef Py_ssize_t n = len(args)
    cdef Py_ssize_t i
    if n > 12:
        return f(*args, **(kwargs or {}))
    for i in range(n):
        stack[i] = <PyObject *>args[i]
    if kwargs:
        return PyObject_VectorcallDict(f, stack, n, kwargs)
    return PyObject_Vectorcall(f, stack, n, NULL)


cdef class Protocol:
    """The compiled :class:`dispatch.Plan` of one callee: for each hook kind,
    the handler that always wins (``*_fixed``) or a selector."""

    cdef object pre_fixed, pre_sel, exe_fixed, exe_sel
    cdef object post_fixed, post_sel, fb_fixed, fb_sel
    cdef dict pre_types, exe_types, post_types, fb_types

    def __init__(self, plan):
        self.pre_fixed, self.pre_sel, self.pre_types = _split_selector(plan.prehook)
        self.exe_fixed, self.exe_sel, self.exe_types = _split_selector(plan.execute)
        self.post_fixed, self.post_sel, self.post_types = _split_selector(plan.posthook)
        self.fb_fixed, self.fb_sel, self.fb_types = _split_selector(plan.fallback)

    cdef object run(self, Runtime runtime, object callee, object body,
                    object primitive, tuple args, dict kwargs, object operation=None):
        """The protocol of one operation (reference §3.2).  ``operation``: the
        name of the operation a site runs, whose body is the primitive
        itself when Python code of the program implements it (decided only
        when it matters: a fallback handler or tagging would otherwise see
        it)."""
        cdef object ctx = runtime.ctx
        cdef object handler
        cdef object out = _OverdubInstead
        handler = _select(self.pre_fixed, self.pre_sel, self.pre_types, runtime._tag, ctx, args)
        if handler is not None:
            runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        handler = _select(self.exe_fixed, self.exe_sel, self.exe_types, runtime._tag, ctx, args)
        if handler is not None:
            out = runtime.invoke(handler, ctx, callee, None, None, 2, args, kwargs)
        if out is _OverdubInstead:
            out = self.overdub_instead(runtime, callee, body, primitive, args, kwargs, operation)
        handler = _select(self.post_fixed, self.post_sel, self.post_types, runtime._tag, ctx, args)
        if handler is not None:
            runtime.invoke(handler, ctx, out, callee, None, 3, args, kwargs)
        return out

    cdef object overdub_instead(self, Runtime runtime, object callee, object body,
                                object primitive, tuple args, dict kwargs, object operation):
        """What runs when no ``execute`` handler ran or it returned
        ``OverdubInstead``: the body, overdubbed, or else the fallback."""
        cdef object handler
        if body is not None:
            return cassette_credited_call(body, args, kwargs)
        handler = _select(self.fb_fixed, self.fb_sel, self.fb_types, runtime._tag, runtime.ctx,
                          args)
        if ((handler is not None or (runtime._tagging and _any_tagged(args)))
                and operation is not None and not _all_builtin(args)
                and _operation_has_body(operation, args)):
            return _call_tuple(primitive, args, kwargs)
        if handler is not None:
            return runtime.invoke(handler, runtime.ctx, callee, None, None, 2, args, kwargs)
        return runtime.primitive(callee, primitive, args, kwargs)


cdef extern from *:
    """
    /* An instance of a builtin (static) type that is not itself a class. */
    static inline int cassette_builtin_instance(PyObject *obj) {
        unsigned long flags = Py_TYPE(obj)->tp_flags;
        return !(flags & (Py_TPFLAGS_HEAPTYPE | Py_TPFLAGS_TYPE_SUBCLASS));
    }
    """
    bint cassette_builtin_instance(object obj)


cdef extern from *:
    """
    /* A number or string: its type is immutable and holds no components,
       so the bindings cache never has a record of it. */
    static inline int cassette_recordless(PyObject *obj) {
        PyTypeObject *t = Py_TYPE(obj);
        return t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type
            || t == &PyComplex_Type || t == &PyUnicode_Type;
    }

    /* A site's inline cache of handlers by operand types: a flat tuple of
       (type, type, type or None, own mask, handler or None) entries.  The
       handler for (ta, tb, tc, mask) (borrowed), or NULL when no entry
       names them. */
    static inline PyObject *cassette_cached_handler(PyObject *cache, PyObject *ta,
                                                    PyObject *tb, PyObject *tc,
                                                    PyObject *mask) {
        Py_ssize_t n = PyTuple_GET_SIZE(cache);
        for (Py_ssize_t i = 0; i + 4 < n; i += 5) {
            if (PyTuple_GET_ITEM(cache, i) == ta && PyTuple_GET_ITEM(cache, i + 1) == tb
                    && PyTuple_GET_ITEM(cache, i + 2) == tc
                    && PyTuple_GET_ITEM(cache, i + 3) == mask)
                return PyTuple_GET_ITEM(cache, i + 4);
        }
        return NULL;
    }
    """
    bint cassette_recordless(object obj)
    PyObject *cassette_cached_handler(tuple cache, object ta, object tb, object tc,
                                      object mask)

cdef extern from *:
    """
    static inline Py_ssize_t cassette_refcount(PyObject *obj) { return Py_REFCNT(obj); }
    """
    Py_ssize_t cassette_refcount(PyObject *obj)


cdef inline bint _any_tagged(tuple args):
    for arg in args:
        if _is_tagged(arg):
            return True
    return False


cdef inline bint _all_builtin(tuple args):
    """True when every operand is an instance of a builtin (non-heap) type
    and none is a class: no operand's class can implement the operation in
    Python (the cheap half of ``engine.operation_has_body``)."""
    for arg in args:
        # A tagged value: its primal value decides.
        if not cassette_builtin_instance(_innermost(arg)):
            return False
    return True


cdef tuple _split_selector(selector):
    """``(handler that always wins, selector, its cache by types)``."""
    if selector is None:
        return (None, None, None)
    if selector.unconditional is not None:
        return (selector.unconditional, None, None)
    return (None, selector, selector.by_types)


cdef class FunctionEntry:
    """A cached decision about a Python function, valid while the function's
    code, defaults, keyword defaults and names are the ones recorded (the
    rewritten copy carries them)."""

    cdef object ref, target
    cdef PyObject *code
    cdef PyObject *defaults
    cdef PyObject *kwdefaults
    cdef PyObject *name
    cdef PyObject *qualname
    cdef tuple keep      # holds the recorded objects alive

    cdef record(self, f):
        cdef PyFunctionObject *function = <PyFunctionObject *>f
        self.code = function.func_code
        self.defaults = function.func_defaults
        self.kwdefaults = function.func_kwdefaults
        self.name = function.func_name
        self.qualname = function.func_qualname
        self.keep = (f.__code__, f.__defaults__, f.__kwdefaults__,
                     f.__name__, f.__qualname__)

    cdef inline bint matches(self, f):
        cdef PyFunctionObject *function = <PyFunctionObject *>f
        return (function.func_code is self.code
                and function.func_defaults is self.defaults
                and function.func_kwdefaults is self.kwdefaults
                and function.func_name is self.name
                and function.func_qualname is self.qualname)


cdef class Forget:
    """Weak-reference callback removing a dead closure's cache entry."""

    cdef dict closures
    cdef object key

    def __init__(self, dict closures, key):
        self.closures = closures
        self.key = key

    def __call__(self, ref):
        entry = self.closures.get(self.key)
        if entry is not None and (<FunctionEntry>entry).ref is ref:
            del self.closures[self.key]


cdef class Runtime:
    """Routes the operations of code rewritten for one context."""

    cdef readonly object ctx
    cdef readonly object parent
    cdef readonly object kinds
    cdef readonly tuple passes
    cdef tuple _ctx_types
    cdef Py_ssize_t _generation
    cdef dict _resolved, _functions, _closures, _bodies, _slots, _droppers
    cdef OperationSite _next_site
    cdef bint _tagging
    cdef bint _chain_tagging
    cdef bint _retained
    # Under tagging: the context's tag and its bindings cache's entries.
    cdef object _tag
    cdef dict _entries
    # The records of lists and tuples found last in ``_entries``, by the
    # address of their target (see ``_record_of``).
    cdef uintptr_t _recent_targets[RECENT_RECORDS]
    cdef list _recent_records
    # What tells whether another context may adopt this runtime (see
    # ``adopt``): runs in progress, live runtimes nested in this one (each
    # counts itself in the parent it holds in ``_counted_parent``), weak
    # references to the code objects bound here, and whether code or the
    # context itself was handed out.
    cdef Py_ssize_t _depth
    cdef Py_ssize_t _children
    cdef PyObject *_counted_parent
    cdef list _bound
    cdef bint _handed_out
    cdef list _propagation_sites

    def __init__(self, ctx, parent=None):
        self.ctx = ctx
        self.parent = parent
        if parent is not None:
            (<Runtime>parent)._children += 1
            Py_INCREF(parent)
            self._counted_parent = <PyObject *>parent
        self._bound = []
        self._retained = True
        chain = [type(ctx)]
        outer = parent
        while outer is not None:
            chain.append(type(outer.ctx))
            outer = outer.parent
        self._ctx_types = tuple(chain)
        self._reset()

    def __dealloc__(self):
        if self._counted_parent is not NULL:
            (<Runtime>self._counted_parent)._children -= 1
            Py_DECREF(<object>self._counted_parent)
            self._counted_parent = NULL

    cdef _reset(self):
        self._generation = _generation
        self.kinds = engine.intercepted_kinds(self._ctx_types, engine.chain_has_tagging(self))
        self.passes = engine.context_passes(self)
        self._resolved = {}
        self._functions = {}
        self._closures = {}
        self._bodies = {}
        self._slots = {}
        self._propagation_sites = []
        self._droppers = {}
        self._next_site = None
        self._tag = getattr(self.ctx, "tag", None)
        self._tagging = self._tag is not None
        self._entries = self.ctx.bindingscache.entries if self._tagging else None
        self._forget_recent_records()
        self._chain_tagging = engine.chain_has_tagging(self)

    cdef void _forget_recent_records(self) noexcept:
        memset(self._recent_targets, 0, sizeof(self._recent_targets))
        self._recent_records = [None] * RECENT_RECORDS

    cdef object _record_of(self, object target):
        """The record ``_entries`` keeps for ``target`` (by its address), or
        None.  The records of lists and tuples (held strongly: their target
        cannot die while they are kept) found last are remembered here: a
        record held only here is one the bindings cache dropped because
        nothing else held its target, which the program thus cannot reach
        again."""
        cdef uintptr_t address = <uintptr_t><void *>target
        # Fibonacci hashing: the addresses of lists, spaced by their size
        # class, would share a few slots if their low bits were used.
        cdef Py_ssize_t slot = (((address >> 4) * <uint64_t>0x9E3779B97F4A7C15)
                                >> (64 - RECENT_RECORDS_BITS))
        if self._recent_targets[slot] == address:
            return self._recent_records[slot]
        cdef PyObject *found = PyDict_GetItemWithError(self._entries, _address(target))
        if found is NULL:
            return None
        record = <object>found
        if type(record) is not _record_type:
            _learn_record_type(type(record))
        if (_slot(record, _OFF_RECORD_WEAK, "weak") is False
                and _slot(record, _OFF_RECORD_TARGET, "target") is target):
            self._recent_targets[slot] = address
            self._recent_records[slot] = record
        return record

    def release(self):
        """Drop every cache and keep nothing more until :meth:`retain`.
        Rewritten code refers to its runtime from its constants, which the
        garbage collector cannot see: while the runtime holds that code, the
        two keep each other (and the context) alive.  Released, a runtime
        lives as long as some code bound to it runs."""
        self._retained = False
        self._reset()

    def retain(self):
        """Cache again (the runtime is in use at top level)."""
        self._retained = True

    cdef inline void _keep(self, dict cache, key, value) except *:
        if self._retained:
            if len(cache) >= CACHE_MAX:
                cache.clear()
            cache[key] = value

    # -- slots --------------------------------------------------------------

    def slot(self, name):
        """The callable bound into rewritten code for slot ``name``."""
        value = self._slots.get(name)
        if value is None:
            if name == "runtime":
                return self
            if name == "context":
                self._handed_out = True
                return self.ctx
            if name in _STRUCTURAL:
                value = getattr(self, _STRUCTURAL[name])
            elif name in dispatch.TAGGING_SLOTS:
                site = PropagationSite(self, name)
                self._propagation_sites.append(site)
                value = cassette_propagation_slot(site)
            else:
                value = cassette_operation_slot(OperationSite(self, name))
            self._slots[name] = value
        return value

    def resolve(self, f):
        """What a call site calls instead of ``f``."""
        return self._resolve(f)

    cdef object _resolve(self, f):
        cdef PyObject *hit
        cdef FunctionEntry entry
        if self._generation != _generation:
            self._reset()
        tp = type(f)
        if tp is FunctionType:
            hit = PyDict_GetItemWithError(self._functions, f)
            if hit is not NULL:
                entry = <FunctionEntry>hit
                if entry.matches(f):
                    return entry.target
            if (<PyFunctionObject *>f).func_closure is not NULL:
                return self._resolve_closure(f)
            entry = FunctionEntry()
            entry.record(f)
            entry.target = _own(engine.target, (self, f))
            self._keep(self._functions, f, entry)
            return entry.target
        if tp is MethodType:
            # A bound method resolves as its function, bound again.
            function = PyMethod_GET_FUNCTION(f)
            inner = self._resolve(<object>function)
            if inner is <object>function:
                return f
            return PyMethod_New(inner, <object>PyMethod_GET_SELF(f))
        if (tp is type or tp is BuiltinFunctionType or tp is MethodDescriptorType
                or tp is WrapperDescriptorType):
            hit = PyDict_GetItemWithError(self._resolved, f)
            if hit is not NULL:
                return <object>hit
        if tp is BuiltinFunctionType or tp is MethodWrapperType:
            # A builtin bound to an instance resolves as the descriptor found
            # on its class, bound again.
            callee, owner = _split_bound(f)
            if owner is not NO_SELF:
                inner = self._resolve(callee)
                if inner is callee:
                    return f
                return PyMethod_New(inner, owner)
        target = _own(engine.target, (self, f))
        if target is f and not _is_frame_sensitive(f):
            _own(_route_callee, (f,))
            target = cassette_primitive_new(f)
        if _is_stable(f):
            self._keep(self._resolved, f, target)
        return target

    cdef object _resolve_closure(self, f):
        """Closures are cached weakly: the entry dies with the closure, so
        the cache never keeps the program's cells (and what they hold)
        alive.  A hooked target refers to the closure itself and is not
        cached."""
        cdef FunctionEntry entry
        cdef PyObject *found
        key = PyLong_FromVoidPtr(<void *>f)
        found = PyDict_GetItemWithError(self._closures, key)
        if found is not NULL:
            entry = <FunctionEntry>found
            if cassette_weakref_target(entry.ref) is <PyObject *>f and entry.matches(f):
                return entry.target
        target = _own(engine.target, (self, f))
        if (self._retained and target is not f and type(target) is FunctionType
                and target.__closure__ is f.__closure__):   # the rewritten body
            entry = FunctionEntry()
            entry.ref = PyWeakref_NewRef(f, Forget(self._closures, key))
            entry.record(f)
            entry.target = target
            self._keep(self._closures, key, entry)
        return target

    def method(self, obj, name):
        """For ``obj.name(…)``: M such that ``M(obj, …)`` makes the call."""
        cdef PyObject *found = NULL
        cdef int unbound
        if self._chain_tagging and _is_tagged(obj):
            method = engine.tagged_method(self, obj, name)
            if method is not None:
                return method
        unbound = cassette_get_method(obj, name, &found)
        attribute = <object>found
        Py_DECREF(attribute)
        if unbound:
            return self._resolve(attribute)
        return self._dropper(self._resolve(attribute))

    def split(self, bound):
        """For 3.12's ``super().name(…)``: ``(self, M)`` such that
        ``M(self, …)`` makes the call."""
        if type(bound) is MethodType:
            return bound.__self__, self.resolve(bound.__func__)
        return None, self._dropper(self.resolve(bound))

    def next_step(self, iterator):
        """One step of a ``for`` loop: the next value or EXHAUSTED."""
        return self._next_step(iterator)

    cdef object _next_step(self, iterator):
        cdef OperationSite site = self._next_site
        if site is None:
            site = self._next_site = OperationSite(self, "next")
        if site.refresh() or site.runs_directly(iterator):
            return next(iterator, _EXHAUSTED)
        try:
            return site._call1(iterator)
        except StopIteration:
            return _EXHAUSTED

    def enter(self, manager):
        """``with manager``: ``(value of __enter__, exit callable)``."""
        return self._enter(manager, "__enter__", "__exit__", engine.native_with_error)

    def async_enter(self, manager):
        """``async with manager``: ``(awaitable of __aenter__, exit callable)``."""
        return self._enter(manager, "__aenter__", "__aexit__",
                           engine.native_async_with_error)

    cdef tuple _enter(self, manager, enter_name, exit_name, native_error):
        tp = type(manager)
        enter = _own(_lookup, (tp, enter_name))
        exit_ = _own(_lookup, (tp, exit_name))
        if enter is None or exit_ is None:
            native_error(manager)
        value = self._call_special(enter, manager, ())
        return value, Exit(self, exit_, manager)

    def caught(self, exception):
        """At the entry of an exception handler of the program: the caught
        exception's traceback loses the library's entries — with frames lent
        for it: a handler runs at the depth where the program's recursion
        stopped, and it must not fail there for cassette's work."""
        _own(_remove_library_entries, (exception,))

    def nooverdub(self, callee):
        """What a pass's ``cassette.ir.nooverdub(callee)`` constant becomes:
        ``callee``, called the way a handler is — not overdubbed by this
        context, still seen by an enclosing one.  A frame-sensitive callee
        (``locals``, ``sys._getframe`` …) is itself: it reads the frame of the
        code that calls it."""
        if _is_frame_sensitive(callee):
            return callee
        return NotOverdubbed(self, callee)

    def call_special(self, descriptor, obj, /, *args):
        """Call a special method found on ``type(obj)`` as an operation."""
        return self._call_special(descriptor, obj, args)

    cdef object _call_special(self, descriptor, obj, tuple args):
        # By vectorcall: Cython's f(*args) enters the callee through its
        # tp_call, which counts a recursion level the program's own `with`
        # does not spend (3.11's Python limit, the C limit of 3.12+).
        if _is_method_descriptor(descriptor):
            return _call_tuple(self._resolve(descriptor), (obj,) + args, None)
        if hasattr(type(descriptor), "__get__"):
            descriptor = descriptor.__get__(obj, type(obj))
        return _call_tuple(self._resolve(descriptor), args, None)

    # -- what engine.target builds with ------------------------------------

    cdef object _dropper(self, target):
        """A DropSelf of ``target``, cached for targets of stable callees."""
        if not _is_stable(target):
            return cassette_dropself_new(target)
        key = id(target)
        entry = self._droppers.get(key)
        if entry is None or (<tuple>entry)[0] is not target:
            entry = (target, cassette_dropself_new(target))
            self._keep(self._droppers, key, entry)
        return (<tuple>entry)[1]

    def rewritten(self, function):
        """``function``'s body rewritten for this runtime (cached for
        functions without a closure)."""
        cdef FunctionEntry entry
        found = self._bodies.get(function)
        if found is not None:
            entry = <FunctionEntry>found
            if entry.matches(function):
                return entry.target
        body = _own(engine.rewritten_function, (function, self))
        if function.__closure__ is None:
            entry = FunctionEntry()
            entry.record(function)
            entry.target = body
            self._keep(self._bodies, function, entry)
        return body

    def bind(self, template, escapes=False):
        """``template``'s code with its slots bound to this runtime; code
        that is new (the template had slots) is noted for ``adopt``, and
        ``escapes`` (the code is handed to the user) rules adoption out."""
        code = template.bind(self.slot)
        if escapes:
            self._handed_out = True
        elif code is not template.code:
            if len(self._bound) >= CACHE_MAX:      # dead ones (see _idle)
                self._bound = [ref for ref in self._bound
                               if cassette_weakref_target(ref) != <PyObject *>None]
            self._bound.append(PyWeakref_NewRef(code, None))
        return code

    # -- adoption -----------------------------------------------------------

    cdef bint _idle(self):
        """Whether nothing can run code bound here: no run in progress, no
        nested runtime alive, and each bound code object still alive is
        referred to only once — by the one function this runtime made and
        keeps (a frame running it, a suspended generator, a traceback
        would hold another reference)."""
        cdef PyObject *code
        cdef list alive = []
        if self._depth or self._children or self._handed_out:
            return False
        for ref in self._bound:
            code = cassette_weakref_target(ref)
            if code != <PyObject *>None:
                if cassette_refcount(code) != 1:
                    return False
                alive.append(ref)
        self._bound = alive
        return True

    def adopt(self, ctx):
        """Serve ``ctx`` from now on instead of this runtime's context, and
        return True, when ``ctx`` is a fresh context (no runtime yet) of the
        same class, pass and tagging as the current one, neither enclosed,
        and this runtime is idle (``_idle``).  Everything bound here stays:
        the rewritten code, its sites and their warmed-up caches — what a
        fresh runtime would spend most of a short run rebuilding.  The old
        context loses its runtime (it gets a new one if it runs again).

        The switch is made before any Python code runs, so another thread
        cannot see it half done; one that took this runtime from the old
        context just before is sent back by ``run``'s ``ctx`` check."""
        old = self.ctx
        if (ctx is old or type(ctx) is not type(old) or self.parent is not None
                or not self._retained):
            return False
        if PyObject_GenericGetAttr(ctx, "_runtime") is not None:
            return False
        if PyObject_GenericGetAttr(ctx, "pass_") is not PyObject_GenericGetAttr(old, "pass_"):
            return False
        tag = PyObject_GenericGetAttr(ctx, "tag")
        if (tag is None) != (self._tag is None) or not self._idle():
            return False
        self.ctx = ctx
        self._tag = tag
        self._entries = (PyObject_GenericGetAttr(PyObject_GenericGetAttr(ctx, "bindingscache"),
                                                 "entries")
                         if tag is not None else None)
        self._forget_recent_records()
        PyObject_GenericSetAttr(old, "_runtime", None)
        PyObject_GenericSetAttr(ctx, "_runtime", self)
        # The only parts that hold a context rather than this runtime.
        for site in self._propagation_sites:
            (<PropagationSite>site).serve(self)
        return True

    def instantiation(self, cls):
        """The body of calling class ``cls`` (as :func:`engine.instantiate`)."""
        _own(_route_class, (cls,))
        return Instantiation(self, cls)

    def hooked(self, callee, plan, body):
        return Hooked(self, callee, plan, body)

    def nested_overdub(self):
        return NestedOverdub(self)

    def call(self, f, /, *args, **kwargs):
        """Call ``f`` as an operation of this context."""
        return self.resolve(f)(*args, **kwargs)

    def run(self, f, args, kwargs, ctx=None):
        """Run ``f(*args, **kwargs)`` overdubbed (the entry's work).  ``ctx``:
        the context the caller took this runtime from; should another
        context have adopted it since (another thread), the run goes to
        ``ctx``'s own runtime instead."""
        self._depth += 1
        try:
            if ctx is not None and ctx is not self.ctx:
                from cassette.entry import runtime_of
                return runtime_of(ctx).run(f, args, kwargs, ctx)
            # The entry rewrites ``f`` without going through ``resolve``:
            # bring the intercepted kinds up to date first.
            if self._generation != _generation or self.passes != engine.context_passes(self):
                self._reset()
            routing.route_new_classes()
            return engine.run(self, f, args, kwargs)
        finally:
            self._depth -= 1

    # -- the protocol -------------------------------------------------------

    cdef object invoke(self, handler, a, b, c, d, int nprefix, tuple args, dict kwargs):
        """Call a handler; under a nested overdub the enclosing context
        intercepts it like any other code.  While it runs, the handler is
        noted as the one being called (its first frame is its own, not the
        program's) and the running frame is the barrier: calls the
        interpreter makes before the handler has a frame of its own — the
        handler itself, when it is a routed function, or whatever a handler
        written in C calls — are the handler's, not the program's."""
        cdef void *handler_before
        cdef void *barrier_before
        cdef int credit
        if self.parent is not None:
            handler = self.parent.resolve(handler)
        handler_before = cassette_set_handler(<void *>handler)
        barrier_before = cassette_set_barrier(cassette_current_frame())
        credit = cassette_handler_credit(handler)
        try:
            return _call_prefixed(handler, a, b, c, d, nprefix, args, kwargs)
        finally:
            cassette_credit_python_frames(-credit)
            cassette_set_barrier(barrier_before)
            cassette_set_handler(handler_before)

    def tagged_primitive(self, callee, primitive):
        """What calls of primitive ``callee`` (made by calling ``primitive``)
        become under tagging (see :class:`TaggedPrimitive`)."""
        # A vectorcall object calling a fast-call method: no recursion level
        # of its own (a callable object would cost one per call on 3.11,
        # and a C level on 3.13), named like the primitive.
        tagged = TaggedPrimitive(self, callee, primitive)
        return cassette_primitive_named(tagged, callee)

    cdef object primitive(self, callee, f, tuple args, dict kwargs):
        """The default fallback: ``f`` called with untagged arguments (which
        are routed first: the primitive may call back into them); under
        tagging, metadata propagates through it (``callee``: what hooks
        see)."""
        for arg in args:
            cassette_route_one(arg)
        if kwargs:
            for arg in kwargs.values():
                cassette_route_one(arg)
        if self.parent is not None:
            f = self.parent.resolve(f)
        if self._tagging:
            return _call_tagged(self, _propagator_of(callee), f, args, kwargs)
        return cassette_primitive_call_tuple(f, args, kwargs)


cdef object _TaggedBase = None
cdef str _TAG_SLOT = TAGGED_TAG_SLOT
cdef str _VALUE_SLOT = TAGGED_VALUE_SLOT
cdef str _DATA_SLOT = TAGGED_DATA_SLOT


cdef extern from *:
    """
    #include "structmember.h"
    /* The offset of an object slot (a __slots__ entry) from its member
       descriptor, or -1 for anything else. */
    static Py_ssize_t cassette_slot_offset(PyObject *descr) {
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) return -1;
        return member->offset;
    }
    /* The object in a slot (borrowed), NULL when the slot is empty. */
    static inline PyObject *cassette_slot_get(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    /* A new instance of a class whose three object slots (at the offsets
       given) are filled: what object.__new__ and three setattrs make. */
    static PyObject *cassette_slots_new(PyObject *type, Py_ssize_t o1, PyObject *v1,
                                        Py_ssize_t o2, PyObject *v2,
                                        Py_ssize_t o3, PyObject *v3) {
        PyTypeObject *tp = (PyTypeObject *)type;
        PyObject *obj = tp->tp_alloc(tp, 0);
        if (obj == NULL) return NULL;
        Py_INCREF(v1); *(PyObject **)((char *)obj + o1) = v1;
        Py_INCREF(v2); *(PyObject **)((char *)obj + o2) = v2;
        Py_INCREF(v3); *(PyObject **)((char *)obj + o3) = v3;
        return obj;
    }
    """
    Py_ssize_t cassette_slot_offset(object descr)
    PyObject *cassette_slot_get(object obj, Py_ssize_t offset)
    object cassette_slots_new(object type, Py_ssize_t o1, object v1, Py_ssize_t o2, object v2,
                              Py_ssize_t o3, object v3)


# Where a tagged value keeps its value, tag and metadata, and a Tag its
# types: read and written in place (a setattr or getattr looks the slot's
# descriptor up first).  -1 until ``install_tagging_api`` (then the generic
# attribute protocol is used).
cdef Py_ssize_t _OFF_VALUE = -1, _OFF_TAG = -1, _OFF_DATA = -1, _OFF_TAG_TYPES = -1
cdef Py_ssize_t _OFF_CONTEXT_TAG = -1
cdef object _tg_context_tag_slot = None


cdef inline object _slot(object obj, Py_ssize_t offset, str name):
    """Slot ``name`` of ``obj`` (an instance of the class whose slot it is)."""
    cdef PyObject *found
    if offset >= 0:
        found = cassette_slot_get(obj, offset)
        if found is not NULL:
            return <object>found
    return PyObject_GenericGetAttr(obj, name)      # empty: the AttributeError


cdef inline object _value_of(object tagged):
    return _slot(tagged, _OFF_VALUE, _VALUE_SLOT)


cdef inline object _tag_of(object tagged):
    return _slot(tagged, _OFF_TAG, _TAG_SLOT)


cdef inline object _data_of(object tagged):
    return _slot(tagged, _OFF_DATA, _DATA_SLOT)


cdef inline object _innermost(object value):
    """``value`` with every tag, of any context, taken off."""
    while _is_tagged(value):
        value = _value_of(value)
    return value


cdef object _new_tagged(object made, object value, object tag_, object data):
    """A new instance of tagged type ``made``."""
    if _OFF_VALUE >= 0:
        return cassette_slots_new(made, _OFF_VALUE, value, _OFF_TAG, tag_, _OFF_DATA, data)
    tagged = object.__new__(made)
    PyObject_GenericSetAttr(tagged, _VALUE_SLOT, value)
    PyObject_GenericSetAttr(tagged, _TAG_SLOT, tag_)
    PyObject_GenericSetAttr(tagged, _DATA_SLOT, data)
    return tagged


# The metaclass of tagged types (``type(cassette.Tagged)``), NULL until the
# tagging layer is loaded.  Only tagged values have a class of that
# metaclass (``Tagged`` and ``Tagged[T]`` have no instances), so one pointer
# comparison tells a tagged value: cheaper than walking a class's MRO, which
# is what an isinstance test of every plain operand would cost.
cdef PyTypeObject *_tagged_meta = NULL


cdef inline bint _is_tagged(object value) noexcept:
    """Whether ``value`` is tagged by any context."""
    global _TaggedBase, _tagged_meta
    if _tagged_meta is NULL:
        if _TaggedBase is None:
            _TaggedBase = _dispatch_module.TAGGED
            if _TaggedBase is None:
                return False
        _tagged_meta = Py_TYPE(_TaggedBase)
    return Py_TYPE(<object><PyObject *>Py_TYPE(value)) is _tagged_meta


cdef inline object _untag_one(object value, object tag):
    """``value`` without ``tag`` (the tag of the running context)."""
    if _tagged_by(value, tag):
        return _value_of(value)
    return value


cdef bint _holds_tagged(object container):
    """Whether a list, tuple, set or dict just built holds a tagged value."""
    cdef object kind = type(container)
    if kind is list or kind is tuple or kind is set:
        for element in container:
            if _is_tagged(element):
                return True
    elif kind is dict:
        for key, value in (<dict>container).items():
            if _is_tagged(key) or _is_tagged(value):
                return True
    return False


cdef dict _propagators = {}     # callee -> (propagate or None, always)


cdef tuple _propagator_of(object callee):
    try:
        found = _propagators.get(callee)
    except TypeError:           # an unhashable callee
        return (None, False)
    if found is None:
        propagate = _dispatch_module.tagging_propagator(callee)
        found = (propagate, bool(getattr(propagate, "always", False)))
        if len(_propagators) < 4096:
            _propagators[callee] = found
    return <tuple>found


cdef object _UNDECIDED = object()
cdef object _UNRECORDED = object()
cdef object _getitem_propagator = None
cdef object _setitem_propagator = None

# The class of the bindings cache's records (``propagation._Record``) and
# where its slots are: learnt from the first record met.
cdef object _record_type = None
cdef Py_ssize_t _OFF_RECORD_TARGET = -1, _OFF_RECORD_WEAK = -1, _OFF_RECORD_ITEMS = -1


cdef void _learn_record_type(object record_type) except *:
    """Where the slots the core reads are; a record type without them is
    a change of ``propagation`` the core must follow, said loudly."""
    global _record_type, _OFF_RECORD_TARGET, _OFF_RECORD_WEAK, _OFF_RECORD_ITEMS
    namespace = vars(record_type)
    offsets = [cassette_slot_offset(namespace[name]) if name in namespace else -1
               for name in _RECORD_SLOTS]
    if -1 in offsets:
        raise TypeError(f"cassette's core reads the slots {_RECORD_SLOTS} of the bindings "
                        f"cache's records, and {record_type.__qualname__} does not have them")
    _OFF_RECORD_TARGET, _OFF_RECORD_WEAK, _OFF_RECORD_ITEMS = offsets
    _record_type = record_type


cdef tuple _RECORD_SLOTS = ("target", "weak", "items")


cdef inline object _address(object obj):
    """``id(obj)`` (the builtin would be called through the module's
    builtins and raise an audit event on every call)."""
    return PyLong_FromVoidPtr(<void *>obj)


cdef object _parts_in_step(Runtime runtime, object sequence):
    """The per-element parts ``runtime``'s bindings cache records for
    ``sequence`` (a list or tuple, exactly) when the record is its own and
    has one part per element (what a read may trust after comparing its
    element), a list; ``_UNRECORDED`` when the cache has no record of it;
    else ``_UNDECIDED``."""
    record = runtime._record_of(sequence)
    if record is None:
        return _UNRECORDED
    if (_slot(record, _OFF_RECORD_WEAK, "weak") is not False
            or _slot(record, _OFF_RECORD_TARGET, "target") is not sequence):
        return _UNDECIDED
    parts = _slot(record, _OFF_RECORD_ITEMS, "items")
    if type(parts) is not list or len(<list>parts) != len(sequence):
        return _UNDECIDED
    return parts


cdef object _unpacked_in_step(Runtime runtime, object sequence):
    """The elements of ``sequence`` (a list or tuple, exactly) as a tuple,
    each tagged with the metadata recorded for it while it still holds the
    value recorded; None when the record is not in step (the propagation
    layer decides)."""
    cdef Py_ssize_t i, n
    if type(sequence) is not list and type(sequence) is not tuple:
        return None
    parts = _parts_in_step(runtime, sequence)
    if type(parts) is not list:
        return None
    n = len(<list>parts)
    out = PyTuple_New(n)
    for i in range(n):
        value = sequence[i]
        part = parts[i]
        if part is not None and (<tuple>part)[0] is _innermost(value):
            value = _make_tagged(runtime._tag, value, (<tuple>part)[1])
        Py_INCREF(value)
        PyTuple_SET_ITEM(out, i, value)
    return out


cdef object _built_list(Runtime runtime, list container):
    """``container``, a list just built, with the values tagged by
    ``runtime``'s context replaced by their primal values and their
    metadata recorded (as ``propagation.record_built`` does)."""
    cdef Py_ssize_t i, n = len(container)
    cdef object parts = None
    tag_ = runtime._tag
    for i in range(n):
        value = container[i]
        if _tagged_by(value, tag_):
            if parts is None:
                parts = [None] * n
            primal = _value_of(value)
            container[i] = primal
            (<list>parts)[i] = (_innermost(primal), _data_of(value))
    if parts is not None:
        _dispatch_module.record_parts(runtime.ctx, container, parts)
    return container


cdef inline Py_ssize_t _element_index(list container, object index):
    """``index`` (an int) as an index of ``container``, or -1 when out of
    range (the primitive raises its own error)."""
    cdef Py_ssize_t n = len(container)
    cdef Py_ssize_t i = PyLong_AsSsize_t(index)
    if i == -1 and PyErr_Occurred() is not NULL:
        PyErr_Clear()               # beyond any index: the primitive's IndexError
        return -1
    if i < 0:
        i += n
    return i if 0 <= i < n else -1


cdef object _list_read(Runtime runtime, list container, object index):
    """``container[index]`` (an int index) when ``runtime``'s bindings cache
    records the list's elements in step with it — the common case of a list
    built in the run — tagged with the element's metadata; ``_UNRECORDED``
    when the cache has no record of the list (a plain read);
    ``_UNDECIDED`` for everything else (the propagation layer decides)."""
    cdef Py_ssize_t i
    parts = _parts_in_step(runtime, container)
    if type(parts) is not list:
        return parts
    i = _element_index(container, index)
    if i < 0:
        return _UNDECIDED
    value = container[i]
    part = (<list>parts)[i]
    if part is None:
        return value
    if (<tuple>part)[0] is not _innermost(value):
        return _UNDECIDED           # moved behind cassette's back: rematch
    return _make_tagged(runtime._tag, value, (<tuple>part)[1])


cdef object _list_write(Runtime runtime, object setitem, list container, object index,
                        object value):
    """``setitem(container, index, value)`` with the element's metadata
    recorded, as :func:`_list_read` reads it (a list without a record gets
    one when ``value`` carries metadata); ``_UNRECORDED`` (not done) when
    neither the list has a record nor ``value`` is tagged, ``_UNDECIDED``
    when not done for another reason."""
    cdef Py_ssize_t i
    parts = _parts_in_step(runtime, container)
    if parts is _UNDECIDED:
        return parts
    tagged = _is_tagged(value)
    if parts is _UNRECORDED and not tagged:
        return parts
    i = _element_index(container, index)
    if i < 0:
        return _UNDECIDED
    if tagged:
        if _tag_of(value) is not runtime._tag:
            return _UNDECIDED
        stored = _value_of(value)
        setitem(container, i, stored)
        part = (_innermost(stored), _data_of(value))
        if parts is _UNRECORDED:
            parts = [None] * len(container)
            (<list>parts)[i] = part
            _dispatch_module.record_parts(runtime.ctx, container, parts)
        else:
            (<list>parts)[i] = part
        return None
    setitem(container, i, value)
    (<list>parts)[i] = None
    return None


cdef object _list_element(Runtime runtime, object propagate, object f, tuple args):
    """``lst[i]`` and ``lst[i] = v`` (``args``, the list first) when the
    propagators of ``getitem`` and ``setitem`` would run: see
    :func:`_list_read` and :func:`_list_write`."""
    global _getitem_propagator, _setitem_propagator
    if _getitem_propagator is None:
        _getitem_propagator = _dispatch_module.tagging_propagator(operator.getitem)
        _setitem_propagator = _dispatch_module.tagging_propagator(operator.setitem)
    if type(args[1]) is not int:
        return _UNDECIDED
    if propagate is _getitem_propagator and len(args) == 2:
        out = _list_read(runtime, <list>args[0], args[1])
    elif propagate is _setitem_propagator and len(args) == 3:
        out = _list_write(runtime, f, <list>args[0], args[1], args[2])
    else:
        return _UNDECIDED
    return _UNDECIDED if out is _UNRECORDED else out


# The tagged type found last, for a tag and a primal type (a tag's types
# stay its own while it lives, which this reference ensures).
cdef object _last_tag = None, _last_tagged_primal = None, _last_tagged_type = None


cdef inline object _made_tagged_type(object tag_, object primal_type):
    """The type of ``primal_type`` values tagged with ``tag_`` if the tag
    has made it, else None."""
    global _last_tag, _last_tagged_primal, _last_tagged_type
    cdef PyObject *found
    if tag_ is _last_tag and primal_type is _last_tagged_primal:
        return _last_tagged_type
    found = PyDict_GetItemWithError(_types_of(tag_), primal_type)
    if found is NULL:
        return None
    _last_tag, _last_tagged_primal, _last_tagged_type = tag_, primal_type, <object>found
    return <object>found


cdef object _make_tagged(object tag_, object value, object data):
    """A value tagged with ``tag_`` carrying metadata ``data``."""
    made = _made_tagged_type(tag_, type(value))
    if made is None:
        made = tag_.tagged_type(type(value))
    return _new_tagged(made, value, tag_, data)


cdef object _call_tagged(Runtime runtime, tuple propagation, object f, tuple args,
                         dict kwargs):
    """The fallback under tagging, without a Python frame of the library
    between the program and the primitive unless metadata is involved
    (frame-walking code, tracebacks and the recursion limit see none):
    arguments untagged, or the propagation layer's ``propagate`` when the
    primitive has one and some argument is tagged or has recorded
    components (or the propagator must always run)."""
    cdef Py_ssize_t i, n
    cdef list untagged
    cdef object propagate = propagation[0]
    cdef object ctx = runtime.ctx, tag = runtime._tag
    cdef dict entries = runtime._entries
    if propagate is not None:
        if propagation[1]:
            return propagate(ctx, f, args, kwargs or {})
        if not kwargs and len(args) >= 2 and type(args[0]) is list and entries:
            out = _list_element(runtime, propagate, f, args)
            if out is not _UNDECIDED:
                return out
        for arg in args:
            if _is_tagged(arg) or (entries and _address(arg) in entries):
                return propagate(ctx, f, args, kwargs or {})
        if kwargs:
            for arg in kwargs.values():
                if _is_tagged(arg):
                    return propagate(ctx, f, args, kwargs)
        return cassette_primitive_call_tuple(f, args, kwargs)
    n = len(args)
    untagged = None
    for i in range(n):
        value = _untag_one(args[i], tag)
        if value is not args[i]:
            if untagged is None:
                untagged = list(args)
            untagged[i] = value
    if untagged is not None:
        args = tuple(untagged)
    if kwargs:
        kwargs = {k: _untag_one(v, tag) for k, v in kwargs.items()}
    return cassette_primitive_call_tuple(f, args, kwargs)


cdef class TaggedPrimitive:
    """What a primitive is under tagging: the state of the fallback
    (:func:`_call_tagged`) that the Primitive wrapping it runs."""

    cdef Runtime runtime     # its context, tag and entries: read at each call
    cdef object callee, primitive
    cdef tuple propagation

    def __init__(self, Runtime runtime, callee, primitive):
        self.runtime = runtime
        self.callee = callee
        self.primitive = primitive
        self.propagation = _propagator_of(callee)

    def __repr__(self):
        return f"<tagged primitive {self.callee!r}>"


cdef tuple _positional(PyObject **args, Py_ssize_t nargs):
    """The positional arguments of a vectorcall, as a tuple."""
    cdef tuple positional = PyTuple_New(nargs)
    cdef Py_ssize_t i
    for i in range(nargs):
        Py_INCREF(<object>args[i])
        PyTuple_SET_ITEM(positional, i, <object>args[i])
    return positional


cdef dict _keywords(PyObject **args, Py_ssize_t nargs, PyObject *kwnames):
    """The keyword arguments of a vectorcall, as a new dict."""
    cdef dict keywords = {}
    cdef Py_ssize_t i
    if kwnames is not NULL:
        for i in range(len(<tuple>kwnames)):
            keywords[(<tuple>kwnames)[i]] = <object>args[nargs + i]
    return keywords


cdef object _tagged_vectorcall(object state, PyObject **args, size_t nargsf,
                               PyObject *kwnames):
    """A Primitive wrapping a :class:`TaggedPrimitive` called (its arguments
    already routed): the fallback under tagging, with the call's arguments."""
    cdef TaggedPrimitive tagged = <TaggedPrimitive>state
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    keywords = None if kwnames is NULL else _keywords(args, nargs, kwnames)
    cdef Runtime runtime = tagged.runtime
    return _call_tagged(runtime, tagged.propagation,
                        tagged.primitive, _positional(args, nargs), keywords)


cassette_install_tagged_call(<void *>_tagged_vectorcall, TaggedPrimitive)
cassette_note_builtin_len(len)


cdef dict _PROPAGATION_KINDS = {
    "built": 1, "list_to_tuple": 2, "unpacked": 3, "keywords": 4, "list_append": 5,
    "set_add": 6, "extended": 7, "is": 8, "is_not": 9, "load_global": 10,
    "store_global": 11, "map_add": 12,
}


cdef class PropagationSite:
    """A propagation slot (see ``cassette.propagation``) of a runtime whose
    context tags and has no tagging context around it: the common case —
    no tagged value, nothing recorded — is decided here, without a Python
    frame; anything else goes to the propagation layer's ``slow`` slot."""

    cdef Runtime runtime
    cdef object slow, name
    cdef int kind
    cdef bint direct

    def __init__(self, Runtime runtime, name):
        self.name = name
        self.kind = _PROPAGATION_KINDS[name]
        self.serve(runtime)

    cdef serve(self, Runtime runtime):
        """Take the context of ``runtime`` (anew when it adopts another);
        the slow path is made when first needed."""
        self.runtime = runtime
        self.slow = None
        self.direct = runtime._tagging and not (
            runtime.parent is not None and engine.chain_has_tagging(runtime.parent))

    cdef object _slow(self):
        """The propagation layer's slot (it closes over the context)."""
        if self.slow is None:
            self.slow = engine.tagging_slot(self.runtime, self.name)
        return self.slow

    cdef inline bint _recorded(self, object obj):
        cdef dict entries = self.runtime._entries
        return bool(entries) and _address(obj) in entries

    cdef object _call1(self, a):
        if self.direct:
            if self.kind == 1:
                if not _holds_tagged(a):
                    return a
                if type(a) is list:
                    return _built_list(self.runtime, <list>a)
            elif self.kind == 2:
                if not self._recorded(a) and not _holds_tagged(a):
                    return tuple(a)
            elif not self._recorded(a):         # unpacked, keywords
                return a
            elif self.kind == 3:
                out = _unpacked_in_step(self.runtime, a)
                if out is not None:
                    return out
        return self._slow()(a)

    cdef object _call2(self, a, b):
        cdef object namespace
        if self.direct:
            if self.kind == 5:
                if not _is_tagged(a) and not self._recorded(b):
                    (<list>b).append(a)
                    return None
            elif self.kind == 6:
                if not _is_tagged(a):
                    (<set>b).add(a)
                    return None
            elif self.kind == 7:
                if not self._recorded(a) and not _holds_tagged(b):
                    return None
            elif self.kind == 8 or self.kind == 9:
                if not _is_tagged(a) and not _is_tagged(b):
                    return (a is b) if self.kind == 8 else (a is not b)
            elif self.kind == 10 or self.kind == 11:
                if self.kind == 10 or not _is_tagged(a):
                    namespace = <object>PyEval_GetGlobals()
                    if not self._recorded(namespace):
                        return a
        return self._slow()(a, b)

    cdef object _call3(self, a, b, c):
        if self.direct and not _is_tagged(a) and not _is_tagged(b) and not self._recorded(c):
            c[a] = b
            return None
        return self._slow()(a, b, c)


cdef class NotOverdubbed:
    """A callee a pass marked ``nooverdub``: called as a handler is."""

    cdef Runtime runtime
    cdef readonly object callee

    def __init__(self, Runtime runtime, callee):
        self.runtime = runtime
        self.callee = callee

    def __call__(self, *args, **kwargs):
        return self.runtime.invoke(self.callee, None, None, None, None, 0, args, kwargs)

    def __repr__(self):
        return f"<not overdubbed {self.callee!r}>"


cdef class Hooked:
    """A callee with handlers: calling it runs the protocol of reference §3.2."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef readonly object callee
    cdef object body
    cdef Protocol protocol

    def __init__(self, Runtime runtime, callee, plan, body):
        self.runtime = runtime
        self.callee = callee
        self.body = body
        self.protocol = Protocol(plan)
        self.vectorcall = <void *>_hooked_vectorcall

    def __call__(self, *args, **kwargs):
        return self.protocol.run(self.runtime, self.callee, self.body,
                                 self.callee, args, kwargs)

    # The callee's names: the interpreter's messages that name a callable
    # (``f() argument after * must be an iterable``) name the callee.
    @property
    def __qualname__(self):
        return self.callee.__qualname__

    @property
    def __module__(self):
        return self.callee.__module__

    def __str__(self):
        # Used by those messages when the callee has no __qualname__
        # (``None argument after * must be an iterable``).
        return str(self.callee)


cdef object _hooked_vectorcall(object hooked, PyObject **args, size_t nargsf,
                               PyObject *kwnames):
    cdef Hooked self = <Hooked>hooked
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    return self.protocol.run(self.runtime, self.callee, self.body, self.callee,
                             _positional(args, nargs), _keywords(args, nargs, kwnames))


cdef class Instantiation:
    """``type.__call__(cls, …)`` with ``__new__`` and ``__init__`` each an
    operation: the same steps as :func:`cassette.engine.instantiate`."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object cls

    def __init__(self, Runtime runtime, cls):
        self.runtime = runtime
        self.cls = cls
        self.vectorcall = <void *>_instantiation_vectorcall

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)

    cdef object call(self, tuple args, dict kwargs):
        cls = self.cls
        obj = _call_tuple(self.runtime.resolve(cls.__new__), (cls,) + args, kwargs)
        # PyObject_TypeCheck, as type.__call__: no __instancecheck__, no __class__.
        if PyObject_TypeCheck(obj, <PyTypeObject *>cls):
            initialized = _call_tuple(self.runtime.resolve(type(obj).__init__),
                                      (obj,) + args, kwargs)
            if initialized is not None:
                raise TypeError(
                    f"__init__() should return None, not '{type(initialized).__name__}'")
        return obj


cdef object _instantiation_vectorcall(object instantiation, PyObject **args, size_t nargsf,
                                      PyObject *kwnames):
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    return (<Instantiation>instantiation).call(_positional(args, nargs),
                                               _keywords(args, nargs, kwnames))




cdef class Exit:
    """The ``__exit__`` callable a rewritten ``with`` pushes."""

    cdef void *vectorcall      # see cassette_enable_vectorcall
    cdef Runtime runtime
    cdef object method, manager

    def __init__(self, Runtime runtime, method, manager):
        self.runtime = runtime
        self.method = method
        self.manager = manager
        self.vectorcall = <void *>_exit_vectorcall

    def __call__(self, exc_type, exc_value, traceback):
        return self.runtime._call_special(
            self.method, self.manager, (exc_type, exc_value, traceback))


cdef object _exit_vectorcall(object exit_, PyObject **args, size_t nargsf, PyObject *kwnames):
    cdef Exit self = <Exit>exit_
    if kwnames is not NULL or PyVectorcall_NARGS(nargsf) != 3:
        return self(*_positional(args, PyVectorcall_NARGS(nargsf)),
                    **_keywords(args, PyVectorcall_NARGS(nargsf), kwnames))
    return self.runtime._call_special(self.method, self.manager,
                                      (<object>args[0], <object>args[1], <object>args[2]))


cdef void _enable_vectorcalls():
    """Hooked, Instantiation and Exit objects are called by vectorcall (see
    cassette_enable_vectorcall): their ``vectorcall`` field's offset."""
    cdef Hooked hooked = Hooked.__new__(Hooked)
    cdef Instantiation instantiation = Instantiation.__new__(Instantiation)
    cdef Exit exit_ = Exit.__new__(Exit)
    cassette_enable_vectorcall(
        Hooked, <char *>&hooked.vectorcall - <char *><PyObject *>hooked)
    cassette_enable_vectorcall(
        Instantiation, <char *>&instantiation.vectorcall - <char *><PyObject *>instantiation)
    cassette_enable_vectorcall(Exit, <char *>&exit_.vectorcall - <char *><PyObject *>exit_)


_enable_vectorcalls()


cdef class NestedOverdub:
    """The body of ``cassette.overdub`` called from overdubbed code: the
    inner run, whose handlers the enclosing runtime intercepts."""

    cdef Runtime parent

    def __init__(self, Runtime parent):
        self.parent = parent

    def __call__(self, ctx, f, *args, **kwargs):
        engine.check_arguments(ctx, f)
        runtime = Runtime(ctx, self.parent)
        try:
            return runtime.run(f, args, kwargs)
        finally:
            runtime.release()


cdef class OperationSite:
    """The slot of one operation kind (``add``, ``getattr`` …)."""

    cdef Runtime runtime
    cdef object callee, implementation, name
    cdef int arrangement
    cdef bint negate
    cdef Protocol protocol
    cdef Py_ssize_t generation
    # Under tagging, with no enclosing runtime, no hook and no handler but
    # execute handlers chosen by argument types (``execute_by_types``, the
    # selector's cache; None when there are none): see ``unhooked``.
    cdef bint unhooked_tagging
    cdef dict execute_by_types
    cdef bint is_getitem, is_setitem
    # The one handler when it is an ``execute`` handler for any arguments
    # and no hook or other handler exists (the shape of a tagging tool's
    # rules): called without the protocol's generic path.
    cdef object execute_only
    # No hook and no handler but ``execute`` handlers chosen by argument
    # types: the one the selector's cache names is called the same way.
    cdef bint execute_selected
    # What ``execute_by_types`` answered for the operand types this site
    # has seen, most recent first: see ``_handler_for``.
    cdef tuple handler_cache

    def __init__(self, Runtime runtime, kind):
        name, arrangement_name, negate = ARRANGED_SITES.get(kind, (kind, None, False))
        arrangement = _ARRANGEMENT_CODES.get(arrangement_name, 0)
        operation = OPERATIONS[name]
        self.name = name
        self.runtime = runtime
        self.callee = operation.callee
        self.implementation = operation.implementation
        self.arrangement = arrangement
        self.negate = negate
        self.generation = -1
        self.is_getitem = kind == "getitem"
        self.is_setitem = kind == "setitem"
        self.handler_cache = ()

    cdef bint refresh(self):
        """Bring the plan up to date; True when no handler applies."""
        if self.generation != _generation:
            plan = dispatch.plan(type(self.runtime.ctx), self.callee)
            # Under tagging even an unhooked operation runs the protocol:
            # its fallback propagates metadata.
            self.protocol = (None if plan is EMPTY and not self.runtime._tagging
                             else Protocol(plan))
            execute = plan.execute
            only_execute = (plan.prehook is None and plan.posthook is None
                            and plan.fallback is None)
            self.unhooked_tagging = (
                only_execute and self.runtime._tagging and self.runtime.parent is None
                and (execute is None
                     or (execute.unconditional is None and execute.by_types is not None))
                and not _propagator_of(self.callee)[1])
            self.execute_by_types = None if execute is None else execute.by_types
            self.execute_only = (execute.unconditional
                                 if only_execute and execute is not None else None)
            self.execute_selected = (only_execute and execute is not None
                                     and execute.unconditional is None
                                     and execute.by_types is not None)
            self.handler_cache = ()
            self.generation = _generation
        return self.protocol is None

    cdef PyObject *_handler_for(self, object ta, object tb, object tc, long mask) except? NULL:
        """The ``execute`` handler chosen for operands of types ``ta, tb[,
        tc]`` (``tc`` None for two operands) of which those in ``mask`` are
        tagged with the context's tag, None for none, as the selector's
        cache by types has it (see ``_select``); NULL while the selector has
        not been asked (borrowed).  Answers are kept in ``handler_cache``
        (compared by identity, without building a key) for the site's last
        sixteen combinations (a site sees plain and tagged operands in each
        order, and the tagged types of consecutive tags)."""
        cdef object mask_ = _MASKS[mask]
        cdef PyObject *found = cassette_cached_handler(self.handler_cache, ta, tb, tc, mask_)
        if found is not NULL:
            return found
        found = PyDict_GetItemWithError(
            self.execute_by_types, _by_types_key((ta, tb) if tc is None else (ta, tb, tc), mask))
        if found is not NULL:
            self.handler_cache = (ta, tb, tc, mask_, <object>found) + self.handler_cache[:75]
        return found

    cdef inline bint unhooked(self, object ta, object tb, object tc, long mask):
        """Under tagging: whether the protocol would come down to the
        fallback's propagation for operands of types ``ta, tb[, tc]``
        (``mask``: as for ``_handler_for``) — no hook, no handler for them,
        known once the selector has been asked — so that an operation
        without metadata runs directly and a list element is read or
        written here (as ``_call_tagged`` would)."""
        cdef PyObject *found
        if not (self.unhooked_tagging and self.generation == _generation):
            return False
        if self.execute_by_types is None:
            return True
        found = self._handler_for(ta, tb, tc, mask)
        return found is not NULL and <object>found is None

    cdef inline object _execute(self, object handler, object a, object b):
        """The protocol of ``callee(a, b)`` when ``handler`` is the only one
        that can run: called directly, with the protocol's tail
        (``overdub_instead``) when it declines."""
        out = self.runtime.invoke(handler, self.runtime.ctx, self.callee, a, b, 4, (), None)
        if out is _OverdubInstead:
            out = self.protocol.overdub_instead(self.runtime, self.callee, None,
                                                self.callee, (a, b), None, self.name)
        return (not out) if self.negate else out

    cdef inline bint _plain_operands(self, object a, object b):
        """Whether ``a`` and ``b`` (None: absent) carry no metadata: neither
        is tagged nor has a record in the bindings cache."""
        if _is_tagged(a) or (b is not None and _is_tagged(b)):
            return False
        cdef dict entries = self.runtime._entries
        return not entries or (
            (cassette_recordless(a) or _address(a) not in entries)
            and (b is None or cassette_recordless(b) or _address(b) not in entries))

    cdef object _operate(self, tuple args):
        cdef object out
        if self.refresh():
            if self.runtime.parent is not None:
                out = self.runtime.parent.call(self.callee, *args)
            else:
                out = cassette_primitive_call_tuple(self.implementation, args, None)
        else:
            out = self.protocol.run(self.runtime, self.callee, None,
                                    self.callee, args, None, self.name)
        if self.negate:
            return not out
        return out

    cdef inline bint runs_directly(self, object a):
        """Whether the operation on the lone operand ``a`` is its plain
        implementation (the plan being up to date)."""
        return ((self.protocol is None and self.runtime.parent is None)
                or (self.execute_by_types is None and self.unhooked(None, None, None, 0)
                    and self._plain_operands(a, None)))

    cdef object _call1(self, a):
        if self.generation == _generation and self.runs_directly(a):
            return self.implementation(a)
        return self._operate((a,))

    cdef object _call2(self, a, b):
        cdef PyObject *handler
        cdef long mask
        if self.arrangement == 1:
            a, b = b, a
        if self.generation == _generation:
            if self.protocol is None and self.runtime.parent is None:
                out = self.implementation(a, b)
                return (not out) if self.negate else out
            if self.execute_only is not None:
                return self._execute(self.execute_only, a, b)
            if self.execute_by_types is not None:
                if _is_tagged(a) or _is_tagged(b):
                    tag = self.runtime._tag
                    mask = _owned(tag, a) | (_owned(tag, b) << 1)
                else:
                    mask = 0
                handler = self._handler_for(type(a), type(b), None, mask)
                if handler is NULL:           # the selector decides (and caches)
                    return self._operate((a, b))
                if <object>handler is not None:
                    if self.execute_selected:
                        return self._execute(<object>handler, a, b)
                    return self._operate((a, b))
            if self.unhooked_tagging:
                if self.is_getitem and type(a) is list and type(b) is int:
                    out = _list_read(self.runtime, a, b)
                    if out is _UNRECORDED:
                        return self.implementation(a, b)
                    if out is not _UNDECIDED:
                        return out
                elif self._plain_operands(a, b):
                    out = self.implementation(a, b)
                    return (not out) if self.negate else out
        return self._operate((a, b))

    cdef object _call3(self, a, b, c):
        if self.arrangement == 2:
            # a store: (value, container, key) on the stack
            if (self.is_setitem and type(b) is list and type(c) is int
                    and cassette_builtin_instance(_innermost(a))
                    and self.unhooked(list, int, type(a), _owned(self.runtime._tag, a) << 2)):
                out = _list_write(self.runtime, self.callee, b, c, a)
                if out is _UNRECORDED:
                    if self._plain_operands(a, None):
                        self.implementation(b, c, a)
                        return None
                elif out is not _UNDECIDED:
                    return out
            args = (b, c, a)
        elif self.arrangement == 3:
            args = (a, slice(b, c))
        else:
            args = (a, b, c)
        return self._operate(args)

    cdef object _call4(self, a, b, c, d):
        # setslice: (value, obj, start, stop)
        return self._operate((b, slice(c, d), a))


cdef object _operation_entry(object site, PyObject **args, Py_ssize_t nargs):
    """What the slot of an operation site runs (see ``cassette_slot_new``)."""
    cdef OperationSite operation = <OperationSite>site
    if nargs == 2:
        return operation._call2(<object>args[0], <object>args[1])
    if nargs == 1:
        return operation._call1(<object>args[0])
    if nargs == 3:
        return operation._call3(<object>args[0], <object>args[1], <object>args[2])
    if nargs == 4:
        return operation._call4(<object>args[0], <object>args[1], <object>args[2],
                                <object>args[3])
    raise TypeError(f"the slot of {operation.name!r} takes 1 to 4 operands, got {nargs}")


cdef object _propagation_entry(object site, PyObject **args, Py_ssize_t nargs):
    """What the slot of a propagation site runs."""
    cdef PropagationSite propagation = <PropagationSite>site
    if nargs == 1:
        return propagation._call1(<object>args[0])
    if nargs == 2:
        return propagation._call2(<object>args[0], <object>args[1])
    if nargs == 3:
        return propagation._call3(<object>args[0], <object>args[1], <object>args[2])
    raise TypeError(f"the slot of {propagation.name!r} takes 1 to 3 operands, got {nargs}")


cassette_install_slot_entries(<void *>_operation_entry, <void *>_propagation_entry)


# -- routing (see the comment on cassette_trampoline) -----------------------

# Interned, as the names of functions a ``def`` makes are: compared by identity.
cdef object _GET_NAME = sys.intern("__get__")


cdef object _redirect(object runtime, object func, PyObject **args, size_t nargsf,
                      PyObject *kwnames):
    """A routed function called by the interpreter on behalf of rewritten
    code: an operation of that code's runtime."""
    target = (<Runtime>runtime)._resolve(func)
    if target is func:
        return cassette_plain_call(func, args, nargsf, kwnames)
    result = PyObject_Vectorcall(target, args, nargsf, kwnames)
    if (<PyFunctionObject *>func).func_name == <PyObject *>_GET_NAME:
        # What a descriptor gives the interpreter it may call next (a
        # special method's descriptor returning a closure).
        cassette_route_one(result)
    elif type(result) is FunctionType:
        # What C code gets from a Python function it called, it may call
        # next (3.11's re._subx returns the function the matcher calls for
        # each match).
        cassette_route_one(result)
    return result



cdef tuple _ACTING_CODES = callables.acting_for_program_codes()
# Any Python function shows the interpreter's vectorcall entry.
assert type(callables.lookup_on_type) is FunctionType
cassette_install_routing(Runtime, _ACTING_CODES, <void *>_redirect, callables.lookup_on_type,
                         callables.library_entries_dropped)


cassette_install_argument_routing(routing.route_argument, functools.partial,
                                  MethodWrapperType)


def route(function, protocol=False):
    """Route ``function`` (a Python function): from now on, when the
    interpreter calls it on behalf of overdubbed code, it runs overdubbed.
    ``protocol``: the interpreter may call it through a protocol (a special
    method, a property accessor), which must then not be inlined.  True if
    routing changed by this call."""
    return cassette_route_function(function, 1 if protocol else 0) == 1


def is_routed(function):
    """True when ``function`` is routed."""
    return cassette_is_routed(function)


def handler_being_called():
    """The handler a runtime is calling on this thread, or None."""
    return cassette_handler_being_called()


def is_barrier(frame):
    """True when ``frame`` is calling a handler that has no frame of its own
    yet (or never will: one written in C): what the interpreter starts from
    ``frame`` meanwhile — the handler's ``**kwargs`` hashing a key, say — is
    the handler's, not the program's."""
    return cassette_is_barrier(frame)


def frame_runtime(frame):
    """The runtime on whose behalf ``frame`` runs, or None: the runtime its
    code was rewritten for, looking past the library's frames that act for
    the program, and None for the frame running a handler."""
    return cassette_frame_runtime(frame)


def class_seen(cls):
    """True when this version of ``cls`` was noted by :func:`note_class_seen`."""
    return bool(cassette_class_seen(<PyTypeObject *>cls))


def note_class_seen(cls):
    """Note that the current version of ``cls`` was routed."""
    cassette_class_saw(<PyTypeObject *>cls)


routing.install(route, class_seen, note_class_seen)


# -- the tagging API's common case --------------------------------------------
#
# ``cassette.tagging`` defines the API; when the core is in use it installs
# these versions of its four most called functions, which decide the common
# case (a context with tagging, a value tagged by no other context, metadata
# already of the allowed type) without a Python frame, and hand every other
# case — errors included — to the Python definitions.

cdef object _tg_slow_tag = None     # the Python definitions (the slow paths)
cdef object _tg_slow_untag = None
cdef object _tg_slow_istagged = None
cdef object _tg_slow_metadata = None
cdef object _tg_context = None      # cassette.Context
cdef object _tg_tag_type = None     # cassette.tagging.Tag
cdef dict _tg_allowed = None        # (context class, primal type) -> allowed type
cdef object _tg_no_data = None      # NoMetaData


def install_tagging_api(python_api, context, tag_type, tagged_base, allowed, no_data):
    """Called once by ``cassette.tagging``: the Python definitions of ``tag``,
    ``untag``, ``istagged`` and ``metadata``, and what the fast paths read."""
    global _tg_slow_tag, _tg_slow_untag, _tg_slow_istagged, _tg_slow_metadata
    global _tg_context, _tg_tag_type, _tg_allowed, _tg_no_data
    _tg_slow_tag, _tg_slow_untag, _tg_slow_istagged, _tg_slow_metadata = python_api
    _tg_context, _tg_tag_type = context, tag_type
    _tg_allowed, _tg_no_data = allowed, no_data
    global _OFF_VALUE, _OFF_TAG, _OFF_DATA, _OFF_TAG_TYPES
    offsets = [cassette_slot_offset(vars(tagged_base)[name])
               for name in (_VALUE_SLOT, _TAG_SLOT, _DATA_SLOT)]
    offsets.append(cassette_slot_offset(vars(tag_type)["_types"]))
    if all(offset >= 0 for offset in offsets):
        _OFF_VALUE, _OFF_TAG, _OFF_DATA, _OFF_TAG_TYPES = offsets
    global _TaggedBase, _tagged_meta, _tg_context_tag_slot, _OFF_CONTEXT_TAG
    _TaggedBase = tagged_base
    _tagged_meta = Py_TYPE(tagged_base)
    _tg_context_tag_slot = vars(context)["tag"]
    _OFF_CONTEXT_TAG = cassette_slot_offset(_tg_context_tag_slot)


cdef extern from *:
    """
    /* The last context class found to keep Context.tag in its slot, and
       its version tag then (any change to it or a base changes that). */
    static PyTypeObject *cassette_tag_slot_class = NULL;
    static unsigned int cassette_tag_slot_version = 0;

    static inline int cassette_tag_slot_known(PyTypeObject *tp) {
        return tp == cassette_tag_slot_class && tp->tp_version_tag != 0
            && tp->tp_version_tag == cassette_tag_slot_version;
    }

    static inline void cassette_tag_slot_found(PyTypeObject *tp) {
        cassette_tag_slot_class = tp;
        cassette_tag_slot_version = tp->tp_version_tag;
    }
    """
    bint cassette_tag_slot_known(PyTypeObject *tp)
    void cassette_tag_slot_found(PyTypeObject *tp)


cdef inline bint _tag_in_slot(object ctx):
    """Whether ``ctx``'s class keeps ``Context.tag`` (a slot) unchanged."""
    cdef PyTypeObject *tp = Py_TYPE(ctx)
    if cassette_tag_slot_known(tp):
        return True
    if cassette_type_lookup(tp, "tag") is <PyObject *>_tg_context_tag_slot:
        cassette_tag_slot_found(tp)      # the lookup gave it a version tag
        return True
    return False


cdef inline object _api_tag(object ctx):
    """The tag of a context with tagging, or None (the slow path decides)."""
    cdef PyObject *found
    # The class seen last (a Context subclass) needs no subclass test.  Not
    # isinstance: ContextMeta would make it look up __instancecheck__.
    if (cassette_tag_slot_known(Py_TYPE(ctx))
            or PyObject_TypeCheck(ctx, <PyTypeObject*>_tg_context)):
        # Context.tag is a slot: read in place unless a subclass redefines it.
        if _OFF_CONTEXT_TAG >= 0 and _tag_in_slot(ctx):
            found = cassette_slot_get(ctx, _OFF_CONTEXT_TAG)
            if found is NULL:
                return None
            tag_ = <object>found
        else:
            tag_ = ctx.tag
        if type(tag_) is _tg_tag_type:
            return tag_
    return None


cdef inline object _types_of(object tag_):
    """The dict of tagged types of a ``Tag`` (exactly a Tag)."""
    return _slot(tag_, _OFF_TAG_TYPES, "_types")


cdef inline bint _tagged_by(object x, object tag_):
    return _is_tagged(x) and _tag_of(x) is tag_


# A builtin function, not a Cython function: calls of it specialize.
@cython.binding(False)
def untag(x, ctx):
    """The value ``x`` wraps if it is tagged w.r.t. ``ctx``, else ``x``."""
    tag_ = _api_tag(ctx)
    if tag_ is None:
        return _tg_slow_untag(x, ctx)
    if _tagged_by(x, tag_):
        return _value_of(x)
    return x


# A builtin function, not a Cython function: calls of it specialize.
@cython.binding(False)
def metadata(x, ctx):
    """The metadata ``x`` carries w.r.t. ``ctx`` (``NoMetaData`` if none)."""
    tag_ = _api_tag(ctx)
    if tag_ is None:
        return _tg_slow_metadata(x, ctx)
    if _tagged_by(x, tag_):
        return _data_of(x)
    return _tg_no_data


# A builtin function, not a Cython function: calls of it specialize.
@cython.binding(False)
def istagged(x, ctx):
    """Whether ``x`` is tagged w.r.t. ``ctx``."""
    tag_ = _api_tag(ctx)
    if tag_ is None:
        return _tg_slow_istagged(x, ctx)
    return _tagged_by(x, tag_)


# The last answer found in the allowed-metadata cache: a tool tags values of
# one primal type for one context class, again and again.
cdef object _last_context_type = None, _last_primal_type = None, _last_allowed = None
cdef Py_ssize_t _last_allowed_generation = -2


cdef inline object _allowed_metadata(object context_type, object primal_type):
    """The cached ``metadatatype`` answer for these types, or None."""
    global _last_context_type, _last_primal_type, _last_allowed, _last_allowed_generation
    if (context_type is _last_context_type and primal_type is _last_primal_type
            and _last_allowed_generation == _generation):
        return _last_allowed
    allowed = _tg_allowed.get((context_type, primal_type))
    if allowed is not None:
        _last_context_type, _last_primal_type, _last_allowed = context_type, primal_type, allowed
        _last_allowed_generation = _generation
    return allowed


# A builtin function, not a Cython function: calls of it specialize.
@cython.binding(False)
def tag(value, ctx, metadata=NoMetaData):
    """``value`` tagged w.r.t. ``ctx``, carrying ``metadata``."""
    tag_ = _api_tag(ctx)
    primal_type = type(value)
    if tag_ is None or _is_tagged(value):        # the slow path tags tagged values
        return _tg_slow_tag(value, ctx, metadata)
    if metadata is not _tg_no_data:
        allowed = _allowed_metadata(type(ctx), primal_type)
        if allowed is None or type(metadata) is not allowed:
            return _tg_slow_tag(value, ctx, metadata)
    made = _made_tagged_type(tag_, primal_type)
    if made is None:
        return _tg_slow_tag(value, ctx, metadata)
    return _new_tagged(made, value, tag_, metadata)
