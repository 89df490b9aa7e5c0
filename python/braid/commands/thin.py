"""``braid-thin``: braid as an in-process CNI plugin (thin mode, no daemon).

CNI environment and stdin in, exactly one JSON result or error out; nothing else reaches
stdout. The paths it trusts come from the node file beside it, as for the shim
(``braid.config.trust``). The compiled shim with the daemon gives the same answers faster.

A runtime starts this process for every call, so what it imports is paid on every call: VERSION
is answered without the engine, and the other verbs import the engine and the choice of its
session (``braid.k8s.select``: the file store, or Kubernetes) alone (no daemon, no metrics, no
command line parser; the Kubernetes client only when the call uses the Kubernetes store,
kubelet's client only when it asks for devices, PyYAML only for YAML manifests);
``tests/unit/engine/test_engine_thin_imports.py`` holds it to that.
"""

from __future__ import annotations

import os
import sys

from braid.version import package_version, version_document


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"braid-thin {package_version()}\n")
        return 0
    if os.environ.get("CNI_COMMAND", "") == "VERSION":
        out, code = version_document(), 0
    else:
        from braid.config.trust import from_node, node_file_beside  # noqa: PLC0415
        from braid.engine.entry import run_cni  # noqa: PLC0415
        from braid.engine.request import MAX_STDIN  # noqa: PLC0415
        from braid.k8s.select import open_call_session  # noqa: PLC0415

        stdin = sys.stdin.buffer.read(MAX_STDIN + 1)
        node_file = node_file_beside(sys.argv[0])
        out, code = run_cni(
            os.environ,
            stdin,
            session=open_call_session,
            policy=lambda config: from_node(config, node_file),
        )
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
