"""Overdubbing beside other tools: the oracles run while another tool
watches the interpreter (SPEC §3.4: nothing a program does changes).

Run as a script in a fresh interpreter (``tests/test_beside_other_tools.py``
does, once per tool)::

    python tests/beside_tools.py monitoring|settrace|setprofile|none

It installs the tool — a ``sys.monitoring`` tool counting ``PY_START`` and
``LINE`` events (and disabling ``LINE`` where it fired, as coverage.py
does), a ``sys.settrace`` function tracing every frame's lines, or a
``sys.setprofile`` function — then runs the CPython oracle's modules and the
real-library workloads plainly and overdubbed by a context that defines
nothing (the touching contexts' runs are the main oracles' business; a
traced run is several times slower), and prints one JSON line: the regressions found and
the events the tool saw.  ``none`` installs nothing (``coverage run`` is
the tool then).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpython_oracle as oracle  # noqa: E402

EVENTS = {"count": 0}


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
        def trace(frame, event, arg):
            EVENTS["count"] += 1
            return trace
        sys.settrace(trace)
    elif tool == "setprofile":
        sys.setprofile(lambda frame, event, arg: _count())
    elif tool != "none":
        raise SystemExit(f"unknown tool {tool!r}")


def main(tool, workloads=True):
    install(tool)
    lost = {}
    for name in oracle.MODULES:
        plain = oracle.run_module(name)
        for label, ctx in (("nothing", oracle.Nothing()),):
            found = oracle.regressions(plain, oracle.run_module(name, ctx))
            if found:
                lost[f"{name} {label}"] = sorted(found)
    if workloads:
        import test_real_libraries as real
        for name, (library, function) in real.WORKLOADS.items():
            plain = function()
            for label in ("nothing",):
                dubbed, _ = real.run_overdubbed(real.CONTEXTS[label](), function)
                if dubbed != plain:
                    lost[f"{name} {label}"] = [repr(dubbed)[:200]]
    print(json.dumps({"tool": tool, "lost": lost, "events": EVENTS["count"]}))


if __name__ == "__main__":
    main(sys.argv[1])
