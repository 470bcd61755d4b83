/* What the Cython core (cassette/_core.pyx and the headers beside this
   one) reads or changes inside the interpreter: frames, recursion
   counters, function versions, vectorcall entries, type version tags and
   the private lookups the interpreter's own instructions use.  Each is
   written once per supported CPython release, in an explicit branch.  Any
   other release stops the build here: supporting it is visible work — a
   branch in this file (and a bytecode layer in cassette/versions/) — never
   a silent fallthrough to another release's internals.  Nothing here knows
   of contexts, hooks or runtimes. */

#ifndef CASSETTE_COMPAT_H
#define CASSETTE_COMPAT_H

#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define CASSETTE_PY 311
#elif PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
#define CASSETTE_PY 312
#elif PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000
#define CASSETTE_PY 313
#elif PY_VERSION_HEX >= 0x030E0000 && PY_VERSION_HEX < 0x030F0000
#define CASSETTE_PY 314
#elif PY_VERSION_HEX >= 0x030F0000 && PY_VERSION_HEX < 0x03100000
#define CASSETTE_PY 315
#else
#error "cassette/_core_src/compat.h has no branch for this CPython release (supported: 3.11 to 3.15)"
#endif


/* -- addresses --------------------------------------------------------------- */

/* A slot of a table of ``1 << bits`` for an object's address: Fibonacci
   hashing (objects of one size are allocated a fixed distance apart, so
   their low bits alone would crowd a few slots). */
static inline Py_ssize_t cassette_address_slot(const void *pointer, int bits) {
    return (Py_ssize_t)((((uint64_t)(uintptr_t)pointer >> 4) * UINT64_C(0x9E3779B97F4A7C15))
                        >> (64 - bits));
}


/* -- attribute lookup ------------------------------------------------------ */

/* A name on a type's MRO without calling anything (borrowed, or NULL). */
static inline PyObject *cassette_type_lookup(PyTypeObject *type, PyObject *name) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return _PyType_Lookup(type, name);
#endif
}

/* The attribute lookup LOAD_METHOD / LOAD_ATTR-for-a-call does.  Returns 1
   and an unbound method (to be called with the object first), 0 and the
   attribute, or -1 with an exception set.  (3.13 no longer exports
   _PyObject_GetMethod: the bound attribute, always.) */
static inline int cassette_get_method(PyObject *obj, PyObject *name, PyObject **out) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    int unbound = _PyObject_GetMethod(obj, name, out);
    if (*out == NULL) return -1;
    return unbound;
#elif CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    *out = PyObject_GetAttr(obj, name);
    return *out == NULL ? -1 : 0;
#endif
}


/* Whether an instance holds an attribute of its own under a name: what a
   cached method lookup must rule out before it reuses what the class
   gave.  ``cassette_learn_own_attributes`` learns, for a class and a name,
   where instances of the class could hold it (nothing, unless the class
   looks attributes up generically); ``cassette_may_hold_own``
   then answers for one instance: 0 when it certainly holds no attribute of
   that name in its ``__dict__``, 1 when it may (the caller looks the
   attribute up as the interpreter does).

   3.11 and 3.12 keep most instances' attributes as values beside keys the
   class shares (``ht_cached_keys``).  Shared keys only ever grow (a
   deleted attribute leaves its key), so a name absent from the first
   `entries` keys is absent while their count holds; a name among them is
   held when that instance's value for it is set.  3.13+ have method loads
   of their own (Layer313 keeps LOAD_ATTR), and never learn. */
typedef struct {
    int known;            /* 0: nothing learned; the answer is always 1 */
    int shared;           /* instances keep values beside shared keys */
    void *keys;           /* those keys, when learned */
    Py_ssize_t entries;   /* how many keys they had */
    Py_ssize_t index;     /* where the name is among them, or -1 */
} cassette_own_attributes;

#if CASSETTE_PY == 311 || CASSETTE_PY == 312
/* Internal/pycore_dict.h's struct _dictkeysobject and PyDictUnicodeEntry,
   the same in 3.11 and 3.12. */
typedef struct {
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} cassette_dict_keys;

typedef struct {
    PyObject *me_key;
    PyObject *me_value;
} cassette_unicode_entry;

/* The instance's values beside its class's shared keys (NULL: none) and
   its materialized __dict__ (NULL: none): internal/pycore_object.h's
   _PyObject_ValuesPointer/_PyObject_ManagedDictPointer (3.11) and
   _PyObject_DictOrValuesPointer (3.12). */
