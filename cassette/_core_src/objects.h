/* The small callable objects rewritten code holds as constants: DropSelf,
   Primitive and the builtin slots of operation and propagation sites, each
   called by vectorcall; and the switch that gives the core's Cython classes
   a vectorcall entry. */

#ifndef CASSETTE_CORE_OBJECTS_H
#define CASSETTE_CORE_OBJECTS_H

#include "compat.h"
#include "budget.h"
#include "routing.h"

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

/* Give a class of this module a vectorcall entry: instances keep the
   function at `offset` (NULL: the class's tp_call is used).  A
   callable object called through tp_call costs the interpreter a
   recursion level per call (3.11: of the Python limit; 3.12+: of the C
   limit, which 3.13 also spends on every frame the interpreter enters
   from C); one called through vectorcall costs none, as a Python
   function inlined by the interpreter costs none. */
static void cassette_enable_vectorcall(PyObject *type, Py_ssize_t offset) {
    cassette_set_type_vectorcall((PyTypeObject *)type, offset);
}

/* A vectorcall entry that holds its arguments while it runs: the one of
   Hooked callees, whose hooks and body all see the same arguments.  A
   Python function holds its arguments in its frame; the interpreter may
   call with references it does not own -- a weak reference's callback
   gets one, and may drop its last owner (importlib's module locks do) --
   so an entry that hands its arguments to several calls must hold them
   itself.  Written in C: a Cython try/finally would normalize a pending
   exception on its way out, which 3.11 instantiates lazily. */
static vectorcallfunc cassette_held_entry = NULL;

static void cassette_install_held_entry(void *entry) {
    cassette_held_entry = (vectorcallfunc)entry;
}

static PyObject *cassette_holding_vectorcall(PyObject *callable, PyObject *const *args,
                                             size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    for (Py_ssize_t i = 0; i < n; i++) Py_INCREF(args[i]);
    PyObject *result = cassette_held_entry(callable, args, nargsf, kwnames);
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(args[i]);
    return result;
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

static inline int cassette_is_primitive(PyObject *obj) {
    return Py_IS_TYPE(obj, &CassettePrimitiveType);
}

/* What a primitive calls (borrowed). */
static inline PyObject *cassette_primitive_target(PyObject *primitive) {
    return ((CassettePrimitive *)primitive)->target;
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

/* The runtime's busiest slot, ``resolve``, bound to the runtime, and a
   method site's lookup, bound to the site (MethodSite): METH_O builtins,
   for which the interpreter's call instruction specializes, where a
   Cython method is called generically. */
enum { CASSETTE_SLOT_RESOLVE, CASSETTE_SLOT_METHOD_OF };

static PyMethodDef cassette_runtime_slot_defs[] = {
    {"resolve", NULL, METH_O, "What a call site calls instead of its callee."},
    {"method_of", NULL, METH_O,
     "For ``obj.name(...)`` with the site's name: M such that ``M(obj, ...)`` "
     "makes the call."},
};

static void cassette_install_runtime_slots(void *resolve, void *method_of) {
    cassette_runtime_slot_defs[CASSETTE_SLOT_RESOLVE].ml_meth =
        (PyCFunction)(void(*)(void))resolve;
    cassette_runtime_slot_defs[CASSETTE_SLOT_METHOD_OF].ml_meth =
        (PyCFunction)(void(*)(void))method_of;
}

static PyObject *cassette_runtime_slot(int which, PyObject *runtime) {
    return PyCFunction_NewEx(&cassette_runtime_slot_defs[which], runtime, NULL);
}

/* The tagging API's common case (``cassette.tag``, ``untag``, ``istagged``,
   ``metadata``): builtins whose C functions are the core's entries
   (``cassette_tagging_api``), called with their arguments in place — the
   interpreter's call instruction specializes for them — and which hand
   keyword calls and every uncommon case to the Python definitions. */
enum { CASSETTE_API_TAG, CASSETTE_API_UNTAG, CASSETTE_API_ISTAGGED, CASSETTE_API_METADATA };

static PyMethodDef cassette_api_defs[] = {
    {"tag", NULL, METH_FASTCALL | METH_KEYWORDS,
     "tag(value, ctx, metadata=NoMetaData)\n--\n\n"
     "``value`` tagged w.r.t. ``ctx``, carrying ``metadata``."},
    {"untag", NULL, METH_FASTCALL | METH_KEYWORDS,
     "untag(x, ctx)\n--\n\nThe value ``x`` wraps if it is tagged w.r.t. ``ctx``, else ``x``."},
    {"istagged", NULL, METH_FASTCALL | METH_KEYWORDS,
     "istagged(x, ctx)\n--\n\nWhether ``x`` is tagged w.r.t. ``ctx``."},
    {"metadata", NULL, METH_FASTCALL | METH_KEYWORDS,
     "metadata(x, ctx)\n--\n\nThe metadata ``x`` carries w.r.t. ``ctx`` "
     "(``NoMetaData`` if none)."},
};

/* Builtin ``which`` of the API (its C function ``entry``), its
   ``__module__`` being ``module``. */
static PyObject *cassette_tagging_api(int which, void *entry, PyObject *module) {
    cassette_api_defs[which].ml_meth = (PyCFunction)(void(*)(void))entry;
    return PyCFunction_NewEx(&cassette_api_defs[which], NULL, module);
}

/* A new function running `code` with everything else of function `f`: its
   globals, names, defaults, keyword defaults and closure — what
   ``engine.function_running`` makes, set the way the interpreter's own
   function constructor sets them.  `code`'s free variables are `f`'s. */
static PyObject *cassette_function_running(PyObject *code, PyObject *f) {
    PyFunctionObject *source = (PyFunctionObject *)f;
    PyObject *made = PyFunction_NewWithQualName(code, source->func_globals,
                                                source->func_qualname);
    if (made == NULL) return NULL;
    PyFunctionObject *clone = (PyFunctionObject *)made;
    Py_SETREF(clone->func_name, Py_NewRef(source->func_name));
    Py_XSETREF(clone->func_defaults, Py_XNewRef(source->func_defaults));
    Py_XSETREF(clone->func_kwdefaults, Py_XNewRef(source->func_kwdefaults));
    Py_XSETREF(clone->func_closure, Py_XNewRef(source->func_closure));
    cassette_version_new_function(clone);
    return made;
}

#endif  /* CASSETTE_CORE_OBJECTS_H */
