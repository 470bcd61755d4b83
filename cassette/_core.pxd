# The C interface of the Cython core (cassette/_core.pyx): the interpreter
# functions it calls, and the functions of its own C headers in
# cassette/_core_src/, each header one concern (see docs/architecture.md).

from cpython.object cimport PyObject, PyTypeObject

cdef extern from "Python.h":
    ctypedef struct PyFunctionObject:
        PyObject *func_globals
        PyObject *func_code
        PyObject *func_defaults
        PyObject *func_closure
        PyObject *func_kwdefaults
        PyObject *func_name
        PyObject *func_qualname
        PyObject *func_dict
    PyObject *PyEval_GetGlobals()
    PyObject *cassette_list_item "PyList_GET_ITEM"(PyObject *, Py_ssize_t)   # borrowed
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)
    object PyWeakref_NewRef(object, object)
    bint PyWeakref_CheckRef(object)
    object PyMethod_New(object, object)
    PyObject *PyMethod_GET_FUNCTION(object)
    PyObject *PyMethod_GET_SELF(object)
    PyObject *PyCFunction_GET_SELF(object)
    object PyLong_FromVoidPtr(void *)
    PyObject *PyDict_GetItemWithError(object, object) except? NULL
    object PyObject_Vectorcall(object, PyObject **, size_t, PyObject *)
    object PyObject_VectorcallDict(object, PyObject **, size_t, object)
    PyTypeObject *Py_TYPE(object)
    PyObject **PySequence_Fast_ITEMS(object)     # of a tuple: its items
    bint PyType_HasFeature(PyTypeObject *, unsigned long)
    bint PyType_Check(object)
    unsigned long Py_TPFLAGS_HEAPTYPE
    unsigned long Py_TPFLAGS_METHOD_DESCRIPTOR
    # Declared without an exception value: the callers check and clear.
    Py_ssize_t PyLong_AsSsize_t(object)
    PyObject *PyErr_Occurred()
    void PyErr_Clear()
    # A new reference; NULL without an error when the iterator is exhausted.
    PyObject *cassette_iter_next "PyIter_Next"(object) except? NULL

# What the core reads or changes inside the interpreter, one branch per
# supported release (see the header).  Included before every block below.
cdef extern from "_core_src/compat.h":
    Py_ssize_t cassette_address_slot(const void *pointer, int bits)
    PyObject *cassette_type_lookup(PyTypeObject *, object)
    int cassette_get_method(object obj, object name, PyObject **out) except -1
    void cassette_credit_python_frames(int count)
    PyObject *cassette_weakref_target(object ref)
    void cassette_install_attribute_load_pin(int load_attr, int property, int never)
    void cassette_allow_pinning(int opcode)
    int cassette_pin_attribute_load(object code, Py_ssize_t unit)
    PyObject *cassette_method_wrapper_descriptor(object wrapper)   # borrowed
    PyObject *cassette_method_wrapper_self(object wrapper)         # borrowed
    ctypedef struct cassette_own_attributes:
        int known
    void cassette_learn_own_attributes(PyTypeObject *tp, object name,
                                       cassette_own_attributes *own)
    int cassette_may_hold_own(object obj, object name, const cassette_own_attributes *own)


cdef extern from "_core_src/budget.h":
    object cassette_credited_call(object f, object args, object kwargs)
    object cassette_primitive_call_tuple(object f, tuple args, object kwargs)
    object cassette_primitive_call_vector(object f, PyObject **args, size_t n)
    object cassette_body_call(object body, PyObject **args, size_t n)
    int cassette_handler_credit(object handler)
    void cassette_note_builtin_len(object len)


cdef extern from "_core_src/entry.h":
    object cassette_make_entry(object state, object module_name)


cdef extern from "_core_src/routing.h":
    object cassette_own_call(object helper, object first, object second, size_t nargs)
    void *cassette_current_frame()
    void *cassette_set_barrier(void *frame)
    void *cassette_set_handler(void *handler)
    object cassette_handler_call(PyObject *handler, PyObject **stack, size_t n, PyObject *kwargs)
    object cassette_handler_being_called()
    bint cassette_is_barrier(object frame)
    int cassette_class_seen(PyTypeObject *tp)
    int cassette_class_saw(PyTypeObject *tp)
    int cassette_route_one(PyObject *arg) except -1
    void cassette_install_argument_routing(object route_argument, object route_holder,
                                           object partial_type, object method_wrapper_type,
                                           int wrapper_depth)
    int cassette_install_holders(object types) except -1
    void cassette_install_routing(object runtime_type, object acting_codes, void *redirect,
                                  object sample_function, object entries_dropped)
    object cassette_frame_runtime(object frame)
    object cassette_live_referents(object obj)
    int cassette_route_function(object func, int protocol)
    bint cassette_is_routed(object func)
    void cassette_watch_module_fetches(int begin)
    object cassette_plain_call(object func, PyObject **args, size_t nargsf, PyObject *kwnames)


