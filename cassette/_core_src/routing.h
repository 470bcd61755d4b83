/* Routing: the trampoline that makes a Python function the interpreter
   calls on behalf of rewritten code run as an operation of that code's
   runtime, the barrier of handlers, and the routing of what primitives are
   handed (their arguments, the sys hooks). */

#ifndef CASSETTE_CORE_ROUTING_H
#define CASSETTE_CORE_ROUTING_H

#include "compat.h"
#include "budget.h"

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

/* This thread's barrier and the handler being called (see
   cassette_set_handler), together: one thread-local lookup for both. */
typedef struct {
    void *barrier;
    void *handler;
} cassette_calling_state;
static CASSETTE_THREAD_LOCAL cassette_calling_state cassette_calling = {NULL, NULL};
static PyTypeObject *cassette_runtime_type = NULL;
/* The interpreter's own vectorcall entry of Python functions (read
   from a function at install: 3.13 no longer exports its name). */
static vectorcallfunc cassette_function_vectorcall = NULL;
static PyObject *cassette_acting_codes = NULL;
static PyObject *(*cassette_redirect)(PyObject *, PyObject *, PyObject *const *,
                                      size_t, PyObject *) = NULL;

static inline void *cassette_set_barrier(void *frame) {
    void *previous = cassette_calling.barrier;
    cassette_calling.barrier = frame;
    return previous;
}

/* The handler a runtime is calling on this thread (borrowed; compared
   only): the escape counter tells a handler's first frame by it. */
static inline void *cassette_set_handler(void *handler) {
    void *previous = cassette_calling.handler;
    cassette_calling.handler = handler;
    return previous;
}

/* handler(*stack[:n], **kwargs) (kwargs may be NULL) called as a handler:
   noted as the handler being called, the running frame the barrier, its
   own frame credited (budget.h), all undone when it returns or raises. */
static inline PyObject *cassette_handler_call(PyObject *handler, PyObject *const *stack,
                                              size_t n, PyObject *kwargs) {
    cassette_calling_state *calling = &cassette_calling;
    cassette_calling_state before = *calling;
    calling->handler = handler;
    calling->barrier = cassette_current_frame();
    int credit = cassette_handler_credit(handler);
    PyObject *result = kwargs == NULL ? PyObject_Vectorcall(handler, stack, n, NULL)
                                      : PyObject_VectorcallDict(handler, stack, n, kwargs);
    cassette_credit_python_frames(-credit);
    *calling = before;
    return result;
}

/* Cassette's own work done for the program: helper(first) or
   helper(first, second), with frames lent for it (budget.h), the running
   frame the barrier meanwhile: nothing it calls is an operation of the
   program — not even a helper that is itself a routed function (a
   program may replace one of cassette's functions with its own), which
   would otherwise be redirected to the runtime that called it, and so
   forever.  Never inlined: it runs on the slow paths (a cache miss) of
   functions whose fast paths must stay small. */
static Py_NO_INLINE PyObject *cassette_own_call(PyObject *helper, PyObject *first,
                                                PyObject *second, size_t nargs) {
    PyObject *args[2] = {first, second};
    void *barrier_before = cassette_set_barrier(cassette_current_frame());
    PyObject *result = cassette_lent_call(helper, args, nargs);
    cassette_set_barrier(barrier_before);
    return result;
}

/* Is `frame` (a frame object) the barrier: the frame whose calls,
   while a handler is being called, are the handler's?  The escape
   counter asks. */
static int cassette_is_barrier(PyObject *frame) {
    void *barrier = cassette_calling.barrier;
    return barrier != NULL && PyFrame_Check(frame) && cassette_frame_of(frame) == barrier;
}

