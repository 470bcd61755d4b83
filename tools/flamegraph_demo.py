#!/usr/bin/env python3
"""Makes ``docs/flamegraph.png``: a screenshot of the HTML flame graph.

Usage (from the repository root, with cassette importable and Chromium
installed, e.g. in a venv made by ``tools/dev.py``)::

    .venv/3.12/bin/python tools/flamegraph_demo.py docs/flamegraph.png [page.html]

It profiles a small n-body simulation by hand: one run under
``sys.setprofile`` gives the inclusive and exclusive time per call path, a
second run under ``cassette.overdub`` the operation mix of each (callee and
operand types, attributed to the call path of this file's frames).  It
renders that tree with :func:`cassette.cli.flamegraph.render_flamegraph`,
keeps the page as ``page.html`` if asked, and has headless Chromium take a
1200x520 screenshot of it with the mouse on the frame of ``Body.pull``.
Timings differ from run to run, and so does the picture.
"""

import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import cassette  # noqa: E402
from cassette.cli.flamegraph import render_flamegraph  # noqa: E402


class Body:
    def __init__(self, x, y, z, vx, vy, vz, mass):
        self.x, self.y, self.z = x, y, z
        self.vx, self.vy, self.vz = vx, vy, vz
        self.mass = mass

    def advance(self, others, dt):
        for other in others:
            if other is not self:
                self.pull(other, dt)
        self.x += dt * self.vx
        self.y += dt * self.vy
        self.z += dt * self.vz

    def pull(self, other, dt):
        dx, dy, dz = self.x - other.x, self.y - other.y, self.z - other.z
        mag = dt * other.mass / (distance(dx, dy, dz) ** 3)
        self.vx -= dx * mag
        self.vy -= dy * mag
        self.vz -= dz * mag

    def kinetic(self):
        return 0.5 * self.mass * (self.vx * self.vx + self.vy * self.vy + self.vz * self.vz)


def distance(dx, dy, dz):
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def potential(bodies):
    total = 0.0
    for i, a in enumerate(bodies):
        for b in bodies[i + 1:]:
            total -= a.mass * b.mass / distance(a.x - b.x, a.y - b.y, a.z - b.z)
    return total


def energy(bodies):
    return sum(body.kinetic() for body in bodies) + potential(bodies)


def make_system(n):
    return [Body(math.cos(i), math.sin(i), 0.1 * i, -math.sin(i) / 3, math.cos(i) / 3,
                 0.0, 1.0 / (i + 1)) for i in range(n)]


def report(history):
    rows = [format_row(step, e) for step, e in history]
    return "\n".join(sorted(rows, key=len))


def format_row(step, e):
    return "%4d %+.9f" % (step, e)


def simulate(bodies, steps, dt):
    history = []
    for step in range(1, steps + 1):
        advance_all(bodies, dt)
        if step % 10 == 0:
            history.append((step, energy(bodies)))
    return history


def advance_all(bodies, dt):
    for body in bodies:
        body.advance(bodies, dt)


def main(steps=200, n=5):
    bodies = make_system(n)
    history = [(0, energy(bodies))] + simulate(bodies, steps, 0.01)
    return report(history)


def profile(func, name):
    """The call-path tree of one call of ``func``, in render_flamegraph's format."""
    def new(frame_name, file, line):
        return {"name": frame_name, "file": file, "line": line, "value": 0.0, "self": 0.0,
                "calls": 0, "ops": {}, "children": {}}

    root = new(name, None, None)
    stack = [[root, time.perf_counter()]]

    def hook(frame, event, arg):
        now = time.perf_counter()
        if event == "call":
            code = frame.f_code
            key = (code.co_filename, code.co_firstlineno, code.co_qualname)
            parent = stack[-1][0]
            child = parent["children"].get(key)
            if child is None:
                child = parent["children"][key] = new(
                    code.co_qualname, os.path.relpath(code.co_filename, ROOT), code.co_firstlineno)
            child["calls"] += 1
            stack.append([child, now])
        elif event == "return" and len(stack) > 1:
            node, start = stack.pop()
            node["value"] += now - start

    sys.setprofile(hook)
    try:
        func()
    finally:
        sys.setprofile(None)
    root["value"] = time.perf_counter() - stack[0][1]
    root["calls"] = 1

    ops = operation_mix(func)

    def finish(node, path):     # children to lists; exclusive = inclusive - children
        node["children"] = [finish(c, path + (key,)) for key, c in node["children"].items()]
        node["self"] = max(0.0, node["value"] - sum(c["value"] for c in node["children"]))
        node["ops"] = ops.get(path, {})
        return node

    return finish(root, ())


class OperationMix(cassette.Context):
    """Counts each operation (callee and operand types) under the call path of
    this file's frames below :func:`operation_mix` that made it:
    ``metadata[path][description]``."""

    def prehook(self, f, /, *args, **kwargs):
        if isinstance(getattr(f, "__func__", f), types.FunctionType):
            return              # a call of Python code: a frame of the tree, not an operation
        path, frame = [], sys._getframe(1)
        while frame.f_code is not operation_mix.__code__:
            code = frame.f_code
            if code.co_filename == __file__:
                path.append((code.co_filename, code.co_firstlineno, code.co_qualname))
            frame = frame.f_back
        module = getattr(f, "__module__", None)
        name = getattr(f, "__qualname__", None) or type(f).__name__
        name = ("operator." if module == "_operator" else "") + name
        shown = [repr(a) if name.endswith("attr") and i == 1 else type(a).__name__
                 for i, a in enumerate(args)]
        mix = self.metadata.setdefault(tuple(reversed(path)), {})
        op = "%s(%s)" % (name, ", ".join(shown))
        mix[op] = mix.get(op, 0) + 1


def operation_mix(func):
    """{call path: {operation: count}} of one run of ``func`` under cassette."""
    ctx = OperationMix(metadata={})
    cassette.overdub(ctx, func)
    return ctx.metadata


# Shows the tooltip of one frame in the screenshot, as if the mouse were on it.
HOVER = """<script>
Array.prototype.forEach.call(document.querySelectorAll(".frame"), function (el) {
  if (el.textContent !== "%s") return;
  var box = el.getBoundingClientRect();
  el.dispatchEvent(new MouseEvent("mousemove", {bubbles: true,
    clientX: box.left + box.width * 0.3, clientY: box.top + 9}));
});
</script>
</body>"""


def main_cli(argv):
    if len(argv) not in (1, 2):
        sys.exit("usage: flamegraph_demo.py OUT.png [PAGE.html]")
    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                   "google-chrome"))), None)
    if browser is None:
        sys.exit("flamegraph_demo.py: no Chromium on PATH")
    main()                      # warm up: the profile should not time first uses
    tree = profile(main, "nbody.py")
    page = render_flamegraph(
        tree, title="nbody.py: 200 steps of 5 bodies "
                    "(times by sys.setprofile, operations by cassette)")
    page = page.replace("</body>", HOVER % "Body.pull")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(argv[1]) if len(argv) > 1 else Path(tmp) / "flame.html"
        path.write_text(page, encoding="utf-8")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--hide-scrollbars",
                        "--user-data-dir=%s" % Path(tmp, "profile"), "--window-size=1200,520",
                        "--screenshot=%s" % Path(argv[0]).resolve(), path.resolve().as_uri()],
                       check=True, stderr=subprocess.DEVNULL)
    print("wrote", argv[0])


if __name__ == "__main__":
    main_cli(sys.argv[1:])
