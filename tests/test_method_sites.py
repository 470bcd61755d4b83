"""Method sites, ``obj.name(…)``: the lookup 3.11 and 3.12 make through a
site of that name keeps its answer for the last class, and must give up
exactly when the interpreter's own lookup would find something else — an
attribute of the instance's own (kept beside the class's shared keys or in
a ``__dict__``), a change to the class or a base, another class.  Each
case runs a loop whose site is hot when the change comes, plainly and
overdubbed, and compares everything it returns."""

import pytest

import cassette


class Nothing(cassette.Context):
    pass


class Watching(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(getattr(f, "__qualname__", type(f).__name__))


def same(program, *args):
    expected = program(*args)
    got = cassette.overdub(Nothing(), program, *args)
    assert got == expected
    return got


class Base:
    def __init__(self, x):
        self.x = x

    def m(self, y):
        return ("Base.m", self.x, y)


class Derived(Base):
    pass


class Slotted:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def m(self, y):
        return ("Slotted.m", self.x, y)


class Intercepting(Base):
    def __getattribute__(self, name):
        if name == "m":
            return lambda y: ("intercepted", y)
        return object.__getattribute__(self, name)


def calls(objs, rounds=40):
    out = []
    for i in range(rounds):
        for obj in objs:
            out.append(obj.m(i))
    return out


def test_an_instance_attribute_set_while_the_site_is_hot():
    def program():
        a, b = Base(1), Base(2)
        out = calls([a, b])
        b.m = lambda y: ("own", y)          # b's values gain 'm'
        out += calls([a, b])
        c = Base(3)                         # a later instance: 'm' among the shared keys, unset
        out += calls([c])
        c.m = len
        out.append(c.m("abc"))
        del b.m
        out += calls([a, b, c][:2])
        return out
    same(program)


def test_an_attribute_in_a_materialized_dict():
    def program():
        a = Base(1)
        out = calls([a])
        vars(a)["m"] = lambda y: ("dict", y)
        out += calls([a])
        a.__dict__ = {"x": 5}
        out += calls([a])
        a.__dict__ = {"x": 6, "m": str}
        out.append(a.m(7))
        return out
    same(program)


def test_the_class_or_a_base_changes():
    def program():
        original = Base.m
        try:
            d = Derived(1)
            out = calls([d])
            Base.m = lambda self, y: ("replaced", self.x, y)
            out += calls([d])
            Derived.m = lambda self, y: ("derived", y)
            out += calls([d])
            del Derived.m
            out += calls([d])
            return out
        finally:
            Base.m = original
    same(program)


def test_classes_that_alternate_and_class_assignment():
    def program():
        a, s = Base(1), Slotted(2)
        out = calls([a, s, a, Derived(3)])
        a.__class__ = Derived
        out += calls([a])
        out += calls([Intercepting(4), a])
        return out
    same(program)


def test_receivers_that_are_not_locals_and_builtin_methods():
    holder = Base(Base(9))

    def program():
        out = []
        items = []
        for i in range(60):
            out.append(holder.x.m(i))       # an attribute's method
            out.append(Base(i).m(-i))       # a call's result
            items.append(i)                 # a builtin method descriptor
            out.append(items.count(i))
        return out, items
    same(program)


def test_a_non_callable_instance_attribute_raises_as_plain():
    def program():
        a = Base(1)
        calls([a])
        a.m = 5
        try:
            a.m(1)
        except TypeError as error:
            return str(error)
        return None
    assert "not callable" in same(program)


def test_hooks_see_the_method_that_runs():
    def program():
        a = Base(1)
        calls([a], rounds=5)
        a.m = lambda y: y
        return calls([a], rounds=2)

    log = []
    assert cassette.overdub(Watching(metadata=log), program) == program()
    kinds = [name for name in log if name in ("Base.m", "test_hooks_see_the_method_that_runs.<locals>.program.<locals>.<lambda>")]
    assert kinds.count("Base.m") == 5
    assert len(kinds) == 7


class Recording:
    def __init__(self):
        super().__init__()                      # object.__init__, a C slot
        self.log = []

    def __setattr__(self, name, value):
        if name != "log":
            self.log.append(name)
        super().__setattr__(name, value)        # not this class's __setattr__ again

    def __repr__(self):
        return "Recording" + super().__repr__()[:0]


def test_super_calls_of_c_slots():
    def program():
        out = []
        for i in range(30):
            r = Recording()
            r.x = i
            r.y = -i
            out.append((r.log, r.x, r.y, repr(r)))
        return out
    same(program)


class SeeingSlots(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        if f is object.__setattr__ or f is object.__init__:
            self.metadata.append((f.__name__, type(args[0]).__name__, args[1:]))


class Settable:
    def __init__(self):
        super().__init__()

    def set(self, name, value):
        super().__setattr__(name, value)


def test_hooks_see_the_slot_wrapper_that_super_calls():
    def program():
        s = Settable()
        s.set("x", 1)
        return s.x

    log = []
    assert cassette.overdub(SeeingSlots(metadata=log), program) == 1
    assert log == [("__init__", "Settable", ()), ("__setattr__", "Settable", ("x", 1))]


# A frame-sensitive callable reached as an attribute, not a method (a
# module's function, an instance's attribute): it reads the frame of the
# code that calls it, overdubbed as plainly.  Compiled into a namespace of
# its own (not a module's), as docs examples and exec'd code are.
FRAME_READING_SOURCE = '''
def frame_reading():
    x = 1
    found = [sys._getframe().f_code.co_name, holder.getframe().f_code.co_name,
             holder.getframe(0).f_lineno - sys._getframe().f_lineno,
             sorted(holder.locals()), sorted(builtins.locals()), sorted(builtins.vars()),
             sorted(builtins.dir()), builtins.globals() is globals(),
             builtins.vars(holder) is holder.__dict__]
    if hasattr(sys, "_getframemodulename"):
        found += [sys._getframemodulename(), sys._getframemodulename(depth=0)]
    try:
        sys._getframe("deep")
    except TypeError as error:
        found.append(str(error))
    try:
        builtins.locals(1)
    except TypeError as error:
        found.append(str(error))
    return found
'''


class Holder:
    pass


def test_frame_sensitive_attributes_read_the_programs_frame():
    import builtins
    import sys
    holder = Holder()
    holder.getframe, holder.locals = sys._getframe, locals
    namespace = {"sys": sys, "builtins": builtins, "holder": holder, "__name__": "frames"}
    exec(compile(FRAME_READING_SOURCE, "<frame reading>", "exec"), namespace)
    found = same(namespace["frame_reading"])
    assert found[:3] == ["frame_reading", "frame_reading", 0]
    assert found[3:7] == [["x"]] * 4
    assert found[7:9] == [True, True]
