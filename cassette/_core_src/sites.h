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

/* PyModule_Check, answered without walking the MRO for the builtin
   classes whose methods programs bind most (a list's append, a dict's
   get): a bound builtin's owner is tested on every call of it. */
static inline int cassette_is_module(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    if (tp == &PyModule_Type) return 1;
    if (tp == &PyList_Type || tp == &PyDict_Type || tp == &PySet_Type
            || tp == &PyUnicode_Type || tp == &PyBytes_Type || tp == &PyByteArray_Type
            || tp == &PyTuple_Type || tp == &PyLong_Type || tp == &PyFloat_Type)
        return 0;
    return PyModule_Check(obj);
}

/* The descriptor a bound builtin was made from (borrowed), as
   callables.split_bound finds it, when it is the one found first by the
   method's name (`name`, the interned ml_name): for a builtin bound to an
   instance, the method descriptor its class finds; for one bound to a
   class (``int.from_bytes``, ``dict.fromkeys``), the class-method
   descriptor that class finds.  NULL when the builtin is bound to nothing
   or a module, or its descriptor is found another way (a metaclass's
   method bound to a class, a shadowed name: callables.split_bound
   decides). */
static inline PyObject *cassette_bound_builtin_descriptor(PyObject *f, PyObject *name) {
    PyCFunctionObject *function = (PyCFunctionObject *)f;
    PyObject *owner = function->m_self;
    if (owner == NULL || cassette_is_module(owner)) return NULL;
    if (PyType_Check(owner)) {
        PyObject *found = cassette_type_lookup((PyTypeObject *)owner, name);
        if (found == NULL || Py_TYPE(found) != &PyClassMethodDescr_Type
                || ((PyMethodDescrObject *)found)->d_method != function->m_ml)
            return NULL;
        return found;
    }
    PyObject *found = cassette_type_lookup(Py_TYPE(owner), name);
    if (found == NULL || Py_TYPE(found) != &PyMethodDescr_Type
            || ((PyMethodDescrObject *)found)->d_method != function->m_ml)
        return NULL;
    return found;
}

/* Whether instances of `tp` have no attributes but what `tp` itself
   gives: the generic lookup, no instance dictionary. */
static inline int cassette_instances_lack_own_attributes(PyTypeObject *tp) {
    return tp->tp_getattro == PyObject_GenericGetAttr && tp->tp_dictoffset == 0
        && !(tp->tp_flags & Py_TPFLAGS_MANAGED_DICT);
}

/* A builtin function or method bound to an instance: its self is neither
   absent, nor a module, nor a class (callables.is_stable: never stable). */
static inline int cassette_builtin_bound_to_instance(PyObject *f) {
    PyObject *owner = ((PyCFunctionObject *)f)->m_self;
    return owner != NULL && !PyType_Check(owner) && !cassette_is_module(owner);
}

/* A class of a metaclass other than type that hashes and compares as
   type does (ABCMeta, EnumType): a dictionary lookup of it runs no
   Python code (callables.is_stable says the same). */
static inline int cassette_class_hashed_as_type(PyObject *obj) {
    PyTypeObject *meta = Py_TYPE(obj);
    return meta != &PyType_Type && PyType_Check(obj)
        && meta->tp_hash == PyType_Type.tp_hash
        && meta->tp_richcompare == PyType_Type.tp_richcompare;
}

/* An instance of a C type that cannot change (static, or an immutable
   heap type) and hashes and compares as object does, by identity: a
   dictionary lookup of it runs no code (callables.hashed_by_identity says
   the same). */
static inline int cassette_hashed_by_identity(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    return (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IMMUTABLETYPE))
        && tp->tp_hash == PyBaseObject_Type.tp_hash
        && tp->tp_richcompare == PyBaseObject_Type.tp_richcompare;
}

/* Whether object.__new__(cls, *args) of `nargs` arguments, as
   type.__call__ makes it, does nothing with the arguments: `cls` keeps
   object's __new__ and, given arguments, has an __init__ of its own
   (object_new's own test of excess arguments). */
