"""The HTML flame graph (``cassette/cli/flamegraph.py``).

The page's data and markup are checked on hand-built trees (every node
reaches the page intact, hostile strings stay text, nothing refers to the
network, malformed trees are refused naming the node); then a real headless
Chromium draws it: the DOM after the page's script ran must hold one frame per
node with its name, at the left offset and width the tree's values give; a
screenshot's pixels must show those frames at those places; and synthetic
events (hover, search, click, reset) must give the tooltip, the highlighting
and the zoom the tree implies.  The browser tests skip only when no Chromium
is installed (``tools/dev.py test`` installs Debian's ``chromium`` as root).
"""

import html.parser
import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from cassette.cli.flamegraph import render_flamegraph


def node(name, value, children=(), own=None, calls=1, ops=None, file="nbody.py", line=1):
    """A tree node; its exclusive value defaults to what its children leave."""
    children = list(children)
    if own is None:
        own = value - sum(child["value"] for child in children)
    return {"name": name, "file": file, "line": line, "value": value, "self": own,
            "calls": calls, "ops": dict(ops or {}), "children": children}


ADVANCE_OPS = {"operator.mul(float, float)": 1200, "operator.sub(float, float)": 900,
               "operator.add(float, float)": 800, "getattr(Body, 'x')": 300,
               "setattr(Body, 'vx')": 250, "math.sqrt(float)": 100,
               "operator.truediv(float, float)": 50, "len(list)": 7}


def sample_tree():
    """Inclusive values in milliseconds: prog 10, main 9 (advance 6, energy 2), setup 0.5."""
    return node("nbody.py", 0.010, line=None, children=[
        node("main", 0.009, line=10, children=[
            node("Body.advance", 0.006, calls=100, line=42, ops=ADVANCE_OPS),
            node("Body.energy", 0.002, calls=2, line=60)]),
        node("setup", 0.0005, line=5, file=None)])


def layout(tree):
    """{name: (left, width, depth)}: each frame's place as fractions of the
    root's width, children left to right from their parent's left edge."""
    places = {}

    def place(n, left, depth):
        places[n["name"]] = (left, n["value"] / tree["value"], depth)
        for child in n["children"]:
            place(child, left, depth + 1)
            left += child["value"] / tree["value"]

    place(tree, 0.0, 0)
    return places


def page_data(page):
    """The tree the page carries, rebuilt from its preorder records."""
    match = re.search(r'<script type="application/json" id="flame-data">(.*?)</script>',
                      page, re.S)
    records = json.loads(match.group(1))["nodes"]
    keys = ("name", "file", "line", "value", "self", "calls", "ops")

    def build(i):
        record = records[i]
        n = dict(zip(keys, record[:7]), children=[])
        i += 1
        for _ in range(record[7]):
            child, i = build(i)
            n["children"].append(child)
        return n, i

    tree, end = build(0)
    assert end == len(records)
    return tree, len(records)


# --------------------------------------------------------------------------
# The page's markup and data


def test_every_node_reaches_the_page_intact():
    tree = sample_tree()
    page = render_flamegraph(tree, title="nbody profile")
    carried, count = page_data(page)
    assert count == 5
    assert carried == tree
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>nbody profile</title>" in page


def test_hostile_strings_stay_text():
    hostile = "</script><script>alert('x')</script><!-- & \"q\" \u2028 \u00e9"
    tree = node(hostile, 2.0, file="<b>&amp;.py", children=[
        node("</SCRIPT >", 1.0, ops={"<op> & 'x'": 3})])
    page = render_flamegraph(tree, title="<b>title</b> & \"quotes\"", unit="<i>ops</i>")
    # Only the page's own two script elements open and close.
    assert page.lower().count("<script") == 2
    assert page.lower().count("</script") == 2
    assert "<!--" not in page and "<b>" not in page and "<i>" not in page
    assert "<title>&lt;b&gt;title&lt;/b&gt; &amp; &quot;quotes&quot;</title>" in page
    assert "Width: inclusive &lt;i&gt;ops&lt;/i&gt;." in page
    assert page_data(page)[0] == tree


