"""The table of braid's layered keys, derived from their one declaration in the views of
``braid.config.layers``: each key's name, its attribute in the flat document, where its view
holds it, its type, default and path kind.

The flat document's struct (``braid.config.schema``), the known keys, the path keys and the
host-root localizer's paths all come from ``LAYERED``; adding a key is adding a field to a view
(and its row in docs/configuration.md, which a test holds equal).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import attrgetter
from typing import Annotated, Any, cast, get_args, get_origin

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


_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(key: str) -> str:
    """``auxiliaryCNIChainName`` -> ``auxiliary_cni_chain_name``."""
    return _WORD_BREAK.sub("_", key).lower()


def _path_kind(kind: Any) -> str:
    if get_origin(kind) is Annotated:
        for meta in get_args(kind)[1:]:
            if isinstance(meta, msgspec.Meta) and meta.extra:
                return str(meta.extra.get("path", ""))
    return ""


def _is_view(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, View)


# Each view's fields, asked once (each ask evaluates the annotations again).
_FIELDS: dict[type[View], tuple[msgspec.structs.FieldInfo, ...]] = {}


def _fields(view: type[View]) -> tuple[msgspec.structs.FieldInfo, ...]:
    if view not in _FIELDS:
        _FIELDS[view] = msgspec.structs.fields(view)
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
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # pragma: no cover - a declaration error, caught at import by every test
            raise TypeError(f"braid.config.layers declares {what} {twice} twice")


_unique()


def _reader(fields: tuple[msgspec.structs.FieldInfo, ...]) -> Callable[[object], tuple[Any, ...]]:
    """A function of the flat configuration giving a view's field values, in field order: one
    ``attrgetter`` when every field is a key (built per call: keep it cheap)."""
    if not any(_is_view(f.type) for f in fields):
        getter = attrgetter(*(snake(f.encode_name) for f in fields))
        if len(fields) == 1:
            return lambda flat: (getter(flat),)
        return cast("Callable[[object], tuple[Any, ...]]", getter)
    sources = [f.type if _is_view(f.type) else attrgetter(snake(f.encode_name)) for f in fields]
    return lambda flat: tuple(build(s, flat) if isinstance(s, type) else s(flat) for s in sources)


_READERS = {view: _reader(fields) for view, fields in _FIELDS.items()}


def build(view: type[View], flat: object) -> Any:
    """The ``view`` of the flat configuration ``flat``."""
    return view(*_READERS[view](flat))
