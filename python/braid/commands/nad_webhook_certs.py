"""The NAD webhook's certificates: a CA of its own and a serving certificate it signs.

Made with the ``openssl`` command (Debian's ``openssl`` package, in braid's image through
``ca-certificates``): ``openssl ca`` takes validity times to the second, so a lifetime can be
minutes as well as years. Keys are P-256 EC keys, written only inside a private temporary
directory (mode 0700) that is removed before the function returns; what leaves is PEM text.
"""

from __future__ import annotations

import calendar
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from braid.errors import INVALID_CONFIG, CniError

# A certificate is valid from a minute before it was made: clocks of the API servers that
# check it may lag a little behind this replica's.
BACKDATE = 60
_OPENSSL_TIMEOUT = 30.0
_CA_CONFIG = """\
[ca]
default_ca = webhook
[webhook]
database = index.txt
new_certs_dir = .
rand_serial = yes
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[anything]
commonName = supplied
"""
_CA_EXTENSIONS = """\
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
"""
_SERVING_EXTENSIONS = """\
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = {names}
"""


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, PEM text."""

    cert: str
    key: str


def _openssl(*args: str, cwd: Path) -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CniError(INVALID_CONFIG, "the NAD webhook needs the `openssl` command")
    try:
        done = subprocess.run(
            [openssl, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=_OPENSSL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise CniError(INVALID_CONFIG, f"openssl {args[0]} did not finish in time") from None
    if done.returncode != 0:
        raise CniError(INVALID_CONFIG, f"openssl {args[0]} failed: {done.stderr.strip()[:500]}")
    return done.stdout


def _asn1_time(at: float) -> str:
    return time.strftime("%Y%m%d%H%M%SZ", time.gmtime(at))


def _sign(
    work: Path, subject: str, extensions: str, lifetime: float, signer: KeyPair | None
) -> KeyPair:
    """A new key and a certificate for it valid ``lifetime`` seconds from now, signed by
    ``signer`` (None: by itself)."""
    (work / "ca.cnf").write_text(_CA_CONFIG)
    (work / "index.txt").write_text("")
    (work / "ext.cnf").write_text(extensions)
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", "new.key", cwd=work)  # fmt: skip
    _openssl("req", "-new", "-key", "new.key", "-subj", subject, "-out", "new.csr", cwd=work)
    now = time.time()
    signing = ["-selfsign", "-keyfile", "new.key"]
    if signer is not None:
        (work / "signer.crt").write_text(signer.cert)
        (work / "signer.key").write_text(signer.key)
        signing = ["-cert", "signer.crt", "-keyfile", "signer.key"]
    _openssl(
        "ca", "-batch", "-notext", "-config", "ca.cnf", "-extfile", "ext.cnf", *signing,
        "-startdate", _asn1_time(now - BACKDATE), "-enddate", _asn1_time(now + lifetime),
        "-in", "new.csr", "-out", "new.crt", cwd=work,
    )  # fmt: skip
    return KeyPair(cert=(work / "new.crt").read_text(), key=(work / "new.key").read_text())


def _in_private_dir(
    subject: str, extensions: str, lifetime: float, signer: KeyPair | None
) -> KeyPair:
    with tempfile.TemporaryDirectory(prefix="braid-nad-webhook-") as name:
        work = Path(name)
        work.chmod(0o700)
        return _sign(work, subject, extensions, lifetime, signer)


def make_ca(*, lifetime: float) -> KeyPair:
    """A new self-signed CA valid ``lifetime`` seconds."""
    # A name of its own: the keeper tells CAs apart by their subjects.
    subject = f"/CN=braid-nad-webhook-ca-{secrets.token_hex(6)}"
    return _in_private_dir(subject, _CA_EXTENSIONS, lifetime, None)


def make_serving(*, ca: KeyPair, hosts: list[str], lifetime: float) -> KeyPair:
    """A serving certificate for ``hosts`` (DNS names or IP addresses) signed by ``ca``."""
    names = ",".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    extensions = _SERVING_EXTENSIONS.format(names=names)
    return _in_private_dir(f"/CN={hosts[0]}", extensions, lifetime, ca)


def _is_ip(host: str) -> bool:
    import ipaddress  # noqa: PLC0415

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class CertInfo:
    """What the keeper reads of a certificate: its validity and who issued it."""

    not_before: float
    not_after: float
    subject_hash: str
    issuer_hash: str


def _epoch(text: str) -> float:
    # openssl's rfc_822 form: "Nov 28 14:30:00 2026 GMT"
    return float(calendar.timegm(time.strptime(text.strip(), "%b %d %H:%M:%S %Y GMT")))


def cert_info(pem: str) -> CertInfo | None:
    """Validity and issuer of a PEM certificate; None when it is not one."""
    if "-----BEGIN CERTIFICATE-----" not in pem or len(pem) > 64 << 10:
        return None
    with tempfile.TemporaryDirectory(prefix="braid-nad-webhook-") as name:
        work = Path(name)
        (work / "c.pem").write_text(pem)
        try:
            out = _openssl("x509", "-in", "c.pem", "-noout", "-dates", "-subject_hash",
                           "-issuer_hash", cwd=work)  # fmt: skip
        except CniError:
            return None
    lines = out.splitlines()
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    hashes = [line.strip() for line in lines if "=" not in line]
    try:
        return CertInfo(
            not_before=_epoch(fields["notBefore"]),
            not_after=_epoch(fields["notAfter"]),
            subject_hash=hashes[0],
            issuer_hash=hashes[1],
        )
    except (KeyError, IndexError, ValueError):
        return None


def key_matches(pair: KeyPair) -> bool:
    """True when ``pair.key`` is the private key of ``pair.cert``."""
    with tempfile.TemporaryDirectory(prefix="braid-nad-webhook-") as name:
        work = Path(name)
        work.chmod(0o700)
        (work / "c.pem").write_text(pair.cert)
        (work / "k.pem").write_text(pair.key)
        try:
            from_cert = _openssl("x509", "-in", "c.pem", "-noout", "-pubkey", cwd=work)
            from_key = _openssl("pkey", "-in", "k.pem", "-pubout", cwd=work)
        except CniError:
            return False
    return from_cert.strip() == from_key.strip()
