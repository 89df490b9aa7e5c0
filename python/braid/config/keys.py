"""The table of braid's layered keys, derived from their one declaration in the views of
``braid.config.layers``: each key's name, its attribute in the flat document, where its view
holds it, its type, default and path kind.

The flat document's struct (``braid.config.schema``), the known keys, the path keys and the
host-root localizer's paths all come from ``LAYERED``; adding a key is adding a field to a view
(and its row in docs/configuration.md, which a test holds equal).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, cast, get_type_hints

import msgspec

from braid.config.layers import ROOTS, View


class Key(msgspec.Struct, frozen=True):
    """One layered key: ``key`` (its JSON name), ``attribute`` (its flat attribute, the
    snake_case of the key), ``view`` (the attributes leading to it from the configuration,
    e.g. ``("engine", "dirs", "cni_dir")``), ``type``, ``default``/``default_factory`` and
    ``path`` ("local", "node" or "": no path)."""

    key: str
    attribute: str
    view: tuple[str, ...]
    type: Any
    default: Any
    default_factory: Any
    path: str


_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_LOWER_OR_DIGIT = _LOWER | frozenset("0123456789")


def snake(key: str) -> str:
    """``auxiliaryCNIChainName`` -> ``auxiliary_cni_chain_name``: a ``_`` before an upper-case
    letter after a lower-case letter or a digit, or before one that starts a word after an
    acronym (a loop: compiling a regex costs braid-thin's start-up more)."""
    if key.islower() or not key:
        return key
    out: list[str] = [key[0]]
    for i in range(1, len(key)):
        char = key[i]
        if char in _UPPER:
            before = key[i - 1]
            if before in _LOWER_OR_DIGIT or (before in _UPPER and key[i + 1 : i + 2] in _LOWER):
                out.append("_")
        out.append(char)
    return "".join(out).lower()


def _path_kind(kind: Any) -> str:
    for meta in getattr(kind, "__metadata__", ()):  # Annotated's metadata
        if isinstance(meta, msgspec.Meta) and meta.extra:
            return str(meta.extra.get("path", ""))
    return ""


def _is_view(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, View)


class _Field(msgspec.Struct, frozen=True):
    """What the key table needs of a view's field (``msgspec.structs.fields`` evaluates every
    annotation again on each call: too slow for braid-thin's start-up)."""

    name: str
    encode_name: str
    type: Any
    default: Any
    default_factory: Any


def _factory_type() -> Any:
    class _Probe(msgspec.Struct):
        probe: list[int] = msgspec.field(default_factory=list)

    return type(_Probe.__struct_defaults__[0])


# The type msgspec keeps a ``default_factory`` as in ``__struct_defaults__``.
_FACTORY: Any = _factory_type()


def _annotations(view: type[View]) -> dict[str, Any]:
    """The view's field types: its annotations as declared (``braid.config.layers`` does not
    postpone them), or evaluated when some are strings."""
    found: dict[str, Any] = {}
    for cls in reversed(view.__mro__):
        if issubclass(cls, View):  # the classes declaring fields
            found.update(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063 - as declared, fast
    if any(isinstance(kind, str) for kind in found.values()):
        return get_type_hints(view, include_extras=True)
    return found


# Each view's fields, read once, from the struct's own attributes.
_FIELDS: dict[type[View], tuple[_Field, ...]] = {}


def _fields(view: type[View]) -> tuple[_Field, ...]:
    if view not in _FIELDS:
        kinds = _annotations(view)
        names = view.__struct_fields__
        defaults: tuple[Any, ...] = (msgspec.NODEFAULT,) * (
            len(names) - len(view.__struct_defaults__)
        )
        defaults += view.__struct_defaults__
        _FIELDS[view] = tuple(
            _Field(
                name,
                encode,
                kinds[name],
                msgspec.NODEFAULT if isinstance(default, _FACTORY) else default,
                default.factory if isinstance(default, _FACTORY) else msgspec.NODEFAULT,
            )
            for name, encode, default in zip(
                names, view.__struct_encode_fields__, defaults, strict=True
            )
        )
    return _FIELDS[view]


def _keys(view: type[View], where: tuple[str, ...]) -> list[Key]:
    found: list[Key] = []
    for field in _fields(view):
        at = (*where, field.name)
        if _is_view(field.type):
            found.extend(_keys(field.type, at))
            continue
        found.append(
            Key(
                key=field.encode_name,
                attribute=snake(field.encode_name),
                view=at,
                type=field.type,
                default=field.default,
                default_factory=field.default_factory,
                path=_path_kind(field.type),
            )
        )
    return found


LAYERED: tuple[Key, ...] = tuple(k for name, root in ROOTS.items() for k in _keys(root, (name,)))


def _unique() -> None:
    for what in ("key", "attribute"):
        names = [getattr(k, what) for k in LAYERED]
        if len(set(names)) != len(
            names
        ):  # pragma: no cover - a declaration error, caught at import
            twice = sorted({n for n in names if names.count(n) > 1})
            raise TypeError(f"braid.config.layers declares {what} {twice} twice")


_unique()

# Each layered key's flat attribute, by key.
_ATTRIBUTE = {k.key: k.attribute for k in LAYERED}


def _reader(fields: tuple[_Field, ...]) -> Callable[[object], tuple[Any, ...]]:
    """A function of the flat configuration giving a view's field values, in field order: one
    ``attrgetter`` when every field is a key (built per call: keep it cheap)."""
    if not any(_is_view(f.type) for f in fields):
        getter = attrgetter(*(_ATTRIBUTE[f.encode_name] for f in fields))
        if len(fields) == 1:
            return lambda flat: (getter(flat),)
        return cast("Callable[[object], tuple[Any, ...]]", getter)
    sources = [
        f.type if _is_view(f.type) else attrgetter(_ATTRIBUTE[f.encode_name]) for f in fields
    ]
    return lambda flat: tuple(build(s, flat) if isinstance(s, type) else s(flat) for s in sources)


_READERS = {view: _reader(fields) for view, fields in _FIELDS.items()}


def build(view: type[View], flat: object) -> Any:
    """The ``view`` of the flat configuration ``flat``."""
    return view(*_READERS[view](flat))