static inline int cassette_object_new_ignores(PyObject *cls, Py_ssize_t nargs) {
    PyTypeObject *tp = (PyTypeObject *)cls;
    return tp->tp_new == PyBaseObject_Type.tp_new
        && !(nargs && tp->tp_init == PyBaseObject_Type.tp_init);
}

/* object.__new__(cls) when cassette_object_new_ignores the arguments:
   the new object, or NULL with an exception set (an abstract class). */
static inline PyObject *cassette_object_new(PyObject *cls) {
    PyTypeObject *tp = (PyTypeObject *)cls;
    PyObject *no_arguments = PyTuple_New(0);
    if (no_arguments == NULL) return NULL;
    PyObject *obj = tp->tp_new(tp, no_arguments, NULL);
    Py_DECREF(no_arguments);
    return obj;
}

/* The PyMethodDef address of a builtin function, and its name. */
static inline void *cassette_builtin_def(PyObject *f) {
    return (void *)((PyCFunctionObject *)f)->m_ml;
}

static inline const char *cassette_builtin_def_name(PyObject *f) {
    return ((PyCFunctionObject *)f)->m_ml->ml_name;
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

/* The C functions behind the operator module's functions of two operands
   (what ``operator.add(a, b)`` and the rest call after checking their
   argument count): a site whose implementation is one calls it directly. */
typedef PyObject *(*cassette_binary)(PyObject *, PyObject *);

static PyObject *cassette_pow(PyObject *a, PyObject *b) { return PyNumber_Power(a, b, Py_None); }
static PyObject *cassette_ipow(PyObject *a, PyObject *b) {
    return PyNumber_InPlacePower(a, b, Py_None);
}
static PyObject *cassette_lt(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_LT); }
static PyObject *cassette_le(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_LE); }
static PyObject *cassette_eq(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_EQ); }
static PyObject *cassette_ne(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_NE); }
static PyObject *cassette_gt(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_GT); }
static PyObject *cassette_ge(PyObject *a, PyObject *b) { return PyObject_RichCompare(a, b, Py_GE); }

static const struct { const char *name; cassette_binary function; } cassette_binaries[] = {
    {"add", PyNumber_Add}, {"sub", PyNumber_Subtract}, {"mul", PyNumber_Multiply},
    {"truediv", PyNumber_TrueDivide}, {"floordiv", PyNumber_FloorDivide},
    {"mod", PyNumber_Remainder}, {"pow", cassette_pow}, {"matmul", PyNumber_MatrixMultiply},
    {"lshift", PyNumber_Lshift}, {"rshift", PyNumber_Rshift}, {"and_", PyNumber_And},
    {"or_", PyNumber_Or}, {"xor", PyNumber_Xor},
    {"iadd", PyNumber_InPlaceAdd}, {"isub", PyNumber_InPlaceSubtract},
    {"imul", PyNumber_InPlaceMultiply}, {"itruediv", PyNumber_InPlaceTrueDivide},
    {"ifloordiv", PyNumber_InPlaceFloorDivide}, {"imod", PyNumber_InPlaceRemainder},
    {"ipow", cassette_ipow}, {"imatmul", PyNumber_InPlaceMatrixMultiply},
    {"ilshift", PyNumber_InPlaceLshift}, {"irshift", PyNumber_InPlaceRshift},
    {"iand", PyNumber_InPlaceAnd}, {"ior", PyNumber_InPlaceOr}, {"ixor", PyNumber_InPlaceXor},
    {"lt", cassette_lt}, {"le", cassette_le}, {"eq", cassette_eq}, {"ne", cassette_ne},
    {"gt", cassette_gt}, {"ge", cassette_ge}, {"getitem", PyObject_GetItem},
};

/* The C function of ``operator.<name>``, NULL for a name not above (the
   caller checks that its implementation is that function). */
static cassette_binary cassette_binary_named(const char *name) {
    for (size_t i = 0; i < sizeof(cassette_binaries) / sizeof(cassette_binaries[0]); i++)
        if (strcmp(cassette_binaries[i].name, name) == 0) return cassette_binaries[i].function;
    return NULL;
}

static inline Py_ssize_t cassette_refcount(PyObject *obj) { return Py_REFCNT(obj); }

#endif  /* CASSETTE_CORE_SITES_H */