cdef extern from "_core_src/objects.h":
    object cassette_dropself_new(object target)
    object cassette_primitive_new(object target)
    bint cassette_is_primitive(object obj)
    PyObject *cassette_primitive_target(object primitive)     # borrowed
    void cassette_enable_vectorcall(object type, Py_ssize_t offset)
    void cassette_install_held_entry(void *entry)
    void *cassette_holding_vectorcall
    object cassette_primitive_named(object target, object named)
    void cassette_install_slot_entries(void *operation, void *propagation)
    object cassette_operation_slot(object site)
    object cassette_propagation_slot(object site)
    void cassette_install_tagged_call(void *call, object type)
    enum:
        CASSETTE_API_TAG, CASSETTE_API_UNTAG, CASSETTE_API_ISTAGGED, CASSETTE_API_METADATA
    object cassette_tagging_api(int which, void *entry, object module)
    object cassette_function_running(object code, object f)
    enum:
        CASSETTE_SLOT_RESOLVE, CASSETTE_SLOT_METHOD_OF
    void cassette_install_runtime_slots(void *resolve, void *method_of)
    object cassette_runtime_slot(int which, object runtime)


cdef extern from "_core_src/sites.h":
    bint cassette_builtin_instance(object obj)
    bint cassette_recordless(object obj)
    PyObject *cassette_cached_handler(tuple cache, object ta, object tb, object tc,
                                      object mask)
    Py_ssize_t cassette_refcount(PyObject *obj)
    PyObject *cassette_bound_builtin_descriptor(object f, object name)
    bint cassette_instances_lack_own_attributes(PyTypeObject *tp)
    bint cassette_class_hashed_as_type(object obj)
    bint cassette_hashed_by_identity(object obj)
    bint cassette_builtin_bound_to_instance(object f)
    unsigned int cassette_class_version(PyTypeObject *tp)
    bint cassette_object_new_ignores(object cls, Py_ssize_t nargs)
    object cassette_object_new(object cls)
    void *cassette_builtin_def(object f)
    const char *cassette_builtin_def_name(object f)
    ctypedef object (*cassette_binary)(object, object)
    cassette_binary cassette_binary_named(const char *name)


cdef extern from "_core_src/tagging.h":
    Py_ssize_t cassette_slot_offset(object descr)
    PyObject *cassette_slot_get(object obj, Py_ssize_t offset)
    object cassette_slots_new(object type, Py_ssize_t o1, object v1, Py_ssize_t o2, object v2,
                              Py_ssize_t o3, object v3)
    bint cassette_tag_slot_known(PyTypeObject *tp)
    void cassette_tag_slot_found(PyTypeObject *tp)
    void cassette_tagged_learn(PyTypeObject *base, Py_ssize_t o1, Py_ssize_t o2, Py_ssize_t o3)
    void cassette_tagged_adopt(PyTypeObject *tp)
    bint cassette_tagged_adopted(PyTypeObject *tp)
    object cassette_tagged_new(PyTypeObject *tp, object value, object tag, object data)
    void cassette_slot_set(object obj, Py_ssize_t offset, object value)
    object cassette_slots_new4(object type, Py_ssize_t o1, object v1, Py_ssize_t o2, object v2,
                               Py_ssize_t o3, object v3, Py_ssize_t o4, object v4)
    bint cassette_plain_slotted(PyTypeObject *tp, Py_ssize_t nslots)
    void cassette_api_set_general(void *untag, void *metadata, void *istagged, void *tag)
    void cassette_api_learn(PyTypeObject *tag_type, PyTypeObject *tagged_meta,
                            Py_ssize_t off_context_tag, object no_data)
    void cassette_api_note_tagged(object ctx_type, object tag, object primal, PyObject *allowed,
                                  object made)
    void cassette_api_forget_tag(PyObject *tag)
    void cassette_api_forget_seen_last()
    void *cassette_api_untag
    void *cassette_api_metadata
    void *cassette_api_istagged
    void *cassette_api_tag
    Py_ssize_t cassette_dispatch_generation
