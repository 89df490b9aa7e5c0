"""Throw-away keys and certificates for the test API server, made with the `openssl` command.

One CA signs the API server's serving certificate (valid for 127.0.0.1 and localhost), which
the fault proxy reuses, and any client certificates asked for (`make_client_cert`: the node
tier's kubelet, controller-manager and scheduler); a separate EC key signs service-account
tokens. Everything lives in one directory that the fixture removes after the session.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
_DAYS = "2"


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    sa_signing_key: Path
    sa_public_key: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the cluster tier needs the `openssl` command (apt-get install openssl)")
    done = subprocess.run(
        [openssl, *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(map(str, args))} failed: {done.stderr.strip()}")


def _make_ca(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "ca.crt", directory / "ca.key"
    _openssl(
        "req", "-x509", *_CURVE, "-keyout", key, "-out", cert, "-days", _DAYS,
        "-subj", "/CN=braid-cluster-tier-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip
    return cert, key


def _make_serving(directory: Path, ca_cert: Path, ca_key: Path) -> tuple[Path, Path]:
    cert, key, csr = directory / "serving.crt", directory / "serving.key", directory / "serving.csr"
    extensions = directory / "serving.ext"
    extensions.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid\n"
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
    )
    _openssl("req", "-new", *_CURVE, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1",
             cwd=directory)  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
        "-out", cert, "-days", _DAYS, "-extfile", extensions,
        cwd=directory,
    )  # fmt: skip
    return cert, key


def make_pki(directory: Path) -> Pki:
    """Writes a fresh CA, serving certificate and service-account key pair into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _make_ca(directory)
    serving_cert, serving_key = _make_serving(directory, ca_cert, ca_key)
    sa_key, sa_pub = directory / "sa.key", directory / "sa.pub"
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", sa_key, cwd=directory)  # fmt: skip
    _openssl("pkey", "-in", sa_key, "-pubout", "-out", sa_pub, cwd=directory)
    return Pki(ca_cert, ca_key, serving_cert, serving_key, sa_key, sa_pub)


def make_client_cert(
    pki: Pki, name: str, user: str, groups: Sequence[str] = ()
) -> tuple[Path, Path]:
    """A client certificate `<name>.crt`/`<name>.key` beside the CA, signed by it, for `user`
    (its CN) in `groups` (one O each), as the API server's x509 authenticator reads them."""
    directory = pki.ca_cert.parent
    cert, key, csr = directory / f"{name}.crt", directory / f"{name}.key", directory / f"{name}.csr"
    extensions = directory / f"{name}.ext"
    extensions.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=clientAuth\n"
    )
    subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
    _openssl("req", "-new", *_CURVE, "-keyout", key, "-out", csr, "-subj", subject,
             cwd=directory)  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey", pki.ca_key, "-CAcreateserial",
        "-out", cert, "-days", _DAYS, "-extfile", extensions,
        cwd=directory,
    )  # fmt: skip
    return cert, key
