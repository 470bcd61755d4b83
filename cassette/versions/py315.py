"""CPython 3.15: as 3.14, with iteration over a virtual iterator."""

from .py314 import Layer314
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py


class Layer315(Layer314):
    version = (3, 15)
