"""Only a client made with ``multiplex`` (the daemon's) loads the HTTP/2 packages: a
``braid-thin`` call's client, which makes one or two requests, stays on HTTP/1.1 and never
imports ``h2``, ``hpack`` or ``hyperframe``. Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.kubeconfig import Credentials

creds = Credentials(server="https://127.0.0.1:9", source="test", token="t")
client = KubeClient(CredentialReloader(lambda: creds), env={}, multiplex={multiplex})
try:
    client.request("GET", "/version", timeout=1.0)
except CniError as exc:
    assert "no answer from https://127.0.0.1:9" in str(exc), exc
print(sorted(m for m in ("h2", "hpack", "hyperframe") if m in sys.modules))
"""


@pytest.mark.parametrize(
    ("multiplex", "loaded"), [(False, "[]"), (True, "['h2', 'hpack', 'hyperframe']")]
)
def test_only_a_multiplexing_client_imports_h2(multiplex: bool, loaded: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("{multiplex}", str(multiplex))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == loaded
