"""A self-contained HTML flame graph (``python -m cassette profile --format html``).

:func:`render_flamegraph` turns a profile tree into one HTML page that draws
it as a classic flame graph: the root at the bottom, each frame a rectangle
whose width is proportional to its inclusive value, its callees stacked on
it.  Hovering a frame shows its details (file and line, inclusive and
exclusive value with their share of the total, calls, its most frequent
operations); clicking zooms into it, and the *Reset zoom* button or Escape
zooms out; the search box highlights the frames whose name contains the
text and says what share of the total they cover.

The page needs nothing but a browser: its CSS and JavaScript are inline and
it refers to no URL at all.  Every string of the tree reaches the page as
JSON inside a ``<script type="application/json">`` element, with ``<``,
``>``, ``&`` and ``/`` escaped, and is put into the document as text (never
as markup), so names such as ``</script><b>`` show as written.
"""

import html
import json
import math
import re

__all__ = ["render_flamegraph"]

# Each node of the tree, in the order of the records the page reads.
NODE_KEYS = ("name", "file", "line", "value", "self", "calls", "ops", "children")
# How far a node's children (or its own exclusive value) may exceed its
# inclusive value: sums of measured floats differ in their last digits.
TOLERANCE = 1e-6


def render_flamegraph(root: dict, *, title: str, unit: str = "seconds") -> str:
    """A complete, self-contained HTML page (inline CSS and JS, no network) drawing `root` as a flame graph.

    ``root`` is a tree of plain dicts; each node has the keys
    ``name`` (str: a qualified function name, the script's name for the root),
    ``file`` (str or None), ``line`` (int >= 0 or None),
    ``value`` (inclusive amount in ``unit``, a finite number >= 0),
    ``self`` (exclusive amount, finite, >= 0, at most ``value``),
    ``calls`` (int >= 0: the calls merged into the node),
    ``ops`` (dict from an operation's description to its count, an int >= 0)
    and ``children`` (a list of nodes whose values add up to at most
    ``value``; a ``self`` computed as ``value`` minus the children's may
    come out a hair below 0 and wants ``max(0.0, ...)``).  Sums may exceed
    ``value`` by a relative ``TOLERANCE`` (float rounding).  Other keys are
    ignored; a node dict may appear only once in the tree.

    A frame is drawn ``value / root["value"]`` of the page wide (the root
    alone, full width, when the root's value is 0); frames narrower than
    half a pixel are left out until zoomed into.

    ``title`` heads the page; ``unit`` names what ``value`` measures:
    ``"seconds"`` is shown scaled (s, ms, µs, ns), any other unit as
    numbers followed by it.

    Raises ``ValueError`` naming the node (``root.children[2]``…) and the
    problem when the tree is malformed, ``TypeError`` when ``title`` or
    ``unit`` is not a string.  The tree is not modified.
    """
    for label, text in (("title", title), ("unit", unit)):
        if not isinstance(text, str):
            raise TypeError("%s must be a str, not %s" % (label, type(text).__name__))
    data = {"unit": unit, "nodes": _records(root)}
    encoded = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    # The characters that could end the <script> element or read as markup
    # are escaped in JSON's own way; they occur only inside JSON strings.
    for char, escape in (("/", "\\/"), ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        encoded = encoded.replace(char, escape)
    fields = {"TITLE": html.escape(title), "UNIT": html.escape(unit),
              "CSS": _CSS, "JS": _JS, "DATA": encoded}
    return re.sub(r"@(TITLE|UNIT|CSS|JS|DATA)@", lambda m: fields[m.group(1)], _PAGE)


def _records(root):
    """The validated tree in preorder, one list per node:
    ``[name, file, line, value, self, calls, ops, number of children]``."""
    records = []
    seen = set()                # id() of the nodes visited
    visits = []                 # (visit of the parent or None, index among its children)
    stack = [(root, None, 0)]
    while stack:
        node, parent, index = stack.pop()
        visits.append((parent, index))
        problem = "appears more than once in the tree" if id(node) in seen else _problem(node)
        if problem:
            raise ValueError("flame graph %s: %s" % (_path(visits), problem))
        seen.add(id(node))
        children = node["children"]
        records.append([node[key] for key in NODE_KEYS[:-1]] + [len(children)])
        here = len(visits) - 1
        stack.extend((child, here, i) for i, child in reversed(list(enumerate(children))))
    return records


def _problem(node):
    """What is wrong with ``node`` itself (not its children's insides), or None."""
    if not isinstance(node, dict):
        return "must be a dict, not %s" % type(node).__name__
    missing = [key for key in NODE_KEYS if key not in node]
    if missing:
        return "missing key%s %s" % ("s" if len(missing) > 1 else "",
                                     ", ".join(map(repr, missing)))
    name, file, line, value, own, calls, ops, children = (node[k] for k in NODE_KEYS)
    if not isinstance(name, str):
        return "'name' must be a str, not %s" % type(name).__name__
    if file is not None and not isinstance(file, str):
        return "'file' must be a str or None, not %s" % type(file).__name__
    if line is not None and not _is_count(line):
        return "'line' must be an int >= 0 or None, not %r" % (line,)
    for key, amount in (("value", value), ("self", own)):
        if not _is_amount(amount):
            return "%r must be a finite number >= 0, not %r" % (key, amount)
    if own > value * (1 + TOLERANCE):
        return "'self' (%r) exceeds 'value' (%r)" % (own, value)
    if not _is_count(calls):
        return "'calls' must be an int >= 0, not %r" % (calls,)
    if not isinstance(ops, dict):
        return "'ops' must be a dict, not %s" % type(ops).__name__
    for op, count in ops.items():
        if not isinstance(op, str) or not _is_count(count):
            return "'ops' must map str to int >= 0, not %r: %r" % (op, count)
    if not isinstance(children, (list, tuple)):
        return "'children' must be a list, not %s" % type(children).__name__
    below = math.fsum(c["value"] for c in children
                      if isinstance(c, dict) and _is_amount(c.get("value")))
    if below > value * (1 + TOLERANCE):
        return ("its children's values add up to %r, more than its 'value' %r"
                % (below, value))
    return None


def _path(visits):
    """``root.children[1].children[0]``: where the last node visited is."""
    steps = []
    parent, index = visits[-1]
    while parent is not None:
        steps.append(".children[%d]" % index)
        parent, index = visits[parent]
    return "root" + "".join(reversed(steps))


def _is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _is_amount(x):
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x) and x >= 0)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>@CSS@</style>
</head>
<body>
<header>
<h1>@TITLE@</h1>
<div class="controls">
<button id="reset" type="button" disabled>Reset zoom</button>
<input id="search" type="search" placeholder="Search frames" aria-label="Search frames">
<span id="status"></span>
</div>
</header>
<div id="chart" role="img" aria-label="flame graph"></div>
<p class="hint">Width: inclusive @UNIT@. Hover a frame for details; click to zoom in;
Escape or Reset zoom to zoom out.</p>
<div id="tip" hidden></div>
<noscript>This flame graph is drawn by JavaScript, which is turned off.</noscript>
<script type="application/json" id="flame-data">@DATA@</script>
<script>@JS@</script>
</body>
</html>
"""

_CSS = """
body { margin: 10px 12px; font: 13px/1.35 "DejaVu Sans", system-ui, sans-serif;
       color: #222; background: #fff; }
h1 { font-size: 16px; margin: 0 0 8px; overflow-wrap: anywhere; }
.controls { display: flex; gap: 10px; align-items: center; margin-bottom: 10px; }
#search { width: 220px; }
#status { color: #555; }
#chart { position: relative; width: 100%; overflow: hidden; }
.frame { position: absolute; height: 18px; box-sizing: border-box; padding: 0 4px;
         border-right: 1px solid #fff; border-top: 1px solid #fff;
         font: 12px/17px "DejaVu Sans Mono", monospace; color: #1a1a1a;
         white-space: nowrap; overflow: hidden; text-overflow: ellipsis; cursor: pointer; }
.frame:hover { filter: brightness(0.85); }
.frame.faded { opacity: 0.5; }
.frame.match { background: #c86ee6 !important; }
.frame.unlabelled { color: transparent; }
.hint { color: #666; font-size: 12px; }
#tip { position: fixed; z-index: 1; max-width: 520px; padding: 6px 9px; font-size: 12px;
       background: #fffff4; border: 1px solid #aaa; box-shadow: 0 2px 6px rgba(0,0,0,.2);
       pointer-events: none; }
#tip .name { font-weight: bold; overflow-wrap: anywhere; }
#tip .file, #tip .ops { color: #555; overflow-wrap: anywhere; }
"""

_JS = r"""
(function () {
  "use strict";
  var ROW = 18;           // pixels per stack level
  var MIN_PX = 0.5;       // narrower frames are not drawn
  var LABEL_PX = 26;      // narrower frames show no label
  var TOP_OPS = 6;        // operations listed in the tooltip
  var data = JSON.parse(document.getElementById("flame-data").textContent);
  var unit = data.unit;
  var chart = document.getElementById("chart");
  var tip = document.getElementById("tip");
  var reset = document.getElementById("reset");
  var search = document.getElementById("search");
  var status = document.getElementById("status");

  // Rebuild the tree from its preorder records; x is a node's offset from
  // the root's left edge, in units of value.
  var nodes = [], open = [];
  data.nodes.forEach(function (r, i) {
    var node = {id: i, name: r[0], file: r[1], line: r[2], value: r[3], self: r[4],
                calls: r[5], ops: r[6], pending: r[7], children: [], parent: null,
                depth: 0, x: 0, next: 0};
    while (open.length && open[open.length - 1].pending === 0) open.pop();
    if (open.length) {
      var parent = open[open.length - 1];
      parent.pending--;
      parent.children.push(node);
      node.parent = parent;
      node.depth = parent.depth + 1;
      node.x = parent.x + parent.next;
      parent.next += node.value;
    }
    nodes.push(node);
    open.push(node);
  });
  var root = nodes[0], zoomed = root, query = "";

  function colour(name) {     // warm colours, fixed per name
    var h = 2166136261;   // FNV-1a
    for (var i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    h = (h ^ (h >>> 15)) >>> 0;
    return "hsl(" + (4 + h % 48) + "," + (70 + (h >>> 6) % 20) + "%," +
      (52 + (h >>> 11) % 16) + "%)";
  }

  function matches(node) {
    return query !== "" && node.name.toLowerCase().indexOf(query) >= 0;
  }

  function render() {
    var width = chart.clientWidth, base = zoomed.value, drawn = [], top = 0;
    for (var a = zoomed.parent; a; a = a.parent) drawn.push([a, 0, 1]);
    var todo = [zoomed];
    while (todo.length) {
      var n = todo.pop();
      var w = base > 0 ? n.value / base : (n === zoomed ? 1 : 0);
      if (n !== zoomed && w * width < MIN_PX) continue;
      drawn.push([n, base > 0 ? (n.x - zoomed.x) / base : 0, w]);
      for (var c = n.children.length - 1; c >= 0; c--) todo.push(n.children[c]);
    }
    var frag = document.createDocumentFragment();
    drawn.forEach(function (d) {
      var n = d[0], el = document.createElement("div");
      el.className = "frame";
      if (n.depth < zoomed.depth) el.classList.add("faded");
      if (d[2] * width < LABEL_PX) el.classList.add("unlabelled");
      if (matches(n)) el.classList.add("match");
      el.style.left = d[1] * 100 + "%";
      el.style.width = d[2] * 100 + "%";
      el.style.bottom = n.depth * ROW + "px";
      el.style.background = colour(n.name);
      el.dataset.id = n.id;
      el.textContent = n.name;
      frag.appendChild(el);
      top = Math.max(top, n.depth);
    });
    chart.textContent = "";
    chart.style.height = (top + 1) * ROW + "px";
    chart.appendChild(frag);
    reset.disabled = zoomed === root;
    report();
  }

  function report() {       // the search's share of the total
    if (query === "") { status.textContent = ""; return; }
    var count = 0, covered = 0, todo = [[root, false]];
    while (todo.length) {
      var item = todo.pop(), n = item[0], inside = item[1];
      if (matches(n)) { count++; if (!inside) covered += n.value; inside = true; }
      n.children.forEach(function (c) { todo.push([c, inside]); });
    }
    status.textContent = count + " matching frame" + (count === 1 ? "" : "s") +
      (count ? ", " + percent(covered) + " of the total" : "");
  }

  function number(v) {
    return v >= 1e4 ? Math.round(v).toLocaleString("en-US") : String(+v.toPrecision(4));
  }

  function amount(v) {
    if (unit !== "seconds") return number(v) + " " + unit;
    var scales = [[1, "s"], [1e-3, "ms"], [1e-6, "\u00b5s"], [1e-9, "ns"]];
    for (var i = 0; i < scales.length - 1 && v < scales[i][0]; i++);
    return (v === 0 ? "0" : number(v / scales[i][0])) + " " + scales[i][1];
  }

  function percent(v) {
    return root.value > 0 ? (100 * v / root.value).toFixed(2) + "%" : "0%";
  }

  function line(parent, cls, text) {
    var el = document.createElement("div");
    if (cls) el.className = cls;
    el.textContent = text;
    parent.appendChild(el);
  }

  function describe(n) {
    tip.textContent = "";
    line(tip, "name", n.name);
    line(tip, "file", n.file === null ? "(no source file)" :
         n.file + (n.line === null ? "" : ":" + n.line));
    line(tip, "", "inclusive: " + amount(n.value) + " (" + percent(n.value) + ")");
    line(tip, "", "exclusive: " + amount(n.self) + " (" + percent(n.self) + ")");
    line(tip, "", "calls: " + number(n.calls));
    var ops = Object.keys(n.ops).sort(function (a, b) {
      return n.ops[b] - n.ops[a] || (a < b ? -1 : a > b ? 1 : 0);
    });
    if (ops.length) {
      line(tip, "", "top operations:");
      ops.slice(0, TOP_OPS).forEach(function (op) {
        line(tip, "ops", "\u00a0\u00a0" + number(n.ops[op]) + " \u00d7 " + op);
      });
      if (ops.length > TOP_OPS) line(tip, "ops", "\u00a0\u00a0\u2026 and " +
                                     (ops.length - TOP_OPS) + " more");
    }
  }

  function frameAt(event) {
    var el = event.target.closest ? event.target.closest(".frame") : null;
    return el ? nodes[+el.dataset.id] : null;
  }

  chart.addEventListener("mousemove", function (event) {
    var n = frameAt(event);
    if (!n) { tip.hidden = true; return; }
    describe(n);
    tip.hidden = false;
    // Below and right of the pointer; else left, above, or as low as fits.
    var w = tip.offsetWidth, h = tip.offsetHeight, x = event.clientX + 14, y = event.clientY + 14;
    if (x + w > window.innerWidth) x = Math.max(0, event.clientX - w - 14);
    if (y + h > window.innerHeight) {
      y = event.clientY - h - 14;
      if (y < 0) y = Math.max(0, window.innerHeight - h);
    }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  chart.addEventListener("mouseleave", function () { tip.hidden = true; });
  chart.addEventListener("click", function (event) {
    var n = frameAt(event);
    if (n) { zoomed = n; render(); }
  });
  reset.addEventListener("click", function () { zoomed = root; render(); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { zoomed = root; render(); }
  });
  search.addEventListener("input", function () {
    query = search.value.trim().toLowerCase();
    render();
  });
  window.addEventListener("resize", render);
  render();
})();
"""
