/* Small tests the operation sites and the runtime make on every call. */

#ifndef CASSETTE_CORE_SITES_H
#define CASSETTE_CORE_SITES_H

#include "compat.h"

/* An instance of a builtin (static) type that is not itself a class. */
static inline int cassette_builtin_instance(PyObject *obj) {
    unsigned long flags = Py_TYPE(obj)->tp_flags;
    return !(flags & (Py_TPFLAGS_HEAPTYPE | Py_TPFLAGS_TYPE_SUBCLASS));
}

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

static inline Py_ssize_t cassette_refcount(PyObject *obj) { return Py_REFCNT(obj); }

#endif  /* CASSETTE_CORE_SITES_H */
