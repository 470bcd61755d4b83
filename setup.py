"""Build script for the Cython extension ``cassette._core``.

Everything else about the project lives in ``pyproject.toml``; this file only
declares the extension, which setuptools cannot yet express declaratively.

Set ``CASSETTE_FORCE_CYTHON=1`` to regenerate the C source even when Cython's
timestamps say it is up to date (``tools/dev.py`` does this whenever the
.pyx/.pxd/.pxi/.h sources changed, so a rebuild is never skipped).
"""

import glob
import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
PYX = os.path.join("cassette", "_core.pyx")

if not os.path.exists(os.path.join(HERE, PYX)):
    sys.exit(f"setup.py: {PYX} is missing; the Cython core is required to build cassette.")

from Cython.Build import cythonize  # noqa: E402  (after the clear error above)

# The parts of the core: its Cython (.pxi) and C headers (.h), among them
# compat.h, the interpreter internals it relies on, one branch per release.
PARTS = sorted(glob.glob(os.path.join("cassette", "_core_src", "*")))
PARTS.append(os.path.join("cassette", "_core.pxd"))

# Warnings on: the core's C (its headers and what Cython generates from the
# .pyx) must compile without any in our files on every supported release.
# Cython spells its type objects positionally, so a release that adds a
# field to PyTypeObject (3.15's _tp_iteritem) leaves it zero, as intended:
# that one warning says nothing.
WARNINGS = [] if sys.platform == "win32" else [
    "-Wall", "-Wextra", "-Wno-missing-field-initializers"]

extensions = [Extension("cassette._core", [PYX], depends=PARTS,
                        extra_compile_args=WARNINGS)]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False},
        force=os.environ.get("CASSETTE_FORCE_CYTHON") == "1",
        # Apart per interpreter: tools/dev.py builds several at once (a
        # debug build, python3.14d, shares its release's cache_tag).
        build_dir=os.path.join("build", "cython",
                               sys.implementation.cache_tag + getattr(sys, "abiflags", "")),
    ),
)
