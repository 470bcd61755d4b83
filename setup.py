"""Build script for the Cython extension ``cassette._core``.

Everything else about the project lives in ``pyproject.toml``; this file only
declares the extension, which setuptools cannot yet express declaratively.

Set ``CASSETTE_FORCE_CYTHON=1`` to regenerate the C source even when Cython's
timestamps say it is up to date (``tools/dev.py`` does this whenever the
.pyx/.pxd sources changed, so a rebuild is never skipped).
"""

import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
PYX = os.path.join("cassette", "_core.pyx")

if not os.path.exists(os.path.join(HERE, PYX)):
    sys.exit(f"setup.py: {PYX} is missing; the Cython core is required to build cassette.")

from Cython.Build import cythonize  # noqa: E402  (after the clear error above)

# The interpreter internals the core relies on, one branch per release.
COMPAT = os.path.join("cassette", "_compat.h")

# Warnings on: the C of the core (its header and the C blocks of the .pyx)
# must compile without any on every supported release.
WARNINGS = [] if sys.platform == "win32" else ["-Wall", "-Wextra"]

extensions = [Extension("cassette._core", [PYX], depends=[COMPAT],
                        extra_compile_args=WARNINGS)]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False},
        force=os.environ.get("CASSETTE_FORCE_CYTHON") == "1",
    ),
)