static PyObject *cassette_handler_being_called(void) {
    void *handler_ = cassette_calling.handler;
    PyObject *handler = handler_ == NULL ? Py_None : (PyObject *)handler_;
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

/* The referents of `obj` its garbage-collector traversal visits that are
   alive (a new list).  gc.get_referents hands out whatever a traversal
   visits, and some traversals visit objects that are not alive: 3.12's
   _asyncio module state visits its free list of future iterators
   (gh-122695, fixed in 3.12.6).  Handed out, such an object's reference
   count goes from 0 to 1 and back, it is freed again, and the free list
   becomes a cycle that the next traversal of the module runs round for
   ever.  An object with no reference is left out here. */
static int cassette_visit_live(PyObject *obj, void *list) {
    if (obj == NULL || Py_REFCNT(obj) < 1) return 0;
    return PyList_Append((PyObject *)list, obj);
}

static PyObject *cassette_live_referents(PyObject *obj) {
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    if (PyObject_IS_GC(obj)) {
        traverseproc traverse = Py_TYPE(obj)->tp_traverse;
        if (traverse != NULL && traverse(obj, cassette_visit_live, list) != 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
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
    if (cassette_redirect != NULL && cassette_current_frame() != cassette_calling.barrier) {
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
    /* One of cassette's bodies (a program can reach them): it runs
       overdubbed already; redirected, its next call from C would rewrite
       the rewritten code (callables.runs_rewritten_code). */
    if (cassette_code_runtime((PyCodeObject *)f->func_code) != NULL) return 0;
    vectorcallfunc entry = cassette_function_entry(func);
    int routed = entry == cassette_trampoline;
    if (!routed && (entry == NULL || entry != cassette_function_vectorcall))
        return 0;
    if (protocol) {
        int done = cassette_route_protocol_function(f, cassette_trampoline, routed);
        if (done >= 0) return done;
    }
    if (routed) return 0;
    cassette_set_function_entry(func, cassette_trampoline);
    return 1;
}

static inline int cassette_is_routed(PyObject *func) {
    return Py_TYPE(func) == &PyFunction_Type
        && cassette_function_entry(func) == cassette_trampoline;
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
    cassette_function_vectorcall = cassette_function_entry(sample_function);
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
#define CASSETTE_SEEN_BITS 8
#define CASSETTE_SEEN_SETS (1 << CASSETTE_SEEN_BITS)
typedef struct { PyTypeObject *type; unsigned int version; int holder; } CassetteSeen;
/* Two ways per set, the most recently seen first: a program's hot classes
   whose addresses share a set would otherwise evict each other on every
   call and send each call to route_argument. */
static CassetteSeen cassette_seen[CASSETTE_SEEN_SETS][2];
static PyObject *cassette_route_argument = NULL;   /* routing.route_argument */
static PyTypeObject *cassette_partial_type = NULL;
static PyTypeObject *cassette_method_wrapper_type = NULL;

static inline CassetteSeen *cassette_seen_set(PyTypeObject *tp) {
    return cassette_seen[cassette_address_slot(tp, CASSETTE_SEEN_BITS)];
}

/* Classes whose C methods call the Python callables an instance holds as
   attributes, not arguments (a pickler's dispatch_table): routing.HOLDERS,
   installed as their modules appear.  An instance of one (or of a
   subclass) handed to a primitive has what it holds routed, each time:
   routing.route_holder. */
#define CASSETTE_HOLDER_TYPES 8
static PyTypeObject *cassette_holder_types[CASSETTE_HOLDER_TYPES];
static PyObject *cassette_route_holder = NULL;    /* routing.route_holder */

static int cassette_is_holder(PyTypeObject *tp) {
    for (int i = 0; i < CASSETTE_HOLDER_TYPES && cassette_holder_types[i] != NULL; i++)
        if (PyType_IsSubtype(tp, cassette_holder_types[i]))
            return 1;
    return 0;
}

/* For a class that is not a heap type: only the holders themselves. */
static inline int cassette_is_static_holder(PyTypeObject *tp) {
    for (int i = 0; i < CASSETTE_HOLDER_TYPES && cassette_holder_types[i] != NULL; i++)
        if (tp == cassette_holder_types[i])
            return 1;
    return 0;
}

/* 0: not seen; 1: this version seen; 2: seen, and a holder. */
static inline int cassette_class_seen(PyTypeObject *tp) {
    unsigned int version = cassette_class_version(tp);
    if (version == 0) return 0;
    CassetteSeen *set = cassette_seen_set(tp);
    for (int way = 0; way < 2; way++)
        if (set[way].type == tp && set[way].version == version)
            return 1 + set[way].holder;
    return 0;
}

/* Note this version of tp seen; whether it is a holder (0 when it could
   not be noted). */
static inline int cassette_class_saw(PyTypeObject *tp) {
    unsigned int version = cassette_class_version(tp);
    if (version == 0)
        return 0;
    CassetteSeen *set = cassette_seen_set(tp);
    if (set[0].type != tp) set[1] = set[0];
    set[0].type = tp;
    set[0].version = version;
    set[0].holder = cassette_is_holder(tp);
    return set[0].holder;
}

/* Replace the holder classes with those of tuple ``types``; the classes
   seen are forgotten (their holder bits were computed without them). */
static int cassette_install_holders(PyObject *types) {
    if (!PyTuple_Check(types) || PyTuple_GET_SIZE(types) > CASSETTE_HOLDER_TYPES) {
        PyErr_SetString(PyExc_ValueError, "holders: a tuple of at most 8 classes");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++)
        if (!PyType_Check(PyTuple_GET_ITEM(types, i))) {
            PyErr_SetString(PyExc_TypeError, "holders: a tuple of classes");
            return -1;
        }
    for (int i = 0; i < CASSETTE_HOLDER_TYPES; i++) {
        PyObject *type = i < PyTuple_GET_SIZE(types) ? Py_NewRef(PyTuple_GET_ITEM(types, i)) : NULL;
        Py_XSETREF(cassette_holder_types[i], (PyTypeObject *)type);
    }
    memset(cassette_seen, 0, sizeof(cassette_seen));
    return 0;
}

/* Route what holder instance ``obj`` holds; whatever goes wrong there is
   the library's business, not the program's. */
static void cassette_route_held(PyObject *obj) {
    if (cassette_route_holder == NULL) return;
    PyObject *done = PyObject_CallOneArg(cassette_route_holder, obj);
    if (done == NULL) PyErr_Clear(); else Py_DECREF(done);
}

/* The code objects of the functions last routed as arguments, by a hash
   of their address (strong references: an address is not reused while
   its code is kept).  Another function of one of them -- a lambda or a
   closure made again -- is routed the same way (cassette.routing's
   _route_function: the trampoline as its entry) without asking
   cassette.routing, when it holds no __annotate__ that would need
   routing too. */
#define CASSETTE_ROUTED_CODES_BITS 6
static PyObject *cassette_routed_codes[1 << CASSETTE_ROUTED_CODES_BITS];

static inline PyObject **cassette_routed_code_slot(PyObject *code) {
    return &cassette_routed_codes[cassette_address_slot(code, CASSETTE_ROUTED_CODES_BITS)];
}

/* How deep a chain of method-wrappers (f.__call__.__call__ …) is looked
   through for what it finally calls: routing.WRAPPER_DEPTH, installed
   with the rest of argument routing. */
static int cassette_wrapper_depth = 0;

/* 0, or -1 with an exception set. */
static int cassette_route_one(PyObject *arg) {
    if (Py_TYPE(arg) == cassette_method_wrapper_type) {
        /* f.__call__ calls f: route what the chain ends at. */
        for (int depth = 0; depth < cassette_wrapper_depth; depth++) {
            arg = cassette_method_wrapper_self(arg);        /* (borrowed) */
            if (arg == NULL || Py_TYPE(arg) != cassette_method_wrapper_type) break;
        }
        if (arg == NULL || Py_TYPE(arg) == cassette_method_wrapper_type) return 0;
    }
    PyTypeObject *tp = Py_TYPE(arg);
    PyTypeObject *cls = NULL;   /* the class to note as seen */
    PyObject **routed_code = NULL;
    if (tp == &PyFunction_Type) {
        if (cassette_function_entry(arg) != cassette_function_vectorcall)
            return 0;
        PyObject *code = ((PyFunctionObject *)arg)->func_code;
        if (cassette_code_runtime((PyCodeObject *)code) != NULL)
            return 0;       /* a body: see cassette_route_function */
        routed_code = cassette_routed_code_slot(code);
        if (*routed_code == code && !cassette_function_has_annotate(arg)) {
            cassette_set_function_entry(arg, cassette_trampoline);
            return 0;
        }
    } else if (tp == &PyMethod_Type) {
        PyObject *func = PyMethod_GET_FUNCTION(arg);
        PyObject *self = PyMethod_GET_SELF(arg);
        if ((Py_TYPE(func) != &PyFunction_Type
                || cassette_function_entry(func) != cassette_function_vectorcall)
                && (!(Py_TYPE(self)->tp_flags & Py_TPFLAGS_HEAPTYPE)
                    || cassette_class_seen(Py_TYPE(self))))
            return 0;
    } else if (PyType_Check(arg)) {
        cls = (PyTypeObject *)arg;
        if (!(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || cassette_class_seen(cls)) return 0;
    } else if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        int seen = cassette_class_seen(tp);
        if (seen == 2) cassette_route_held(arg);
        if (seen) return 0;
        cls = tp;
    } else if (tp != cassette_partial_type) {
        if (cassette_is_static_holder(tp)) cassette_route_held(arg);
        return 0;
    }
    if (cassette_route_argument == NULL) return 0;
    /* Routing is the library's business: whatever goes wrong in it
       (memory) must not become the program's exception. */
    PyObject *done = PyObject_CallOneArg(cassette_route_argument, arg);
    if (done == NULL) PyErr_Clear(); else Py_DECREF(done);
    if (cls != NULL && cassette_class_saw(cls) && cls == tp)
        cassette_route_held(arg);
    if (routed_code != NULL && cassette_function_entry(arg) == cassette_trampoline
            && !cassette_function_has_annotate(arg))
        Py_XSETREF(*routed_code, Py_NewRef(((PyFunctionObject *)arg)->func_code));
    return 0;
}

static int cassette_route_arguments(PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    for (Py_ssize_t i = 0; i < total; i++)
        if (cassette_route_one(args[i]) < 0) return -1;
    return 0;
}

/* Routing what a compiled module fetches while it loads.  An extension
   module's initialisation (its exec slot) fetches Python functions from
   other modules -- `from abc import abstractmethod` in Cython,
   numpy's cached `numpy.dtypes._add_dtype_helper` -- and calls them
   from C then or later.  While such a module loads on behalf of
   overdubbed code (routing.begin_extension_load; also breakpoint(),
   which fetches pdb.set_trace), ModuleType's getattro is
   cassette_module_getattro, which routes what module attribute reads
   return; the plain one is put back when the last such call ends.  A
   subclass of ModuleType made meanwhile inherits the routing one: it
   only forwards once no call is under way. */
static getattrofunc cassette_module_getattro_plain = NULL;
static int cassette_module_fetch_calls = 0;     /* such calls under way */
static int cassette_routing_fetch = 0;          /* inside a fetch's routing */

static PyObject *cassette_module_getattro(PyObject *module, PyObject *name) {
    PyObject *found = cassette_module_getattro_plain(module, name);
    if (found != NULL && cassette_module_fetch_calls > 0 && !cassette_routing_fetch) {
        cassette_routing_fetch = 1;
        /* Routing is the library's business: nothing of it reaches the
           program. */
        if (cassette_route_one(found) < 0) PyErr_Clear();
        cassette_routing_fetch = 0;
    }
    return found;
}

/* Begin (`begin` true) or end a call whose module fetches are routed. */
static void cassette_watch_module_fetches(int begin) {
    if (begin) {
        if (cassette_module_fetch_calls++ == 0
                && PyModule_Type.tp_getattro != cassette_module_getattro) {
            cassette_module_getattro_plain = PyModule_Type.tp_getattro;
            PyModule_Type.tp_getattro = cassette_module_getattro;
        }
    } else if (cassette_module_fetch_calls > 0 && --cassette_module_fetch_calls == 0
               && PyModule_Type.tp_getattro == cassette_module_getattro) {
        PyModule_Type.tp_getattro = cassette_module_getattro_plain;
    }
}

static PyObject *cassette_route_global = NULL;      /* routing.route_global */

/* An unpickler is about to fetch the global `module`.`name` and call it
   from C (the reconstructor a __reduce__ returned, a class): when that is
   done on behalf of overdubbed code (pickle.loads called by it), the
   global is routed first (routing.route_global). */
static void cassette_audit_find_class(PyObject *args) {
    if (cassette_route_global == NULL || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) != 2
            || cassette_current_frame() == cassette_calling.barrier)
        return;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *runtime = cassette_running_runtime();
    if (runtime != NULL) {
        Py_DECREF(runtime);
        PyObject *done = PyObject_Call(cassette_route_global, args, NULL);
        Py_XDECREF(done);
    }
    /* Routing is the library's business: nothing of it reaches the program. */
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

/* The sys hooks the interpreter calls from C (sys.unraisablehook,
   sys.excepthook) may have been installed by overdubbed code a moment
   ago, by a plain store that no site saw: the audit event raised just
   before the call names the hook, which is routed then. */
static int cassette_audit(const char *event, PyObject *args, void *data) {
    (void)data;
    if (event[0] == 'p' && strcmp(event, "pickle.find_class") == 0) {
        cassette_audit_find_class(args);
        return 0;
    }
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
                                              PyObject *route_holder,
                                              PyObject *partial_type,
                                              PyObject *method_wrapper_type,
                                              int wrapper_depth) {
    Py_XINCREF(route_argument);
    cassette_route_argument = route_argument;
    Py_XINCREF(route_holder);
    cassette_route_holder = route_holder;
    cassette_wrapper_depth = wrapper_depth;
    cassette_partial_type = (PyTypeObject *)partial_type;
    cassette_method_wrapper_type = (PyTypeObject *)method_wrapper_type;
    PySys_AddAuditHook(cassette_audit, NULL);
}

/* routing.route_global, called for the audit event pickle.find_class. */
static void cassette_install_global_routing(PyObject *route_global) {
    Py_XINCREF(route_global);
    Py_XSETREF(cassette_route_global, route_global);
}

#endif  /* CASSETTE_CORE_ROUTING_H */