static inline void cassette_managed_attributes(PyObject *obj, PyObject ***values, PyObject **dict) {
#if CASSETTE_PY == 311
    *values = (PyObject **)((void **)obj)[-4];
    *dict = ((PyObject **)obj)[-3];
#else
    char *tagged = ((char **)obj)[-3];
    if ((uintptr_t)tagged & 1) {
        *values = (PyObject **)(tagged + 1);
        *dict = NULL;
    } else {
        *values = NULL;
        *dict = (PyObject *)tagged;
    }
#endif
}
#endif

static void cassette_learn_own_attributes(PyTypeObject *tp, PyObject *name,
                                          cassette_own_attributes *own) {
    own->known = 0;
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    if (!PyUnicode_CheckExact(name) || tp->tp_getattro != PyObject_GenericGetAttr) return;
    if (!(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT)) {
        if (tp->tp_dictoffset < 0) return;
        own->shared = 0;
        own->known = 1;
        return;
    }
    cassette_dict_keys *keys = (cassette_dict_keys *)((PyHeapTypeObject *)tp)->ht_cached_keys;
    if (keys == NULL || keys->dk_kind == 0) return;
    cassette_unicode_entry *entries = (cassette_unicode_entry *)(
        &keys->dk_indices[(size_t)1 << keys->dk_log2_index_bytes]);
    own->index = -1;
    for (Py_ssize_t i = 0; i < keys->dk_nentries; i++) {
        PyObject *key = entries[i].me_key;
        if (key == name || (key != NULL && PyUnicode_CheckExact(key)
                            && PyObject_Hash(key) == PyObject_Hash(name)
                            && PyUnicode_Compare(key, name) == 0)) {
            own->index = i;
            break;
        }
    }
    own->shared = 1;
    own->keys = keys;
    own->entries = keys->dk_nentries;
    own->known = 1;
#else
    (void)tp; (void)name;
#endif
}

/* Whether `dict`, an instance's __dict__, may hold `name`: 1 unless a
   lookup says it does not (an error is cleared: the caller's own lookup
   meets it again). */
static inline int cassette_dict_may_hold(PyObject *dict, PyObject *name) {
    if (dict == NULL) return 0;
    if (PyDict_GetItemWithError(dict, name) != NULL) return 1;
    if (PyErr_Occurred()) { PyErr_Clear(); return 1; }
    return 0;
}

static inline int cassette_may_hold_own(PyObject *obj, PyObject *name,
                                        const cassette_own_attributes *own) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    if (!own->known) return 1;
    PyTypeObject *tp = Py_TYPE(obj);
    if (!own->shared) {
        if (tp->tp_dictoffset == 0) return 0;
        return cassette_dict_may_hold(*(PyObject **)((char *)obj + tp->tp_dictoffset), name);
    }
    PyObject **values, *dict;
    cassette_managed_attributes(obj, &values, &dict);
    if (values == NULL) return cassette_dict_may_hold(dict, name);
    cassette_dict_keys *keys = (cassette_dict_keys *)((PyHeapTypeObject *)tp)->ht_cached_keys;
    if ((void *)keys != own->keys || keys->dk_nentries != own->entries) return 1;
    return own->index >= 0 && values[own->index] != NULL;
#else
    (void)obj; (void)name; (void)own;
    return 1;
#endif
}


/* The slot wrapper a method-wrapper (``obj.__init__`` of a C slot, what
   ``super().__init__`` gives) calls, and the object it is bound to, both
   borrowed: Objects/descrobject.c's wrapperobject, the same in 3.11 to
   3.15. */
typedef struct {
    PyObject_HEAD
    PyObject *descr;
    PyObject *self;
} cassette_method_wrapper;

static inline PyObject *cassette_method_wrapper_descriptor(PyObject *wrapper) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return ((cassette_method_wrapper *)wrapper)->descr;
#endif
}

static inline PyObject *cassette_method_wrapper_self(PyObject *wrapper) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return ((cassette_method_wrapper *)wrapper)->self;
#endif
}


/* The object a weak reference refers to (borrowed: the weak reference
   does not own it, its other owners keep it alive), Py_None when it is
   dead, or NULL with an exception set.  (3.13 deprecates
   PyWeakref_GetObject for PyWeakref_GetRef.) */
static inline PyObject *cassette_weakref_target(PyObject *ref) {
    /* (3.15 removes PyWeakref_GetObject.) */
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    return PyWeakref_GetObject(ref);
#elif CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    PyObject *target;
    int alive = PyWeakref_GetRef(ref, &target);
    if (alive < 0) return NULL;
    if (alive == 0) return Py_None;
    Py_DECREF(target);
    return target;
#endif
}


