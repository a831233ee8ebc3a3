"""A table of registered kinds: what comes in kinds (sandbox profiles, install sources, model
SDKs) is a class per kind, one instance of each in a :class:`Registry` in its package's
``__init__`` (docs/architecture.md, *Registered kinds*; pip's ``vcs.register`` and
jupyter_client's provisioners are the models).

Whoever needs "which kinds are there" reads the table (:meth:`Registry.names` is a live view,
fit for argparse ``choices`` and a traitlets enum), so a kind added with one line in a table,
or registered by a test, appears everywhere at once. Each kind implements every abstract
member of the table's base class; ``tests/test_registered_kinds.py`` checks every table.

Example:
    >>> from abc import ABC, abstractmethod
    >>> class Greeting(ABC):
    ...     name = ""
    ...     @abstractmethod
    ...     def text(self) -> str: ...
    >>> class Hello(Greeting):
    ...     name = "hello"
    ...     def text(self) -> str:
    ...         return "Hello!"
    >>> GREETINGS = Registry("greeting", Greeting, [Hello()])
    >>> GREETINGS.get("hello").text(), list(GREETINGS.names())
    ('Hello!', ['hello'])
    >>> GREETINGS.get("bye")
    Traceback (most recent call last):
    ...
    ValueError: Unknown greeting 'bye': use one of hello
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

K = TypeVar("K")


class Names(Sequence[str]):
    """The names in a registry, in the order registered, read live (a kind registered later
    is in it): argparse ``choices``, traitlets ``CaselessStrEnum`` values, ``", ".join``."""

    def __init__(self, registry: Registry[object]) -> None:
        self._registry = registry

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._registry.name_list()[index]

    def __len__(self) -> int:
        return len(self._registry.name_list())

    def __contains__(self, value: object) -> bool:
        return value in self._registry.name_list()

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.name_list())

    def __repr__(self) -> str:
        return repr(self._registry.name_list())


class Registry(Generic[K]):
    """Kinds of ``base`` by name (each kind's ``name`` attribute), in the order registered.

    ``what`` names the kind in messages ("sandbox profile"). :meth:`register` refuses a kind
    that is not a concrete ``base`` or whose name is taken (one line naming the fix).
    """

    def __init__(self, what: str, base: type, kinds: Iterable[K] = ()) -> None:
        self.what = what
        self.base = base
        self._lock = threading.Lock()
        self._kinds: dict[str, K] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: K) -> K:
        """Add ``kind`` (an instance of a concrete subclass of ``base``); returns it."""
        if not isinstance(kind, self.base) or inspect.isabstract(type(kind)):
            missing = sorted(getattr(type(kind), "__abstractmethods__", ()))
            raise TypeError(
                f"A {self.what} must be an instance of a concrete {self.base.__name__} "
                f"subclass: {type(kind).__name__}"
                + (f" does not implement {', '.join(missing)}" if missing else " is not one")
            )
        name = getattr(kind, "name", "")
        if not isinstance(name, str) or not name:
            raise TypeError(f"A {self.what} needs a name: give {type(kind).__name__} one")
        with self._lock:
            if name in self._kinds:
                raise ValueError(
                    f"A {self.what} named {name!r} is registered already: unregister it first"
                )
            self._kinds[name] = kind
        return kind

    def unregister(self, name: str) -> K:
        """Remove the kind named ``name`` and return it (KeyError when none is)."""
        with self._lock:
            return self._kinds.pop(name)

    def get(self, name: str) -> K:
        """The kind named ``name``; ValueError (one line naming the choices) when none is."""
        kind = self._kinds.get(name)
        if kind is None:
            raise ValueError(f"Unknown {self.what} {name!r}: use one of {', '.join(self.names())}")
        return kind

    def find(self, name: str) -> K | None:
        """The kind named ``name``, or None."""
        return self._kinds.get(name)

    def name_list(self) -> tuple[str, ...]:
        """The names now, in order."""
        return tuple(self._kinds)

    def names(self) -> Names:
        """The names as a live view (see :class:`Names`)."""
        return Names(self)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(tuple(self._kinds.values()))

    def __len__(self) -> int:
        return len(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {', '.join(self._kinds)})"


__all__ = ["Names", "Registry"]