def test_no_network_references():
    # Even URLs in the data do not appear as such: JSON's "\/" escapes them.
    tree = node("https://example.org/x", 1.0, file="http://host/y.py")
    page = render_flamegraph(tree, title="nbody.py")
    assert not re.search(r"(?i)\b(https?|ftp|file|wss?)://", page)
    for reference in ("src=", "href=", "@import", "url(", "fetch(", "XMLHttpRequest", "<link"):
        assert reference not in page
    assert page_data(page)[0] == tree


def test_deep_trees_need_no_recursion():
    depth = 5000
    tree = node("leaf", 1.0)
    for i in range(depth - 1):
        tree = node("f%d" % i, 1.0, children=[tree])
    page = render_flamegraph(tree, title="deep")
    records = json.loads(re.search(r'id="flame-data">(.*?)</script>', page).group(1))["nodes"]
    assert len(records) == depth
    assert [r[7] for r in records] == [1] * (depth - 1) + [0]


def test_the_tree_is_not_modified():
    tree = sample_tree()
    before = json.dumps(tree, sort_keys=True)
    render_flamegraph(tree, title="t")
    assert json.dumps(tree, sort_keys=True) == before


def malformed(edit):
    tree = sample_tree()
    edit(tree)
    return tree


def shared_child(tree):
    tree["children"][0]["children"].append(tree["children"][1])


def cycle(tree):
    tree["children"][1].update(value=0.0, self=0.0)
    tree["children"][1]["children"].append(tree["children"][1])


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.pop("value"), r"root: missing key 'value'$"),
    (lambda t: [t.pop("calls"), t.pop("ops")], r"root: missing keys 'calls', 'ops'"),
    (lambda t: t["children"][0]["children"][1].update(value=-1.0),
     r"root\.children\[0\]\.children\[1\]: 'value' must be a finite number >= 0, not -1\.0"),
    (lambda t: t["children"][1].update(self=float("nan")), r"root\.children\[1\]: 'self' must"),
    (lambda t: t["children"].append("main"), r"root\.children\[2\]: must be a dict, not str"),
    (lambda t: t["children"][0].update(children={}),
     r"root\.children\[0\]: 'children' must be a list"),
    (lambda t: t.update(name=None), r"root: 'name' must be a str, not NoneType"),
    (lambda t: t.update(file=3), r"root: 'file' must be a str or None"),
    (lambda t: t.update(line=-2), r"root: 'line' must be an int >= 0 or None, not -2"),
    (lambda t: t.update(calls=True), r"root: 'calls' must be an int >= 0, not True"),
    (lambda t: t.update(calls=1.5), r"root: 'calls' must be an int >= 0"),
    (lambda t: t.update(ops=[]), r"root: 'ops' must be a dict, not list"),
    (lambda t: t["children"][0]["children"][0]["ops"].update(x=-1),
     r"root\.children\[0\]\.children\[0\]: 'ops' must map str to int >= 0, not 'x': -1"),
    (lambda t: t.update(self=0.02), r"root: 'self' \(0\.02\) exceeds 'value' \(0\.01\)"),
    (lambda t: t["children"][0].update(value=0.001),
     r"root\.children\[0\]: its children's values add up to 0\.008, more than its 'value' 0\.001"),
    (shared_child, r"root\.children\[1\]: appears more than once"),
    (cycle, r"root\.children\[1\]\.children\[0\]: appears more than once"),
])
def test_malformed_trees_are_refused_naming_the_node(edit, message):
    with pytest.raises(ValueError, match="^flame graph " + message):
        render_flamegraph(malformed(edit), title="bad")


