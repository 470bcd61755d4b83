"""Real-library workloads: code people run, none of it written here.

Each workload calls a library — the Python standard library, or numpy —
the way its users call it, on inputs generated here with fixed seeds (no
time, date or randomness left to chance), so that every call returns the
same value.  The workload functions below are only drivers: a few lines of
calls into the library, whose own code (pure Python where the library has
it, e.g. ``json``'s streaming encoder and Python scanner, ``difflib``,
``email``, ``fractions``, ``_pydecimal``, ``statistics``, ``dataclasses``,
``ast.unparse``, ``ipaddress``, numpy's Python layers) does the work.

A workload is a :class:`workloads.Workload`: a callable, its arguments and
``observe``, which turns the return value into something comparable with
``==`` (the plain call's observed value is the reference every variant must
reproduce).  Sizes are chosen so that a plain call takes a few milliseconds
on Python 3.12.

``bench/test_libraries.py`` runs them plain, ``recursion-only`` and
``counting-prehook`` (see bench/README.md, "Real libraries").
"""

import ast
import bisect
import collections
import dataclasses
import difflib
import email
import email.message
import email.policy
import fractions
import heapq
import io
import ipaddress
import json
import json.decoder
import json.scanner
import random
import statistics
import textwrap
import tokenize

import _pydecimal

from workloads import Workload

# A small vocabulary for generated text (deterministic: drawn with
# random.Random(seed) at build time, never inside a measured call).
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo "
         "lima mike november oscar papa quebec romeo sierra tango uniform victor "
         "whiskey xray yankee zulu cassette overdub context prehook posthook "
         "execute recursion bytecode rewrite runtime dispatch tag metadata").split()


def _sentence(rng, low=4, high=12):
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def _module_source(module):
    with open(module.__file__, encoding="utf-8") as source:
        return source.read()


# --------------------------------------------------------------------------
# json: the streaming encoder (JSONEncoder.iterencode: the pure-Python
# _make_iterencode) and a decoder with the pure-Python scanner and string
# parser (json.scanner.py_make_scanner, json.decoder.py_scanstring)


def json_document(seed=1):
    rng = random.Random(seed)
    return {
        "name": "cassette-bench",
        "version": [1, 2, 3],
        "enabled": True,
        "nothing": None,
        "records": [
            {"id": i,
             "label": _sentence(rng, 2, 5),
             "score": round(rng.random() * 100, 6),
             "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 4))],
             "owner": {"name": rng.choice(WORDS).title(), "admin": rng.random() < 0.2,
                       "quota": rng.randint(0, 10 ** 6)},
             "note": "tab\tquote\" unicode \u00e9\u4e2d" if i % 7 == 0 else ""}
            for i in range(60)
        ],
        "matrix": [[rng.randint(-50, 50) for _ in range(8)] for _ in range(8)],
    }


def json_roundtrip(document):
    encoder = json.JSONEncoder(sort_keys=True)
    compact = "".join(encoder.iterencode(document))
    pretty = json.JSONEncoder(indent=2, ensure_ascii=False).encode(document)
    decoder = json.JSONDecoder()
    decoder.parse_string = json.decoder.py_scanstring
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    back = decoder.decode(compact)
    again = decoder.decode(pretty)
    return compact, pretty, back, again == back == document


def json_workload():
    return Workload("json", json_roundtrip, (json_document(),))


# --------------------------------------------------------------------------
# difflib


def difflib_texts(seed=2, lines=300):
    rng = random.Random(seed)
    a = [_sentence(rng) for _ in range(lines)]
    b = []
    for line in a:
        roll = rng.random()
        if roll < 0.06:
            continue                                  # deleted
        if roll < 0.12:
            b.append(_sentence(rng))                  # replaced
        elif roll < 0.16:
            b.append(line)
            b.append(_sentence(rng))                  # inserted after
        elif roll < 0.22:
            words = line.split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            b.append(" ".join(words))                 # one word changed
        else:
            b.append(line)
    return a, b


def difflib_compare(a, b):
    matcher = difflib.SequenceMatcher(None, a, b)
    opcodes = matcher.get_opcodes()
    diff = list(difflib.unified_diff(a, b, "before.txt", "after.txt", lineterm=""))
    # Character-level ratios of the replaced lines, as a diff viewer does.
    ratios = [round(difflib.SequenceMatcher(None, a[i], b[j]).ratio(), 12)
              for tag, i1, i2, j1, j2 in opcodes if tag == "replace"
              for i, j in zip(range(i1, i2), range(j1, j2))]
    return opcodes, diff, ratios