/* -- frames ---------------------------------------------------------------- */

/* The running interpreter frame of this thread (an opaque pointer,
   compared only). */
static inline void *cassette_current_frame(void) {
    PyThreadState *ts = PyThreadState_Get();
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    return (void *)ts->cframe->current_frame;
#elif CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return (void *)ts->current_frame;
#endif
}

/* The interpreter frame a frame object stands for (opaque, compared with
   cassette_current_frame).  A frame object points to it right after
   f_back in 3.11 to 3.13's struct _frame. */
typedef struct {
    PyObject_HEAD
    PyObject *f_back;
    void *f_frame;
} cassette_frame_object_head;

static inline void *cassette_frame_of(PyObject *frame_object) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return ((cassette_frame_object_head *)frame_object)->f_frame;
#endif
}


/* -- recursion counters ---------------------------------------------------- */

/* count more Python frames for the running thread (fewer, when negative):
   the budget sys.getrecursionlimit() sets (3.11 counts calls of C
   functions against it too).  Never fails, and other threads keep their
   budgets. */
static inline void cassette_credit_python_frames(int count) {
#if CASSETTE_PY == 311
    PyThreadState_Get()->recursion_remaining += count;
#elif CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    PyThreadState_Get()->py_recursion_remaining += count;
#endif
}

/* count more calls of C functions (fewer, when negative) on the counter
   that counts them: 3.11's only counter, 3.12's C limit.  3.13 counts
   entries into the interpreter from C instead, not calls of C functions,
   and 3.14 and 3.15 measure the C stack itself: nothing to credit. */
static inline void cassette_credit_c_calls(int count) {
#if CASSETTE_PY == 311
    PyThreadState_Get()->recursion_remaining += count;
#elif CASSETTE_PY == 312
    PyThreadState_Get()->c_recursion_remaining += count;
#elif CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    (void)count;
#endif
}

/* 1 where a call site the interpreter has specialized calls a fast-call C
   function (a METH_FASTCALL builtin, `len`, a METH_FASTCALL method
   descriptor without keywords) without counting it, while the same call
   made through the C API counts it. */
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
#define CASSETTE_SPECIALIZED_C_CALLS_UNCOUNTED 1
#elif CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
#define CASSETTE_SPECIALIZED_C_CALLS_UNCOUNTED 0
#endif

/* The level a Python function called from C (by vectorcall) costs the C
   limit, where a call from Python code, inlined, costs none: 1 on 3.12
   (credited back by the core); 0 on 3.11, which has no C limit.  3.13
   counts 2 units against a C limit large enough for both, and that limit
   is what keeps the C stack from overflowing: the core credits nothing
   there, so this says 0; 3.14 and 3.15 have no C counter, they compare
   the C stack pointer with the thread's stack bounds. */
#if CASSETTE_PY == 312
#define CASSETTE_C_ENTRY_CREDIT 1
#elif CASSETTE_PY == 311 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
#define CASSETTE_C_ENTRY_CREDIT 0
#endif


/* -- function versions ----------------------------------------------------- */

/* Make the interpreter call Python function `f` through `entry` (its
   vectorcall slot) also where a protocol specialization would push its
   frame directly — the specializations of a special method (`obj[i]`'s
   __getitem__), a property accessor, 3.13's __init__.  `routed`: `entry`
   is already its vectorcall.  Returns 1 when done now, 0 when it was done
   before, -1 when only the vectorcall slot needs setting (the caller
   does that).

   3.12 to 3.15 retire the function's version when the vectorcall slot is
   set through the API, which turns those specializations off.  3.11
   reassigns a retired version, but inlines a __getitem__ only when its
   version fits in 16 bits: the function gets a version of its own above
   that range (counted down from the top, far from the interpreter's own,
   which count up from 1), so calls of it still specialize and its
   __getitem__ is never inlined. */
#if CASSETTE_PY == 311
static uint32_t cassette_next_protocol_version = 0xFFFFFFFFu;
#endif

static inline int cassette_route_protocol_function(PyFunctionObject *f, vectorcallfunc entry,
                                                   int routed) {
#if CASSETTE_PY == 311
    if (f->func_version > 0xFFFFu) return -1;
    f->func_version = cassette_next_protocol_version--;
    f->vectorcall = entry;
    (void)routed;
    return 1;
#elif CASSETTE_PY == 312 || CASSETTE_PY == 313
    if (routed && f->func_version == 0) return 0;
    PyFunction_SetVectorcall(f, entry);
    return 1;
#elif CASSETTE_PY == 314 || CASSETTE_PY == 315
    /* A function gets its version once, when made; a retired version is
       FUNC_VERSION_CLEARED (1) and never valid again. */
    if (routed && f->func_version < 2) return 0;
    PyFunction_SetVectorcall(f, entry);
    return 1;
#endif
}