def test_the_root_must_be_a_dict_and_the_title_a_string():
    with pytest.raises(ValueError, match=r"^flame graph root: must be a dict, not list$"):
        render_flamegraph([], title="bad")
    with pytest.raises(TypeError, match="title must be a str, not bytes"):
        render_flamegraph(sample_tree(), title=b"bad")
    with pytest.raises(TypeError, match="unit must be a str, not NoneType"):
        render_flamegraph(sample_tree(), title="t", unit=None)


def test_rounding_in_measured_sums_is_tolerated():
    # Three children of 0.1 add up to 0.30000000000000004 > 0.3.
    tree = node("p", 0.3, children=[node(c, 0.1) for c in "abc"], own=0.0)
    assert page_data(render_flamegraph(tree, title="t"))[1] == 4


# --------------------------------------------------------------------------
# In a real browser

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1200, 600)


def find_browser():
    for name in BROWSERS:
        found = shutil.which(name) or shutil.which(name, path="/usr/bin")
        if found:
            return found
    pytest.skip("no Chromium installed (none of %s on PATH or in /usr/bin); "
                "`tools/dev.py test` installs Debian's chromium when run as root"
                % ", ".join(BROWSERS))


def browse(tmp_path, page, *options):
    """Run headless Chromium on ``page`` (HTML text) with ``options``;
    return its stdout."""
    browser = find_browser()
    path = tmp_path / "flame.html"
    path.write_text(page, encoding="utf-8")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--hide-scrollbars",
               "--user-data-dir=%s" % (tmp_path / "profile"),
               "--window-size=%d,%d" % WINDOW] + list(options) + [path.as_uri()]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


class Frames(html.parser.HTMLParser):
    """The frames (``div.frame``) of a dumped DOM, and the text of ``#result``."""

    def __init__(self, dom):
        super().__init__()
        self.frames = []        # [(text, {style property: value}, classes)]
        self.result = ""
        self.inside = None
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "div" and "frame" in classes:
            style = dict(part.split(":", 1) for part in attrs["style"].split(";") if ":" in part)
            style = {key.strip(): value.strip() for key, value in style.items()}
            self.frames.append(["", style, classes])
            self.inside = "frame"
        elif tag == "pre" and attrs.get("id") == "result":
            self.inside = "result"

    def handle_endtag(self, tag):
        self.inside = None

    def handle_data(self, data):
        if self.inside == "frame":
            self.frames[-1][0] += data
        elif self.inside == "result":
            self.result += data


def percent(text):
    assert text.endswith("%"), text
    return float(text[:-1]) / 100


def test_browser_draws_each_frame_in_proportion(tmp_path):
    tree = sample_tree()
    frames = Frames(browse(tmp_path, render_flamegraph(tree, title="nbody"), "--dump-dom")).frames
    expected = layout(tree)
    assert sorted(text for text, _, _ in frames) == sorted(expected)
    rows = {}
    for text, style, _ in frames:
        left, width, depth = expected[text]
        assert percent(style["left"]) == pytest.approx(left, abs=1e-9), text
        assert percent(style["width"]) == pytest.approx(width, abs=1e-9), text
        rows[text] = float(style["bottom"][:-2])
    # The root at the bottom, each level one row above its parent's.
    assert rows["nbody.py"] == 0
    assert rows["main"] == rows["setup"] > 0
    assert rows["Body.advance"] == rows["Body.energy"] == 2 * rows["main"]


def test_browser_shows_hostile_names_as_text(tmp_path):
    hostile = "</script><b id=\"x\">bold</b><!-- & 'q' \u00e9"
    tree = node("prog.py", 2.0, children=[node(hostile, 1.0), node("<img src=x>", 0.5)])
    dom = browse(tmp_path, render_flamegraph(tree, title="<b>t</b>"), "--dump-dom")
    assert sorted(text for text, _, _ in Frames(dom).frames) == sorted(
        ["prog.py", hostile, "<img src=x>"])
    assert not re.search(r"<(b|img)[\s>]", dom)      # no element was made of them


