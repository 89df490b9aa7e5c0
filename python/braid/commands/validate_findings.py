"""What ``braidctl validate`` found: one finding per problem, with its file, object and field.

A finding is a mapping of stable keys (``docs/operations.md``): ``file`` (as given on the
command line), ``object`` (where in the file: ``document 2``, ``[0]``, ``items[3]``; "" for the
file as a whole), ``field`` (the field's path in the object, e.g. ``metadata.name``,
``spec.config.plugins[0].ipam.type``, ``metadata.annotations[k8s.v1.cni.cncf.io/networks][1].mac``;
"" when the problem is the object or file itself), ``severity`` (``error``, ``warning`` or
``note``) and ``message`` (for people: it names the file, object and field too).
"""

from __future__ import annotations

from collections.abc import Callable

from braid.errors import CniError

Finding = dict[str, str]


class Findings:
    """The findings of one file, appended to a shared list in the order they are found."""

    def __init__(self, file: str, found: list[Finding]) -> None:
        self.file = file
        self._found = found

    def add(self, severity: str, message: str, *, where: str = "", field: str = "") -> None:
        """One finding; ``where`` is the object's location as messages write it (the file's
        name, then the document or element)."""
        place = where.removeprefix(self.file).strip() if where.startswith(self.file) else where
        self._found.append(
            {
                "file": self.file,
                "object": place,
                "field": field,
                "severity": severity,
                "message": message,
            }
        )

    def error(
        self, exc: CniError, *, where: str = "", field: str = "", name_field: bool = False
    ) -> None:
        """An error; its message gets ``where`` in front unless it names it already (and the
        field too with ``name_field``, for a message that does not name it)."""
        where = where or self.file
        msg = f"{exc.msg}: {exc.details}" if exc.details else exc.msg
        if msg.startswith(where):
            self.add("error", msg, where=where, field=field)
        elif name_field and field:
            self.problem(msg, where=where, field=field)
        else:
            self.add("error", f"{where}: {msg}", where=where, field=field)

    def problem(self, problem: str, *, where: str, field: str) -> None:
        """An error found by a check that names no location itself."""
        self.add("error", f"{where}: field {field}: {problem}", where=where, field=field)

    def run(self, check: Callable[[], object], *, where: str = "", field: str = "") -> bool:
        """Runs ``check``; a ``CniError`` is an error finding naming ``field``. True when it
        passed."""
        try:
            check()
        except CniError as exc:
            self.error(exc, where=where, field=field, name_field=True)
            return False
        return True
