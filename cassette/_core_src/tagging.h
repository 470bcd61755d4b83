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
   interpreter's own deallocator. */
static Py_ssize_t cassette_tagged_size = -1;
static Py_ssize_t cassette_tagged_o1 = -1, cassette_tagged_o2 = -1, cassette_tagged_o3 = -1;

static void cassette_tagged_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, cassette_tagged_dealloc)
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o1));
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o2));
    Py_CLEAR(*(PyObject **)((char *)self + cassette_tagged_o3));
    tp->tp_free(self);
    Py_DECREF(tp);
    Py_TRASHCAN_END
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

#endif  /* CASSETTE_CORE_TAGGING_H */
