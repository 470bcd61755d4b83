"""Named singleton values: ``OverdubInstead``, ``NoMetaData``, ``NoMetaMeta``, ``ANY``.

Contract (reference §2, §4):

* Each singleton is the only object of its name: compare with ``is``.
  ``Singleton(name)`` for an existing name returns the existing object.
* ``repr(x)`` is ``cassette.<Name>``.
* Identity survives ``pickle`` (``__reduce__`` returns the name, so pickle
  stores a reference to the module attribute ``cassette._singletons.<Name>``),
  ``copy.copy`` and ``copy.deepcopy`` (both return the object itself).
* Singletons are immutable and always true in a boolean context.

Every singleton must be bound to a module attribute of this module under its
own name; that is what makes pickling by reference work.
"""

from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

__all__ = ["Singleton", "OverdubInstead", "NoMetaData", "NoMetaMeta", "ANY",
           "TAGGED_VALUE_SLOT", "TAGGED_TAG_SLOT", "TAGGED_DATA_SLOT"]

#: The slots of a tagged value (``Tagged[T]``, reference §6): the value it
#: wraps, the tag it belongs to and its metadata.  Tagging defines them; the
#: engine, propagation and the core read a tagged value by these names.
TAGGED_VALUE_SLOT = "_cassette_value"
TAGGED_TAG_SLOT = "_cassette_tag"
TAGGED_DATA_SLOT = "_cassette_data"


class Singleton:
    """A named, unique, immutable marker value (see the module docstring)."""

    __slots__ = ("_name",)
    _instances = {}

    def __new__(cls, name):
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"Singleton name must be an identifier string, got {name!r}")
        existing = cls._instances.get(name)
        if existing is not None:
            return existing
        self = object.__new__(cls)
        object.__setattr__(self, "_name", name)
        cls._instances[name] = self
        return self

    @property
    def name(self):
        """The singleton's name (``"OverdubInstead"`` …)."""
        return self._name

    def __repr__(self):
        return f"cassette.{self._name}"

    def __reduce__(self):
        # A string means "pickle as a reference to the global of this name in
        # the object's module" (``Singleton.__module__``): identity survives.
        return self._name

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"{self!r} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{self!r} is immutable")


#: Returned by ``execute`` to mean "run the callee's body overdubbed instead".
OverdubInstead = Singleton("OverdubInstead")
#: The metadata of a tagged value that carries none.
NoMetaData = Singleton("NoMetaData")
#: The meta-metadata of a tagged value that carries none.
NoMetaMeta = Singleton("NoMetaMeta")
#: Wildcard callee for ``register`` (also accepted as an argtype, meaning ``object``).
ANY = Singleton("ANY")
