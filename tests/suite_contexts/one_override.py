"""A context with a single ``execute`` override, for libraries' own test
suites run through the pytest plugin (``tests/library_suites.py --nine``
adds this directory to ``PYTHONPATH`` and names ``one_override:OneOverride``).

The override answers every ``len()`` by calling it and counting the call:
every other callee is overdubbed as under a context that defines nothing,
so the handler dispatch runs on every call and changes no result.
"""

import cassette


class OneOverride(cassette.Context):
    """``execute`` overridden for ``len`` alone; ``metadata`` counts its calls."""

    def __init__(self, *, metadata=None, **kwargs):
        super().__init__(metadata=[0] if metadata is None else metadata, **kwargs)


@cassette.execute.register(OneOverride, len)
def _len(ctx, f, /, *args, **kwargs):
    ctx.metadata[0] += 1
    return f(*args, **kwargs)
