/* Tagged values and tags read and written in place: the offsets of their
   __slots__ entries, and the context class last seen keeping Context.tag
   in its slot. */

#ifndef CASSETTE_CORE_TAGGING_H
#define CASSETTE_CORE_TAGGING_H

#include "compat.h"
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

/* Tagged values are freed without subtype_dealloc's general walk: a
   tagged class has the three object slots of Tagged and nothing else (no
   __dict__, no __weakref__, no finalizer), so freeing one is untracking
   it, dropping its slots and its class.  A class is adopted only when its
   layout is that one (cassette_tagged_adopt); any other keeps the
   interpreter's own deallocator.

   A tagged run makes and drops a tagged value for nearly every operation
   on one, so the memory of the last ones freed is kept for the next ones
   made (what the interpreter does for floats and tuples): a free list,
   linked through the first slot, of blocks every adopted class can use
   (they are all the same size). */
static Py_ssize_t cassette_tagged_size = -1;
static Py_ssize_t cassette_tagged_o1 = -1, cassette_tagged_o2 = -1, cassette_tagged_o3 = -1;

#define CASSETTE_TAGGED_FREE_MAX 256
static PyObject *cassette_tagged_free = NULL;
static int cassette_tagged_nfree = 0;

static void cassette_tagged_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, cassette_tagged_dealloc)
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o1));
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o2));
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o3));
    if (cassette_tagged_nfree < CASSETTE_TAGGED_FREE_MAX) {
        *(PyObject **)((char *)self + cassette_tagged_o1) = cassette_tagged_free;
        cassette_tagged_free = self;
        cassette_tagged_nfree++;
    } else {
        tp->tp_free(self);
    }
    Py_DECREF(tp);
    Py_TRASHCAN_END
}

/* A new instance of adopted tagged class ``tp`` holding ``value``, ``tag``
   and ``data`` (in Tagged's slot order), from the free list when it has
   a block. */
static PyObject *cassette_tagged_new(PyTypeObject *tp, PyObject *value, PyObject *tag,
                                     PyObject *data) {
    PyObject *obj = cassette_tagged_free;
    int reused = obj != NULL;
    if (reused) {
        cassette_tagged_free = *(PyObject **)((char *)obj + cassette_tagged_o1);
        cassette_tagged_nfree--;
        PyObject_Init(obj, tp);
    } else {
        obj = tp->tp_alloc(tp, 0);        /* tracked, its slots empty */
        if (obj == NULL) return NULL;
    }
    Py_INCREF(value); *(PyObject **)((char *)obj + cassette_tagged_o1) = value;
    Py_INCREF(tag); *(PyObject **)((char *)obj + cassette_tagged_o2) = tag;
    Py_INCREF(data); *(PyObject **)((char *)obj + cassette_tagged_o3) = data;
    if (reused) PyObject_GC_Track(obj);
    return obj;
}

/* Learn the layout of tagged values from the base class Tagged (whose
   three slots are at the offsets given). */
static void cassette_tagged_learn(PyTypeObject *base, Py_ssize_t o1, Py_ssize_t o2,
                                  Py_ssize_t o3) {
    cassette_tagged_size = base->tp_basicsize;
    cassette_tagged_o1 = o1;
    cassette_tagged_o2 = o2;
    cassette_tagged_o3 = o3;
}

/* Give tagged class ``tp`` the deallocator above if its instances are laid
   out as Tagged's; a no-op for a class already adopted or laid out
   otherwise. */
static inline void cassette_tagged_adopt(PyTypeObject *tp) {
    if (tp->tp_dealloc == cassette_tagged_dealloc || cassette_tagged_size < 0) return;
    if (tp->tp_basicsize == cassette_tagged_size && tp->tp_itemsize == 0
            && tp->tp_dictoffset == 0 && tp->tp_weaklistoffset == 0
            && tp->tp_finalize == NULL && tp->tp_del == NULL
            && (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) && (tp->tp_flags & Py_TPFLAGS_HAVE_GC)
            && tp->tp_free == PyObject_GC_Del
#ifdef Py_TPFLAGS_MANAGED_DICT
            && !(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT)
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
            && !(tp->tp_flags & Py_TPFLAGS_MANAGED_WEAKREF)
#endif
            )
        tp->tp_dealloc = cassette_tagged_dealloc;
}

/* Adopt ``tp`` if it can be (above); whether it is adopted. */
static inline int cassette_tagged_adopted(PyTypeObject *tp) {
    cassette_tagged_adopt(tp);
    return tp->tp_dealloc == cassette_tagged_dealloc;
}

