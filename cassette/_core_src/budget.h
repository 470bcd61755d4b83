/* Recursion budgets: the levels cassette's own work and its calls for the
   program are credited, so overdubbed code reaches the depth it reaches
   plainly.  Built on compat.h's counters; knows nothing of runtimes. */

#ifndef CASSETTE_CORE_BUDGET_H
#define CASSETTE_CORE_BUDGET_H

#include "compat.h"

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

/* Cassette's own work done for the program (rewriting a code object, a
   lookup, routing a class): helper(*args), with frames lent for it (see
   routing.h's cassette_own_call).  The program may be at its recursion
   limit where a plain run needs no frame at all (a first call, a `with`,
   an exception handler): cassette's frames must not fail there, nor spend
   the program's budget.  Unlike raising the limit, taking the frames back
   never fails, even at a depth above the program's limit, and other
   threads keep their budgets.  The helper must not run program code
   (which would then get the lent frames too). */
#define CASSETTE_LENT_FRAMES 50

static inline PyObject *cassette_lent_call(PyObject *helper, PyObject *const *args,
                                           size_t nargs) {
    cassette_credit_python_frames(CASSETTE_LENT_FRAMES);
    PyObject *result = PyObject_Vectorcall(helper, args, nargs, NULL);
    cassette_credit_python_frames(-CASSETTE_LENT_FRAMES);
    return result;
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

/* f(*args[:n]) for a primitive f, as cassette_primitive_call_tuple. */
static inline PyObject *cassette_primitive_call_vector(PyObject *f, PyObject *const *args,
                                                       size_t n) {
    int credit = cassette_builtin_credit(f, NULL);
    PyObject *result = PyObject_Vectorcall(f, args, n, NULL);
    cassette_credit_c_calls(-credit);
    return result;
}

/* body(*args[:n]) with the recursion credit of a body's call (see
   cassette_credited_call). */
static inline PyObject *cassette_body_call(PyObject *body, PyObject *const *args, size_t n) {
    int credit = cassette_body_credit(body, NULL);
    PyObject *result = PyObject_Vectorcall(body, args, n, NULL);
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

#endif  /* CASSETTE_CORE_BUDGET_H */