def difflib_workload():
    return Workload("difflib", difflib_compare, difflib_texts())


# --------------------------------------------------------------------------
# email: generate a multipart message (EmailMessage, policy default) and
# parse it back


def email_roundtrip(paragraphs, attachment):
    policy = email.policy.default
    msg = email.message.EmailMessage(policy=policy)
    msg["From"] = "Ada Lovelace <ada@example.org>"
    msg["To"] = "Charles Babbage <charles@example.org>, team@example.org"
    msg["Subject"] = "Notes on the analytical engine \u2014 r\u00e9sum\u00e9"
    msg["Message-ID"] = "<bench-1@example.org>"
    text = "\n\n".join(paragraphs)
    msg.set_content(text)
    msg.add_alternative("<html><body>" + "".join(f"<p>{p}</p>" for p in paragraphs)
                        + "</body></html>", subtype="html")
    msg.add_attachment(attachment, maintype="application", subtype="octet-stream",
                       filename="engine.bin")
    msg.add_attachment("name,value\n" + "".join(f"row{i},{i * i}\n" for i in range(40)),
                       subtype="csv", filename="table.csv")
    # Fixed boundaries: the generator would otherwise draw them at random.
    for number, part in enumerate(msg.walk()):
        if part.is_multipart():
            part.set_boundary(f"===============bench{number}==")
    wire = msg.as_string()

    parsed = email.message_from_string(wire, policy=policy)
    summary = [(parsed["From"].addresses[0].display_name,
                [str(a) for a in parsed["To"].addresses], str(parsed["Subject"]))]
    for part in parsed.walk():
        if part.is_multipart():
            summary.append((part.get_content_type(), None))
        else:
            content = part.get_content()
            summary.append((part.get_content_type(), part.get_filename(),
                            content if isinstance(content, str) else bytes(content)))
    body = parsed.get_body(preferencelist=("plain",)).get_content()
    return wire, summary, body == text + "\n"


def email_workload():
    rng = random.Random(3)
    paragraphs = [" ".join(_sentence(rng) for _ in range(4)) for _ in range(6)]
    attachment = bytes(rng.randrange(256) for _ in range(1500))
    return Workload("email", email_roundtrip, (paragraphs, attachment))


# --------------------------------------------------------------------------
# fractions: a harmonic sum and friends


def fractions_harmonic(n):
    Fraction = fractions.Fraction
    total = Fraction(0)
    alternating = Fraction(0)
    for k in range(1, n + 1):
        term = Fraction(1, k)
        total += term
        alternating += term if k % 2 else -term
    approximations = [total.limit_denominator(10 ** d) for d in range(1, 8)]
    return (total, alternating, approximations, total > 5, round(total, 20),
            Fraction("3.1415926535") * total ** 2 / (alternating + 1))


def fractions_workload():
    return Workload("fractions", fractions_harmonic, (400,))


# --------------------------------------------------------------------------
# decimal, the pure-Python implementation (_pydecimal): pi to 50 digits
# (the recipe of the decimal module's documentation) and a few functions


def pydecimal_pi(digits):
    Decimal = _pydecimal.Decimal
    with _pydecimal.localcontext() as ctx:
        ctx.prec = digits + 2
        three = Decimal(3)
        lasts, t, s, n, na, d, da = 0, three, 3, 1, 0, 0, 24
        while s != lasts:
            lasts = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
        ctx.prec = digits
        pi = +s
        two = Decimal(2)
        extras = [two.sqrt(), two.ln(), Decimal(1).exp(), (pi / 4).quantize(Decimal("1e-30")),
                  Decimal("1.1") ** 100]
    return str(pi), [str(x) for x in extras]


def decimal_workload():
    return Workload("decimal", pydecimal_pi, (50,))


# --------------------------------------------------------------------------
# statistics on floats


def statistics_summary(xs, ys):
    st = statistics
    slope, intercept = st.linear_regression(xs, ys)
    return (st.mean(xs), st.fmean(xs), st.median(xs), st.stdev(xs), st.pvariance(ys),
            st.quantiles(xs, n=10), st.correlation(xs, ys), st.covariance(xs, ys),
            slope, intercept)