/* Replace the object in a slot (which may be empty). */
static inline void cassette_slot_set(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    PyObject *old = *slot;
    Py_INCREF(value);
    *slot = value;
    Py_XDECREF(old);
}

/* cassette_slots_new with a fourth slot. */
static PyObject *cassette_slots_new4(PyObject *type, Py_ssize_t o1, PyObject *v1,
                                     Py_ssize_t o2, PyObject *v2, Py_ssize_t o3, PyObject *v3,
                                     Py_ssize_t o4, PyObject *v4) {
    PyObject *obj = cassette_slots_new(type, o1, v1, o2, v2, o3, v3);
    if (obj == NULL) return NULL;
    Py_INCREF(v4);
    *(PyObject **)((char *)obj + o4) = v4;
    return obj;
}

/* Whether instances of ``tp`` are ``nslots`` object slots and nothing else
   to initialise (no __dict__, no __weakref__, no __init__ side effects
   the caller does not repeat): what cassette_slots_new makes whole. */
static int cassette_plain_slotted(PyTypeObject *tp, Py_ssize_t nslots) {
    return tp->tp_itemsize == 0 && tp->tp_dictoffset == 0 && tp->tp_weaklistoffset == 0
        && tp->tp_basicsize == (Py_ssize_t)(sizeof(PyObject) + nslots * sizeof(PyObject *))
        && tp->tp_alloc == PyType_GenericAlloc;
}

/* The last context class found to keep Context.tag in its slot, and
   its version tag then (any change to it or a base changes that). */
static PyTypeObject *cassette_tag_slot_class = NULL;
static unsigned int cassette_tag_slot_version = 0;

static inline int cassette_tag_slot_known(PyTypeObject *tp) {
    return tp == cassette_tag_slot_class && cassette_tag_slot_version != 0
        && cassette_class_version(tp) == cassette_tag_slot_version;
}

static inline void cassette_tag_slot_found(PyTypeObject *tp) {
    cassette_tag_slot_class = tp;
    cassette_tag_slot_version = cassette_class_version(tp);
}

/* The tagging API's most called functions read a context's tag and a
   value's slots with borrowed references only: untag, metadata and
   istagged decide here when the context's class is the one last seen
   keeping Context.tag in its slot and the tag is a Tag; anything else goes
   to the general entry (``general``, the core's Cython entries). */
typedef PyObject *(*cassette_fastcall)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);

static PyTypeObject *cassette_api_tag_type = NULL;
static PyTypeObject *cassette_api_tagged_meta = NULL;
static Py_ssize_t cassette_api_off_context_tag = -1;
static PyObject *cassette_api_no_data = NULL;
static cassette_fastcall cassette_api_general_untag = NULL;
static cassette_fastcall cassette_api_general_metadata = NULL;
static cassette_fastcall cassette_api_general_istagged = NULL;
static cassette_fastcall cassette_api_general_tag = NULL;

/* tag(): what the general entry last found for a context class, a tag,
   a primal type and the type of metadata allowed (NULL: it was tagged
   without metadata), valid while the dispatch generation is the same.
   The tag is borrowed, so that the last tag used can die: its death
   forgets it (cassette_api_forget_tag, from Tag.__del__). */
static Py_ssize_t cassette_dispatch_generation = -1;
static PyObject *cassette_api_last_ctx_type = NULL, *cassette_api_last_tag = NULL;
static PyObject *cassette_api_last_primal = NULL, *cassette_api_last_allowed = NULL;
static PyObject *cassette_api_last_made = NULL;
static Py_ssize_t cassette_api_last_generation = -2;

/* The general entries, set when the core is imported. */
static void cassette_api_set_general(void *untag, void *metadata, void *istagged, void *tag) {
    cassette_api_general_untag = (cassette_fastcall)untag;
    cassette_api_general_metadata = (cassette_fastcall)metadata;
    cassette_api_general_istagged = (cassette_fastcall)istagged;
    cassette_api_general_tag = (cassette_fastcall)tag;
}

/* What the common case reads, set when the tagging layer is installed. */
static void cassette_api_learn(PyTypeObject *tag_type, PyTypeObject *tagged_meta,
                               Py_ssize_t off_context_tag, PyObject *no_data) {
    cassette_api_tag_type = tag_type;
    cassette_api_tagged_meta = tagged_meta;
    Py_INCREF(no_data);
    cassette_api_no_data = no_data;
    cassette_api_off_context_tag = off_context_tag;
}

