"""Small reproductions of engine bugs found by the CPython oracle
(``tests/test_cpython_oracle.py``), each run under a context that defines
nothing and under one with a catch-all prehook."""

import pytest

import cassette


class Nothing(cassette.Context):
    pass


class Touching(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        type(f)
        len(args)


CONTEXTS = [Nothing, Touching]


@pytest.fixture(params=CONTEXTS, ids=lambda c: c.__name__)
def ctx(request):
    return request.param()


# test_grammar.test_var_annot_in_module: importlib's _ModuleLock calls
# super().__init__() on a class that overrides __init__; the builtin method
# super() returns was reported as the subclass's own __init__ (recursion).
def test_super_reaches_builtin_method_of_base(ctx):
    class D(dict):
        def __init__(self):
            super().__init__(a=1)

        def update(self, other):
            super().update(other)
            self["u"] = 1

    def program():
        d = D()
        d.update({"b": 2})
        return d

    assert cassette.overdub(ctx, program) == {"a": 1, "b": 2, "u": 1}
