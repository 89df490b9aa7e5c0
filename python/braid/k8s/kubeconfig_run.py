"""One run of a credential plugin, bounded in time and in output.

Its standard output is the answer (at most ``MAX_OUTPUT`` bytes). Without a terminal its
standard input is empty and its standard error is kept (the last bytes go into the error when
it fails); with one (``interactive``) both are braid's own, so the plugin can prompt.
"""

from __future__ import annotations

import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence

MAX_OUTPUT = 1024 * 1024
ERROR_TAIL = 2048


def run_plugin(
    argv: Sequence[str], env: Mapping[str, str], *, interactive: bool, timeout: float
) -> bytes:
    """The plugin's standard output; ``RuntimeError`` saying why when it failed, ran too long
    or said too much; ``OSError`` when it could not be started."""
    process = subprocess.Popen(  # the operator's own kubeconfig names it
        list(argv),
        env=dict(env),
        stdin=None if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None if interactive else subprocess.PIPE,
    )
    try:
        out, err = _collect(process, timeout)
        code = process.wait(timeout=max(0.1, timeout))
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        process.kill()
        process.wait()
        raise RuntimeError(str(exc) or f"ran longer than {timeout:g} s") from None
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if code != 0:
        said = err[-ERROR_TAIL:].decode("utf-8", "replace").strip()
        raise RuntimeError(f"exit status {code}" + (f": {said}" if said else ""))
    return out


def _collect(process: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    deadline = time.monotonic() + timeout
    got = {"out": bytearray(), "err": bytearray()}
    with selectors.DefaultSelector() as selector:
        if process.stdout is not None:
            selector.register(process.stdout, selectors.EVENT_READ, "out")
        if process.stderr is not None:
            selector.register(process.stderr, selectors.EVENT_READ, "err")
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"ran longer than {timeout:g} s")
            for key, _ in selector.select(left):
                chunk = key.fileobj.read1(65536)  # type: ignore[union-attr]
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = got[key.data]
                buffer.extend(chunk)
                if key.data == "out" and len(buffer) > MAX_OUTPUT:
                    raise RuntimeError(f"wrote more than {MAX_OUTPUT} bytes")
                del buffer[: max(0, len(buffer) - MAX_OUTPUT)]
    return bytes(got["out"]), bytes(got["err"])
