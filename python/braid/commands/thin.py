"""``braid-thin``: braid as an in-process CNI plugin (thin mode, no daemon).

CNI environment and stdin in, exactly one JSON result or error out; nothing else reaches
stdout. The paths it trusts come from the node file beside it, as for the shim
(``braid.config.trust``). The compiled shim with the daemon gives the same answers faster.

A runtime starts this process for every call, so what it imports is paid on every call: VERSION
is answered without the engine, and the other verbs import the engine and the choice of its
session (``braid.k8s.select``: the file store, or Kubernetes) alone (no daemon, no metrics, no
command line parser; the Kubernetes client only when the call uses the Kubernetes store,
kubelet's client only when it asks for devices, PyYAML only for YAML manifests);
``tests/unit/engine/test_engine_thin_imports.py`` holds it to that. Those modules come
compiled from one file kept beside braid's own ``.pyc`` files (``braid.commands.thin_modules``,
ADR 0014).
"""

from __future__ import annotations

import gc
import os
import sys

from braid.commands import thin_modules
from braid.version import BUILD, package_version, version_document

TYPE_CHECKING = False  # typing itself is not imported before msgspec, nor for VERSION
if TYPE_CHECKING:
    from collections.abc import Callable


def main() -> int:
    # One short call per process: the collector would only walk what the imports made.
    gc.disable()
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"braid-thin {package_version()}\n")
        return 0
    if os.environ.get("CNI_COMMAND", "") == "VERSION":
        out, code = version_document(), 0
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
        return code
    # The call's modules from its verb's file (``braid.commands.thin_modules``), written again
    # after the answer of a call that succeeded and imported other modules than it held.
    modules = thin_modules.install(verb=os.environ.get("CNI_COMMAND", ""), build=BUILD)
    out, code = _engine_call()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    thin_modules.save(modules, succeeded=code == 0)
    return code


def _engine_call() -> tuple[bytes, int]:
    """ADD, CHECK, DEL, GC and STATUS: the engine's, with the plugins' VERSION answers
    remembered in ``cniDir`` from one call to the next (``braid.cni.version_file``)."""
    _import_msgspec()
    from braid.cni.version_file import VersionFile  # noqa: PLC0415
    from braid.config.schema import BraidConfig  # noqa: PLC0415 - imported already
    from braid.config.trust import from_node, node_file_beside  # noqa: PLC0415
    from braid.engine.entry import Engine  # noqa: PLC0415
    from braid.engine.memory import EngineMemory  # noqa: PLC0415
    from braid.engine.request import MAX_STDIN  # noqa: PLC0415
    from braid.k8s.select import open_call_session  # noqa: PLC0415

    stdin = sys.stdin.buffer.read(MAX_STDIN + 1)
    node_file = node_file_beside(sys.argv[0])
    memory, versions = EngineMemory(), VersionFile()

    def trusted(config: BraidConfig) -> BraidConfig:
        config = from_node(config, node_file)
        versions.load(config.engine.dirs.cni_dir, memory.versions)
        return config

    engine = Engine(session=open_call_session, policy=trusted, memory=memory)
    answer = engine.run(os.environ, stdin)
    versions.save(memory.versions)
    return answer


