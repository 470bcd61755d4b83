"""Overdubbing beside other tools: the oracles run while another tool
watches the interpreter (reference §3.4: nothing a program does changes).

Run as a script in a fresh interpreter (``tests/test_beside_other_tools.py``
does, once per tool)::

    python tests/beside_tools.py TOOL [TOOL ...]    # monitoring, settrace, setprofile, none

It installs the tools, all at once — a ``sys.monitoring`` tool counting
``PY_START`` and ``LINE`` events (and disabling ``LINE`` where it fired, as coverage.py
does), a ``sys.settrace`` function tracing the lines of each code
object's first frame, a
``sys.setprofile`` function — then runs the CPython oracle's modules and the
real-library workloads overdubbed by a context that defines nothing — and
with the Cython core, the CPython modules once more under the oracle's
touching context, whose catch-all prehook runs on every operation (the
hooked path of the core: issue 16's ``test_descr`` crash was reported
beside ``sys.monitoring`` under such a context) — comparing with their
plain runs, made before the tools were installed, and prints one JSON line: the regressions found
and the events the tools saw.  ``none`` installs nothing (``coverage run`` is
the tool then).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpython_oracle as oracle  # noqa: E402
from cassette.entry import IMPLEMENTATION  # noqa: E402

EVENTS = {"count": 0}

#: The CPython oracle's modules replayed beside the tools.
MODULES = oracle.MODULES


def _count(*args):
    EVENTS["count"] += 1


def install(tool):
    if tool == "monitoring":
        monitoring = sys.monitoring
        tool_id = monitoring.PROFILER_ID
        monitoring.use_tool_id(tool_id, "cassette-beside")

        def on_line(code, line):
            EVENTS["count"] += 1
            return monitoring.DISABLE

        monitoring.register_callback(tool_id, monitoring.events.PY_START, _count)
        monitoring.register_callback(tool_id, monitoring.events.LINE, on_line)
        monitoring.set_events(tool_id, monitoring.events.PY_START | monitoring.events.LINE)
    elif tool == "settrace":
        traced = set()

        def trace(frame, event, arg):
            # Every frame's call is seen; lines are traced in the first frame
            # of each code object (which makes 3.11 build the code's line
            # array), as a coverage tool does, not again in hot loops.
            EVENTS["count"] += 1
            if event == "call":
                if frame.f_code in traced:
                    return None
                traced.add(frame.f_code)
            return trace
        sys.settrace(trace)
    elif tool == "setprofile":
        sys.setprofile(lambda frame, event, arg: _count())
    elif tool != "none":
        raise SystemExit(f"unknown tool {tool!r}")


def main(tools):
    """The oracles' plain runs first, untraced (they are the reference);
    then, with the tools installed, the overdubbed runs."""
    import test_real_libraries as real
    plain_modules = {name: oracle.run_module(name) for name in MODULES}
    # The workloads whose library is installed (a debug build has no numpy).
    workloads = {name: function for name, (library, function) in real.WORKLOADS.items()
                 if real.missing_library(library) is None}
    plain_workloads = {name: function() for name, function in workloads.items()}
    for tool in tools:
        install(tool)
    lost = {}
    # The touching replay is for the core's hooked path (C code beside the
    # tools); the pure-Python runtime's hooked path is Python code like the
    # rest, and replaying it under a tracer would cost CI minutes per run.
    contexts = (oracle.Nothing, oracle.touching) if IMPLEMENTATION == "cython" else (oracle.Nothing,)
    for context in contexts:
        for name, plain in plain_modules.items():
            found = oracle.regressions(plain, oracle.run_module(name, context()))
            if found:
                lost[f"{name} under {context.__name__}"] = sorted(found)
    for name, function in workloads.items():
        dubbed, _ = real.run_overdubbed(real.CONTEXTS["nothing"](), function)
        if dubbed != plain_workloads[name]:
            lost[name] = [repr(dubbed)[:200]]
    print(json.dumps({"tools": tools, "lost": lost, "events": EVENTS["count"]}))


if __name__ == "__main__":
    main(sys.argv[1:])
