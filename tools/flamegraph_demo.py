#!/usr/bin/env python3
"""Makes ``docs/flamegraph.png``: a screenshot of the HTML flame graph that
``python -m cassette profile --format html`` writes for a small n-body
simulation (``tools/nbody_demo.py``, 200 steps of 5 bodies).

Usage (from the repository root, with cassette importable and Chromium
installed, e.g. in a venv made by ``tools/dev.py``)::

    .venv/3.12/bin/python tools/flamegraph_demo.py docs/flamegraph.png [page.html]

It keeps the page as ``page.html`` if asked, and has headless Chromium take
a 1200x520 screenshot of it with the mouse on the frame of ``Body.pull``.
Timings differ from run to run, and so does the picture.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBODY = ROOT / "tools" / "nbody_demo.py"


def profile_page(path, steps=200, bodies=5):
    """Profile the simulation with the command line into the page ``path``."""
    subprocess.run([sys.executable, "-m", "cassette", "profile", "--format", "html",
                    "-o", str(Path(path).resolve()), str(NBODY.relative_to(ROOT)), str(steps),
                    str(bodies)],
                   check=True, cwd=str(ROOT), stdout=subprocess.DEVNULL)


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
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(argv[1]) if len(argv) > 1 else Path(tmp) / "flame.html"
        profile_page(path)
        path.write_text(path.read_text(encoding="utf-8").replace("</body>", HOVER % "Body.pull"),
                        encoding="utf-8")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--hide-scrollbars",
                        "--user-data-dir=%s" % Path(tmp, "profile"), "--window-size=1200,520",
                        "--screenshot=%s" % Path(argv[0]).resolve(), path.resolve().as_uri()],
                       check=True, stderr=subprocess.DEVNULL)
    print("wrote", argv[0])


if __name__ == "__main__":
    main_cli(sys.argv[1:])