def _import_msgspec() -> None:
    """Imports ``msgspec`` as it imports itself where ``typing_extensions`` is not installed
    (grpcio's dependency, in the image for the ``devices`` extra): with ``typing``'s
    ``get_type_hints`` and ``NotRequired``, which are the same on Python 3.11 for every
    annotation braid writes. ``typing_extensions`` imports ``inspect`` (with ``ast``, ``dis``
    and ``tokenize``), 10-15 ms of every call. Only msgspec's first import is steered: any
    later importer of ``typing_extensions`` gets it.

    Three modules its import pulls in for nothing a call uses are deferred (``_Deferred``):
    ``platform``, which ``uuid`` imports to ask ``platform.system()`` once; ``textwrap``, which
    msgspec's JSON Schema generator calls; and ``msgspec.inspect`` (37 structs), which that
    generator uses. Together about 15 million instructions, 3.5 ms here, of every call. And
    ``datetime`` is read from ``_datetime`` (``_datetime_from_its_c_module``): 3 million more.

    And msgspec reads a postponed annotation (``from __future__ import annotations``) as a
    ``typing.ForwardRef``, whose constructor calls ``compile()``, as does msgspec's import
    once; the first ``compile()`` of a process sets up the interpreter's ``ast`` node types,
    about 9 million instructions more (``_forward_refs_evaluated_as_text``). ADR 0015."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    # A None entry makes its import fail, as if it were not installed.
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    deferred = [
        _Deferred.install("platform", system=_platform_system),
        _Deferred.install("textwrap"),
        _Deferred.install("msgspec.inspect"),
        _datetime_from_its_c_module(),
    ]
    restore = _forward_refs_evaluated_as_text()
    try:
        import msgspec  # noqa: F401, PLC0415
    finally:
        restore()
        del sys.modules["typing_extensions"]
        for stand_in in deferred:
            if stand_in is not None:
                stand_in.withdraw()


def _forward_refs_evaluated_as_text() -> Callable[[], None]:
    """Makes the forward references msgspec creates ``typing.ForwardRef``s that keep their
    text instead of its ``compile()``d code; ``typing`` evaluates either with ``eval``, which
    needs no ``ast`` node types for text. ``typing.ForwardRef`` is such a class only while
    msgspec is imported (its module checks ``ForwardRef``'s signature then); after, msgspec's
    ``_utils._forward_ref``, which makes the reference of each postponed annotation, makes
    them (left alone in a msgspec without it). Returns what puts ``typing.ForwardRef`` back."""
    import typing  # noqa: PLC0415 - msgspec imports it first thing

    real = typing.ForwardRef

    class _TextForwardRef(real, _root=True):  # type: ignore[valid-type, misc, call-arg]
        __slots__ = ()

        def __init__(
            self,
            arg: str,
            is_argument: bool = True,
            module: object = None,
            *,
            is_class: bool = False,
        ) -> None:
            if not isinstance(arg, str):
                raise TypeError(f"Forward reference must be a string -- got {arg!r}")
            # What typing.ForwardRef sets (its slots), its code the text typing would compile.
            fields = {
                "__forward_arg__": arg,
                "__forward_code__": f"({arg},)[0]" if arg.startswith("*") else arg,
                "__forward_evaluated__": False,
                "__forward_value__": None,
                "__forward_is_argument__": is_argument,
                "__forward_is_class__": is_class,
                "__forward_module__": module,
            }
            for name, value in fields.items():
                setattr(self, name, value)

        def _evaluate(self, *args: object, **kwargs: object) -> object:
            try:
                return super()._evaluate(*args, **kwargs)
            except SyntaxError:  # typing's words, which it says when it compiles the text
                arg = self.__forward_arg__
                msg = f"Forward reference must be an expression -- got {arg!r}"
                raise SyntaxError(msg) from None

    def restore() -> None:
        typing.ForwardRef = real  # type: ignore[misc]
        utils = sys.modules.get("msgspec._utils")
        if utils is not None and callable(getattr(utils, "_forward_ref", None)):
            vars(utils)["_forward_ref"] = lambda value: _TextForwardRef(
                value, is_argument=False, is_class=True
            )

    typing.ForwardRef = _TextForwardRef  # type: ignore[misc]
    return restore


def _datetime_from_its_c_module() -> _Deferred | None:
    """``datetime`` as msgspec's import reads it: its C API and its ``datetime`` type, which are
    ``_datetime``'s (``datetime`` runs its pure Python version first, then replaces it with
    ``_datetime``'s)."""
    import _datetime  # type: ignore[import-not-found]  # noqa: PLC0415

    return _Deferred.install(
        "datetime", datetime=_datetime.datetime, datetime_CAPI=_datetime.datetime_CAPI
    )


def _platform_system() -> str:
    """``platform.system()`` on a POSIX system: ``os.uname()``'s ``sysname``."""
    return os.uname().sysname


class _Deferred(type(sys)):  # type: ignore[misc]
    """A stand-in for a standard module, in ``sys.modules`` only while ``msgspec`` is imported:
    the attributes given are answered by it, any other is looked up in the real module, which
    it imports then (PEP 562's module ``__getattr__``). A module that imported the stand-in
    keeps a working reference to it; the next ``import`` of the name gets the real module."""

    @classmethod
    def install(cls, name: str, **known: object) -> _Deferred | None:
        if name in sys.modules:
            return None
        stand_in = cls(name)
        stand_in.__dict__.update(known)
        sys.modules[name] = stand_in
        return stand_in

    def withdraw(self) -> str:
        """Takes the stand-in out of ``sys.modules`` (if it is still there); its name."""
        name: str = self.__dict__["__name__"]
        if sys.modules.get(name) is self:
            del sys.modules[name]
        return name

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        name = self.withdraw()
        __import__(name)
        return getattr(sys.modules[name], attr)


def run() -> None:
    """The console script's entry point: ``main``, then an exit without the interpreter's
    teardown (freeing every module and object, about 9 ms). Nothing is lost by it: the
    answer is flushed, the record's durable writes are done (fsynced) before ``main``
    returns, the session is closed, and the log's handlers are flushed and closed here."""
    code = main()
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