def statistics_workload(n=1000):
    rng = random.Random(5)
    xs = [rng.gauss(10.0, 3.0) for _ in range(n)]
    ys = [2.5 * x + rng.gauss(0.0, 1.5) for x in xs]
    return Workload("statistics", statistics_summary, (xs, ys))


# --------------------------------------------------------------------------
# dataclasses: a class made with make_dataclass, instances, asdict, replace,
# comparison and sorting


def dataclasses_inventory(rows):
    Item = dataclasses.make_dataclass(
        "Item",
        [("name", str), ("price", float), ("quantity", int, dataclasses.field(default=1)),
         ("tags", list, dataclasses.field(default_factory=list, compare=False))],
        order=True)
    items = [Item(name, price, quantity, list(tags)) for name, price, quantity, tags in rows]
    restocked = [dataclasses.replace(item, quantity=item.quantity + 10) for item in items]
    ordered = sorted(items + restocked)
    unique = []
    for item in ordered:
        if not unique or unique[-1] != item:
            unique.append(item)
    names = [f.name for f in dataclasses.fields(Item)]
    return (names, [dataclasses.asdict(item) for item in unique],
            [dataclasses.astuple(item) for item in ordered[:20]], repr(ordered[0]),
            max(items) == max(restocked, key=lambda r: (r.name, r.price, r.quantity - 10)))


def dataclasses_workload(count=150):
    rng = random.Random(6)
    rows = [(rng.choice(WORDS), round(rng.uniform(1, 100), 2), rng.randint(0, 5),
             [rng.choice(WORDS) for _ in range(rng.randint(0, 3))])
            for _ in range(count)]
    return Workload("dataclasses", dataclasses_inventory, (rows,))


# --------------------------------------------------------------------------
# ast: parse, count nodes with a NodeVisitor, unparse (the source of textwrap)


class _NodeCounter(ast.NodeVisitor):
    def __init__(self):
        self.counts = collections.Counter()
        self.names = set()

    def generic_visit(self, node):
        self.counts[type(node).__name__] += 1
        super().generic_visit(node)

    def visit_FunctionDef(self, node):
        self.names.add(node.name)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self.names.add(node.name)
        self.generic_visit(node)


def ast_roundtrip(source):
    tree = ast.parse(source)
    counter = _NodeCounter()
    counter.visit(tree)
    text = ast.unparse(tree)
    return sorted(counter.counts.items()), sorted(counter.names), text


def ast_workload():
    return Workload("ast", ast_roundtrip, (_module_source(textwrap),))


# --------------------------------------------------------------------------
# tokenize over a module's source (textwrap's)


def tokenize_source(source):
    kinds = collections.Counter()
    names = collections.Counter()
    tokens = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        kinds[tokenize.tok_name[token.type]] += 1
        if token.type == tokenize.NAME:
            names[token.string] += 1
        tokens.append((token.type, token.string, token.start, token.end))
    return sorted(kinds.items()), names.most_common(20), tokens


def tokenize_workload():
    return Workload("tokenize", tokenize_source, (_module_source(textwrap),))


# --------------------------------------------------------------------------
# heapq, bisect, collections: Dijkstra on a generated graph


def dijkstra_graph(seed=7, nodes=1500, degree=5):
    rng = random.Random(seed)
    graph = collections.defaultdict(list)
    for u in range(nodes):
        graph[u].append(((u + 1) % nodes, rng.randint(5, 50)))
        for _ in range(degree - 1):
            graph[u].append((rng.randrange(nodes), rng.randint(1, 100)))
    return dict(graph)


def dijkstra_paths(graph, source):
    dist = {source: 0}
    previous = {}
    heap = [(0, source)]
    done = set()
    while heap:
        d, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, w in graph[u]:
            nd = d + w
            if v not in dist or nd < dist[v]:
                dist[v] = nd
                previous[v] = u
                heapq.heappush(heap, (nd, v))
    ordered = sorted(dist.values())
    # Nodes within each radius, by bisection of the sorted distances.
    within = [bisect.bisect_right(ordered, radius) for radius in range(0, ordered[-1] + 1, 10)]
    hops = collections.Counter()
    for v in dist:
        n = 0
        while v != source:
            v = previous[v]
            n += 1
        hops[n] += 1
    farthest = heapq.nlargest(5, dist.items(), key=lambda item: (item[1], item[0]))
    return sorted(dist.items()), within, sorted(hops.items()), farthest


