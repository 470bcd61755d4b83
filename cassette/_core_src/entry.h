/* The entry point cassette.overdub, a C function (see below). */

#ifndef CASSETTE_CORE_ENTRY_H
#define CASSETTE_CORE_ENTRY_H

#include "compat.h"

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
    "overdub(ctx, f, /, *args, **kwargs)\n--\n\n"
    "Run f(*args, **kwargs) with every operation in its body -- and,\n"
    "recursively, in everything it calls -- routed through ctx.\n\n"
    "Returns what the plain call returns and raises what it raises.  The\n"
    "call of f itself is not hooked (write overdub(ctx, lambda: f(x)) to\n"
    "hook it too).  Called from code that is itself being overdubbed, the\n"
    "enclosing context intercepts everything the inner run does, its\n"
    "handlers included."
};

static PyObject *cassette_make_entry(PyObject *state, PyObject *module_name) {
    return PyCFunction_NewEx(&cassette_entry_def, state, module_name);
}

#endif  /* CASSETTE_CORE_ENTRY_H */
