"""Cassette's println-slicing pass, in Python.

``sliceprints(f, *args)`` runs ``f`` with every call of the builtin ``print``
— in ``f`` and in everything it calls — taken out of the program and
recorded instead; it returns ``f``'s result and a callback that replays the
recorded prints, in order, with their arguments.

How: the pass replaces the callable of each ``print(…)`` call by the
expression ``getattr(CONTEXT, "metadata")`` — the context's recorder — so the
call's arguments go to the recorder.  ``getattr`` is loaded ``nooverdub``
(cassette's own plumbing, not an operation of the program); the call of the
recorder itself is an ordinary, intercepted call.

Run ``python examples/sliceprint.py`` to see it.
"""

import builtins

import cassette
from cassette import ir


class PrintRecorder:
    """Records calls made in place of ``print``."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))

    def replay(self):
        """Print what was recorded, in order."""
        for args, kwargs in self.calls:
            print(*args, **kwargs)


class SliceCtx(cassette.Context):
    """Intercepts calls only: the pass does the work."""

    intercept = cassette.Intercept.CALLS


def _calls_builtin_print(func, site):
    if site.callee is None or site.method or ir.loaded_name(site.callee) != "print":
        return False
    if site.callee.name == "LOAD_GLOBAL":
        namespace = getattr(func, "__globals__", {})
        return namespace.get("print", builtins.print) is builtins.print
    return site.callee.name == "LOAD_NAME"


@cassette.Pass
def slice_prints(ctx_type, func, code):
    """Replace the callable of every call of the builtin ``print`` by the
    running context's metadata."""
    for site in ir.call_sites(code):
        if _calls_builtin_print(func, site):
            recorder = ir.call(ir.nooverdub(getattr), ir.CONTEXT, "metadata")
            ir.replace_callee(code, site, recorder)
    return code


# The output depends on ``func.__globals__`` (is ``print`` shadowed?), which
# the disk cache's key does not cover: keep this pass out of it.
slice_prints.cache_key = None


def sliceprints(f, /, *args, **kwargs):
    """``(f(*args, **kwargs), replay)``, printing nothing while ``f`` runs;
    ``replay()`` prints what ``f`` would have printed."""
    recorder = PrintRecorder()
    ctx = SliceCtx(metadata=recorder, pass_=slice_prints)
    result = cassette.overdub(ctx, f, *args, **kwargs)
    return result, recorder.replay


def _greet(name):
    print("hello,", name)
    return _shout(name) + 1


def _shout(name):
    print(name.upper(), end="!\n", sep="")
    return len(name)


if __name__ == "__main__":
    result, replay = sliceprints(_greet, "world")
    print("result:", result, "- now the prints:")
    replay()