/* Give `f`, a function cassette has just made, the version the
   interpreter's specializations key calls on, as its own MAKE_FUNCTION
   gives every function it makes.  3.13 to 3.15 give none to a function
   made through the C API or the FunctionType constructor, and a call of a
   function without a version never specializes: every call of it pushes
   its frame through the generic path.  3.11 and 3.12 assign a version
   when a call first specializes. */
#if CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
PyAPI_FUNC(void) _PyFunction_SetVersion(PyFunctionObject *func, uint32_t version);
#endif

static inline void cassette_version_new_function(PyFunctionObject *f) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312
    (void)f;
#elif CASSETTE_PY == 313
    uint32_t version = ((PyCodeObject *)f->func_code)->co_version;
    if (f->func_version == 0 && version != 0) _PyFunction_SetVersion(f, version);
#elif CASSETTE_PY == 314 || CASSETTE_PY == 315
    /* Versions below 2 mean unset and retired. */
    uint32_t version = ((PyCodeObject *)f->func_code)->co_version;
    if (f->func_version == 0 && version >= 2) _PyFunction_SetVersion(f, version);
#endif
}


/* -- pinned attribute loads ------------------------------------------------ */

/* Releases whose specialized property load pushes a getter's frame without
   its vectorcall entry (3.14+) give Layer.attribute_load_pin at install:
   LOAD_ATTR's opcode, LOAD_ATTR_PROPERTY's, the opcodes that may stand
   where a LOAD_ATTR was compiled, and an adaptive counter value that never
   triggers.  Pinning a load keeps it generic for good: a generic load
   calls a property's getter through its vectorcall entry, which routing
   owns.  A code unit is two bytes, opcode then oparg, and a LOAD_ATTR's
   first cache entry (the next unit) is its adaptive counter; the
   interpreter writes both when it specializes. */
static int cassette_load_attr_opcode = -1;
static int cassette_load_attr_property_opcode = -1;
static uint16_t cassette_never_triggers = 0;
static unsigned char cassette_pinnable_opcodes[256];

static void cassette_install_attribute_load_pin(int load_attr, int property, int never) {
    cassette_load_attr_opcode = load_attr;
    cassette_load_attr_property_opcode = property;
    cassette_never_triggers = (uint16_t)never;
}

static void cassette_allow_pinning(int opcode) {
    if (opcode >= 0 && opcode < 256) cassette_pinnable_opcodes[opcode] = 1;
}

/* Pin the attribute load at code unit `unit` of `code`: 1 if done, 0 if
   pinning is not installed or that unit holds no LOAD_ATTR. */
static int cassette_pin_attribute_load(PyObject *code, Py_ssize_t unit) {
    if (cassette_load_attr_opcode < 0 || Py_TYPE(code) != &PyCode_Type) return 0;
    PyCodeObject *co = (PyCodeObject *)code;
    if (unit < 0 || unit + 1 >= Py_SIZE(co)) return 0;
    unsigned char *instr = (unsigned char *)co->co_code_adaptive + 2 * unit;
    if (!cassette_pinnable_opcodes[instr[0]]) return 0;
    if (instr[0] == cassette_load_attr_property_opcode)
        instr[0] = (unsigned char)cassette_load_attr_opcode;
    memcpy(instr + 2, &cassette_never_triggers, sizeof cassette_never_triggers);
    return 1;
}


/* -- vectorcall entries ---------------------------------------------------- */

/* The entry the interpreter calls a Python function through (its
   vectorcall slot), and replacing it: how routing takes over the calls C
   code makes of a function. */
static inline vectorcallfunc cassette_function_entry(PyObject *func) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    return ((PyFunctionObject *)func)->vectorcall;
#endif
}

static inline void cassette_set_function_entry(PyObject *func, vectorcallfunc entry) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    ((PyFunctionObject *)func)->vectorcall = entry;
#endif
}

/* Whether a function holds an ``__annotate__`` function (PEP 649, 3.14+;
   none before). */
static inline int cassette_function_has_annotate(PyObject *func) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313
    (void)func;
    return 0;
#elif CASSETTE_PY == 314 || CASSETTE_PY == 315
    PyObject *annotate = ((PyFunctionObject *)func)->func_annotate;
    return annotate != NULL && annotate != Py_None;
#endif
}

/* Make instances of an already created class callable through the
   vectorcall function each keeps at `offset`. */