/* ``ctx``'s tag (borrowed) when the common case holds, else NULL. */
static inline PyObject *cassette_api_known_tag(PyObject *ctx) {
    if (cassette_api_off_context_tag < 0 || !cassette_tag_slot_known(Py_TYPE(ctx))) return NULL;
    PyObject *tag = *(PyObject **)((char *)ctx + cassette_api_off_context_tag);
    if (tag == NULL || Py_TYPE(tag) != cassette_api_tag_type) return NULL;
    return tag;
}

static inline int cassette_api_tagged_by(PyObject *x, PyObject *tag) {
    return Py_TYPE((PyObject *)Py_TYPE(x)) == cassette_api_tagged_meta
        && *(PyObject **)((char *)x + cassette_tagged_o2) == tag;
}

/* The tag of the context of a call ``(x, ctx)`` (borrowed) when the call
   is the common case, else NULL. */
static inline PyObject *cassette_api_common_tag(PyObject *const *args, Py_ssize_t nargs,
                                                PyObject *kwnames) {
    return nargs == 2 && kwnames == NULL ? cassette_api_known_tag(args[1]) : NULL;
}

/* Slot ``offset`` of ``x`` if ``tag`` tagged it, else ``otherwise`` (a new
   reference). */
static inline PyObject *cassette_api_slot_or(PyObject *x, PyObject *tag, Py_ssize_t offset,
                                             PyObject *otherwise) {
    PyObject *out = cassette_api_tagged_by(x, tag) ? *(PyObject **)((char *)x + offset)
                                                   : otherwise;
    Py_INCREF(out);
    return out;
}

static PyObject *cassette_api_untag(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    PyObject *tag = cassette_api_common_tag(args, nargs, kwnames);
    if (tag == NULL) return cassette_api_general_untag(module, args, nargs, kwnames);
    return cassette_api_slot_or(args[0], tag, cassette_tagged_o1, args[0]);
}

static PyObject *cassette_api_metadata(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *tag = cassette_api_common_tag(args, nargs, kwnames);
    if (tag == NULL) return cassette_api_general_metadata(module, args, nargs, kwnames);
    return cassette_api_slot_or(args[0], tag, cassette_tagged_o3, cassette_api_no_data);
}

static PyObject *cassette_api_istagged(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *tag = cassette_api_common_tag(args, nargs, kwnames);
    if (tag == NULL) return cassette_api_general_istagged(module, args, nargs, kwnames);
    return PyBool_FromLong(cassette_api_tagged_by(args[0], tag));
}

static void cassette_api_note_tagged(PyObject *ctx_type, PyObject *tag, PyObject *primal,
                                     PyObject *allowed, PyObject *made) {
    Py_XINCREF(ctx_type); Py_XSETREF(cassette_api_last_ctx_type, ctx_type);
    cassette_api_last_tag = tag;
    Py_XINCREF(primal); Py_XSETREF(cassette_api_last_primal, primal);
    Py_XINCREF(allowed); Py_XSETREF(cassette_api_last_allowed, allowed);
    Py_XINCREF(made); Py_XSETREF(cassette_api_last_made, made);
    cassette_api_last_generation = cassette_dispatch_generation;
}

/* What tag() found last lets its types go (at the start of a collection:
   they may be classes the program dropped; see cassette.lifetimes). */
static void cassette_api_forget_seen_last(void) {
    cassette_api_last_tag = NULL;
    Py_CLEAR(cassette_api_last_ctx_type);
    Py_CLEAR(cassette_api_last_primal);
    Py_CLEAR(cassette_api_last_allowed);
    Py_CLEAR(cassette_api_last_made);
}

static inline void cassette_api_forget_tag(PyObject *tag) {
    if (cassette_api_last_tag == tag) cassette_api_last_tag = NULL;
}

static PyObject *cassette_api_tag(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    PyObject *tag;
    if ((nargs == 2 || nargs == 3) && kwnames == NULL
            && (tag = cassette_api_known_tag(args[1])) == cassette_api_last_tag && tag != NULL
            && (PyObject *)Py_TYPE(args[0]) == cassette_api_last_primal
            && cassette_api_last_generation == cassette_dispatch_generation) {
        PyObject *data = nargs == 3 ? args[2] : cassette_api_no_data;
        if (data == cassette_api_no_data
                || ((PyObject *)Py_TYPE(data) == cassette_api_last_allowed
                    && (PyObject *)Py_TYPE(args[1]) == cassette_api_last_ctx_type))
            return cassette_tagged_new((PyTypeObject *)cassette_api_last_made, args[0], tag, data);
    }
    return cassette_api_general_tag(module, args, nargs, kwnames);
}

#endif  /* CASSETTE_CORE_TAGGING_H */