def read_png(path):
    """(width, height, rows of (r, g, b) pixels) of an 8-bit RGB or RGBA PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunks.setdefault(kind, []).append(data[at + 8:at + 8 + length])
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = width * step
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - step] if i >= step else 0
            b = previous[i]
            c = previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, step)])
        previous = line
    return width, height, rows


def coloured_runs(row):
    """[start, end) of each stretch of pixels that are not (near) white."""
    runs, start = [], None
    for x, pixel in enumerate(row + [(255, 255, 255)]):
        if min(pixel) < 235 and start is None:
            start = x
        elif min(pixel) >= 235 and start is not None:
            runs.append((start, x))
            start = None
    return runs


def test_browser_screenshot_shows_the_frames(tmp_path):
    tree = sample_tree()
    shot = tmp_path / "shot.png"
    browse(tmp_path, render_flamegraph(tree, title="nbody"), "--screenshot=%s" % shot)
    width, height, rows = read_png(shot)
    assert (width, height) == WINDOW
    colours = {pixel for row in rows for pixel in row}
    assert len(colours) >= 10                       # not blank
    # The root: the rows holding the longest coloured stretch, the chart's width.
    longest = {y: max((e - s for s, e in coloured_runs(row)), default=0)
               for y, row in enumerate(rows)}
    widest = max(longest.values())
    assert widest > 0.9 * width
    root_rows = [y for y, n in longest.items() if n == widest]
    top = min(root_rows)
    (chart_left, chart_right), = [run for run in coloured_runs(rows[top]) if
                                  run[1] - run[0] == widest]
    chart_width = chart_right - chart_left + 1      # the frame's 1px white border
    # The levels above, each a band of coloured rows under a white one (the
    # frames' top borders): their frames' coloured stretches start and end
    # where the tree's values put them, less each frame's 1px white border.
    expected = layout(tree)
    y = top - 1
    for depth in (1, 2):
        while not coloured_runs(rows[y]):
            y -= 1
        bottom = y
        while coloured_runs(rows[y]):
            y -= 1
        runs = coloured_runs(rows[(y + 1 + bottom) // 2])
        want = sorted((chart_left + left * chart_width, chart_left + (left + w) * chart_width - 1)
                      for left, w, d in expected.values() if d == depth)
        assert len(runs) == len(want), (depth, runs, want)
        for (start, end), (x0, x1) in zip(runs, want):
            assert abs(start - x0) <= 2 and abs(end - x1) <= 2, (depth, runs, want)


INTERACT = """<script>
(function () {
  function frame(name) {
    return Array.prototype.filter.call(document.querySelectorAll(".frame"),
      function (el) { return el.textContent === name; })[0];
  }
  function state() {
    return Array.prototype.map.call(document.querySelectorAll(".frame"), function (el) {
      return [el.textContent, el.style.left, el.style.width, el.className];
    });
  }
  var out = {}, tip = document.getElementById("tip"), search = document.getElementById("search");
  var reset = document.getElementById("reset");
  var box = frame("Body.advance").getBoundingClientRect();
  frame("Body.advance").dispatchEvent(new MouseEvent("mousemove",
    {bubbles: true, clientX: box.left + 5, clientY: box.top + 5}));
  out.tip = [tip.hidden, Array.prototype.map.call(tip.children,
                                                  function (c) { return c.textContent; })];
  search.value = " ENERGY";
  search.dispatchEvent(new Event("input", {bubbles: true}));
  out.search = [state(), document.getElementById("status").textContent];
  search.value = "";
  search.dispatchEvent(new Event("input", {bubbles: true}));
  frame("main").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.zoomed = [state(), reset.disabled];
  reset.click();
  out.reset = [state(), reset.disabled];
  var pre = document.createElement("pre");
  pre.id = "result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
</body>"""


def test_browser_hover_search_zoom_and_reset(tmp_path):
    tree = sample_tree()
    page = render_flamegraph(tree, title="nbody").replace("</body>", INTERACT)
    out = json.loads(Frames(browse(tmp_path, page, "--dump-dom")).result)

    hidden, lines = out["tip"]
    assert not hidden
    ops = sorted(ADVANCE_OPS.items(), key=lambda item: -item[1])
    assert lines == [
        "Body.advance", "nbody.py:42",
        "inclusive: 6 ms (60.00%)", "exclusive: 6 ms (60.00%)", "calls: 100",
        "top operations:"] + [
        "\u00a0\u00a0%d \u00d7 %s" % (count, op) for op, count in ops[:6]] + [
        "\u00a0\u00a0\u2026 and 2 more"]

    frames, status = out["search"]
    matching = [text for text, _, _, classes in frames if "match" in classes.split()]
    assert matching == ["Body.energy"]
    assert status == "1 matching frame, 20.00% of the total"

    def places(frames):
        return {text: (percent(left), percent(width), "faded" in classes.split())
                for text, left, width, classes in frames}

    frames, disabled = out["zoomed"]
    zoomed = places(frames)
    assert not disabled
    assert sorted(zoomed) == ["Body.advance", "Body.energy", "main", "nbody.py"]
    assert zoomed["nbody.py"] == (0, 1, True)           # the ancestor spans, faded
    assert zoomed["main"] == (0, 1, False)
    assert zoomed["Body.advance"][:2] == pytest.approx((0, 6 / 9))
    assert zoomed["Body.energy"][:2] == pytest.approx((6 / 9, 2 / 9))

    frames, disabled = out["reset"]
    assert disabled
    unzoomed = places(frames)
    assert sorted(unzoomed) == sorted(layout(tree))
    for text, (left, width, depth) in layout(tree).items():
        assert unzoomed[text] == (pytest.approx(left), pytest.approx(width), False)


# --------------------------------------------------------------------------
# tools/flamegraph_demo.py, which makes docs/flamegraph.png


def test_the_demo_profile_counts_calls_and_operations(tmp_path):
    """The page docs/flamegraph.png shows: the command line's profile of
    tools/nbody_demo.py, its calls and operations counted by hand."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tools" / "flamegraph_demo.py"
    spec = importlib.util.spec_from_file_location("flamegraph_demo", path)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    steps, n = 10, 3
    page = tmp_path / "nbody.html"
    demo.profile_page(page, steps, n)
    tree = page_data(page.read_text(encoding="utf-8"))[0]

    def child(node, name):
        (found,) = [c for c in node["children"] if c["name"] == name]
        return found

    main = child(tree, "main")
    advance = child(child(child(main, "simulate"), "advance_all"), "Body.advance")
    pull = child(advance, "Body.pull")
    distance = child(pull, "distance")
    assert (advance["calls"], pull["calls"], distance["calls"]) == (
        steps * n, steps * n * (n - 1), steps * n * (n - 1))
    # (A comprehension's function is no call on 3.11 either: cassette
    # shows every release's calls as 3.12's inlined comprehensions make them.)
    system = child(main, "make_system")
    assert child(child(system, "Body"), "Body.__init__")["calls"] == n
    # Body.pull: dt * other.mass, dx * mag, dy * mag, dz * mag; ** 3 once.
    assert pull["ops"]["operator.mul(float, float)"] == 4 * pull["calls"]
    assert pull["ops"]["operator.pow(float, int)"] == pull["calls"]
    assert pull["ops"]["getattr(Body, 'x')"] == 2 * pull["calls"]
    assert distance["ops"] == {"operator.mul(float, float)": 3 * distance["calls"],
                               "operator.add(float, float)": 2 * distance["calls"]}
    assert [(c["name"], c["calls"]) for c in distance["children"]] == [
        ("math.sqrt", distance["calls"])]
    assert pull["value"] >= distance["value"] > 0