static inline void cassette_set_type_vectorcall(PyTypeObject *tp, Py_ssize_t offset) {
#if CASSETTE_PY == 311 || CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    tp->tp_vectorcall_offset = offset;
    tp->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    PyType_Modified(tp);
#endif
}


/* -- type version tags ----------------------------------------------------- */

/* A class's version tag changes whenever the class or a base does; the
   core's caches of decisions about a class key on it, with the class's
   address (never a reference: tags are not reused, so a class made later
   at the same address has another).  0: the class has none, and nothing
   about it is cached.  Two releases would leave ordinary classes there:

   * 3.11 assigns a tag only at a method-cache look-up, which a class
     nobody reads an attribute of never had: a look-up is made here;
   * 3.12+ stop assigning tags to a class after 1000 changes
     (MAX_VERSIONS_PER_CLASS; pyparsing's ParserElement in its own test
     suite): such a heap class gets a version of cassette's own, counted
     down from UINT_MAX, which holds while no dictionary of its MRO changes
     (a dict watcher forgets every such version at the first change) and
     its MRO stays the same tuple. */
#if CASSETTE_PY == 311
static PyObject *cassette_version_probe = NULL;     /* an interned name */
#elif CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
#define CASSETTE_OWN_VERSIONS_BITS 6
#define CASSETTE_OWN_VERSIONS (1 << CASSETTE_OWN_VERSIONS_BITS)
typedef struct {
    PyTypeObject *type;
    PyObject *dict, *mro;       /* compared only: which class this still is */
    unsigned int version;
} CassetteOwnVersion;
static CassetteOwnVersion cassette_own_versions[CASSETTE_OWN_VERSIONS];
static unsigned int cassette_next_own_version = UINT_MAX;
static int cassette_class_dict_watcher = -1;        /* -2: none to be had */

static int cassette_class_dict_changed(PyDict_WatchEvent event, PyObject *dict,
                                       PyObject *key, PyObject *new_value) {
    (void)event; (void)dict; (void)key; (void)new_value;
    memset(cassette_own_versions, 0, sizeof(cassette_own_versions));
    return 0;
}

static unsigned int cassette_own_class_version(PyTypeObject *tp) {
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_mro == NULL || tp->tp_dict == NULL)
        return 0;
    CassetteOwnVersion *entry =
        &cassette_own_versions[cassette_address_slot(tp, CASSETTE_OWN_VERSIONS_BITS)];
    if (entry->type == tp && entry->dict == tp->tp_dict && entry->mro == tp->tp_mro)
        return entry->version;
    if (cassette_class_dict_watcher == -2 || !PyTuple_Check(tp->tp_mro))
        return 0;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    unsigned int version = 0;
    if (cassette_class_dict_watcher == -1) {
        cassette_class_dict_watcher = PyDict_AddWatcher(cassette_class_dict_changed);
        if (cassette_class_dict_watcher < 0) cassette_class_dict_watcher = -2;
    }
    if (cassette_class_dict_watcher >= 0) {
        int watched = 1;
        for (Py_ssize_t i = 0; watched && i < PyTuple_GET_SIZE(tp->tp_mro); i++) {
            PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(tp->tp_mro, i);
            if (PyType_Check(base) && (base->tp_flags & Py_TPFLAGS_HEAPTYPE)
                    && base->tp_dict != NULL
                    && PyDict_Watch(cassette_class_dict_watcher, base->tp_dict) < 0)
                watched = 0;
        }
        if (watched) {
            version = cassette_next_own_version--;
            *entry = (CassetteOwnVersion){tp, tp->tp_dict, tp->tp_mro, version};
        }
    }
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    return version;
}
#endif

static inline unsigned int cassette_class_version(PyTypeObject *tp) {
#if CASSETTE_PY == 311
    if (!(tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        if (cassette_version_probe == NULL)
            cassette_version_probe = PyUnicode_InternFromString("__cassette_version_probe__");
        if (cassette_version_probe == NULL) {
            PyErr_Clear();
            return 0;
        }
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        (void)_PyType_Lookup(tp, cassette_version_probe);
        PyErr_Restore(type, value, traceback);
    }
    return (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? tp->tp_version_tag : 0;
#elif CASSETTE_PY == 312 || CASSETTE_PY == 313 || CASSETTE_PY == 314 || CASSETTE_PY == 315
    if (tp->tp_version_tag == 0 && !PyUnstable_Type_AssignVersionTag(tp))
        return cassette_own_class_version(tp);
    return tp->tp_version_tag;
#endif
}

#endif /* CASSETTE_COMPAT_H */