def heapq_workload():
    return Workload("heapq", dijkstra_paths, (dijkstra_graph(), 0))


# --------------------------------------------------------------------------
# ipaddress: parse, test membership, collapse and summarize networks


def ipaddress_summary(network_texts, address_texts, ranges):
    networks = [ipaddress.ip_network(text, strict=False) for text in network_texts]
    addresses = [ipaddress.ip_address(text) for text in address_texts]
    v4 = [n for n in networks if n.version == 4]
    v6 = [n for n in networks if n.version == 6]
    collapsed = [str(n) for n in ipaddress.collapse_addresses(v4)]
    collapsed += [str(n) for n in ipaddress.collapse_addresses(v6)]
    member = [sum(1 for n in v4 if a in n) if a.version == 4 else sum(1 for n in v6 if a in n)
              for a in addresses]
    summarized = [[str(n) for n in ipaddress.summarize_address_range(
        ipaddress.ip_address(first), ipaddress.ip_address(last))] for first, last in ranges]
    subnets = [str(s) for s in networks[0].subnets(new_prefix=networks[0].prefixlen + 3)]
    facts = [(a.is_private, a.is_global, a.compressed, a.exploded, a.reverse_pointer)
             for a in addresses[:30]]
    return collapsed, member, summarized, subnets, facts


def ipaddress_workload():
    rng = random.Random(8)
    networks = []
    for _ in range(120):
        prefix = rng.choice((22, 24, 25, 26, 28))
        networks.append(f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}/{prefix}")
    for _ in range(30):
        networks.append(f"2001:db8:{rng.randrange(8):x}:{rng.randrange(65536):x}::/{rng.choice((48, 56, 64))}")
    addresses = [f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}" for _ in range(40)]
    addresses += [f"2001:db8:{rng.randrange(8):x}::{rng.randrange(65536):x}" for _ in range(10)]
    ranges = [("192.168.0.7", "192.168.3.200"), ("10.0.0.0", "10.0.255.255"),
              ("2001:db8::5", "2001:db8::1:ff")]
    return Workload("ipaddress", ipaddress_summary, (networks, addresses, ranges))


# --------------------------------------------------------------------------
# numpy, from Python: a loop of numpy calls on small arrays


def numpy_loop(np, points, steps):
    centre = np.mean(points, axis=0)
    velocity = np.zeros(points.shape[1])
    trace = []
    for step in range(steps):
        offsets = points - centre
        distances = np.linalg.norm(offsets, axis=1)
        weights = np.exp(-distances / (1.0 + np.std(distances)))
        weights = weights / np.sum(weights)
        target = np.dot(weights, points)
        velocity = 0.9 * velocity + 0.1 * (target - centre)
        centre = centre + velocity
        spread = np.percentile(distances, [25, 50, 75])
        nearest = int(np.argmin(distances))
        clipped = np.clip(offsets[nearest], -1.0, 1.0)
        stacked = np.concatenate([centre, clipped, np.array([np.linalg.norm(velocity)])])
        trace.append((float(np.round(np.sum(stacked), 12)), nearest,
                      np.round(spread, 12).tolist()))
    return np.round(centre, 12).tolist(), trace


def numpy_workload(count=40, dims=3, steps=25):
    import numpy as np

    rng = np.random.default_rng(9)
    points = rng.normal(size=(count, dims))
    return Workload("numpy", numpy_loop, (np, points, steps))


BUILDERS = {
    "json": json_workload,
    "difflib": difflib_workload,
    "email": email_workload,
    "fractions": fractions_workload,
    "decimal": decimal_workload,
    "statistics": statistics_workload,
    "dataclasses": dataclasses_workload,
    "ast": ast_workload,
    "tokenize": tokenize_workload,
    "heapq": heapq_workload,
    "ipaddress": ipaddress_workload,
    "numpy": numpy_workload,
}
"""Every real-library workload's builder, by name, in the order the suite
runs them."""

WORKLOAD_NAMES = tuple(BUILDERS)


def all_workloads():
    return [build() for build in BUILDERS.values()]
