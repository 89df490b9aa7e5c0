"""When the NAD webhook's certificates are renewed, as a function of what its Secret holds.

The Secret (``data``) holds the CA that signs (``ca.crt``, ``ca.key``), the serving pair
(``tls.crt``, ``tls.key``), a CA staged to take over (``next-ca.crt``, ``next-ca.key``), the CA
it took over from (``previous-ca.crt``) and the serving certificate's hosts (``hosts``). Every
CA of those that has not expired is in the bundle the API server trusts (``bundle``).

A certificate is renewed once two thirds of its life have passed. A serving certificate is
simply issued again by the same CA: the bundle does not change. A CA is first staged: it
joins the bundle, and only ``propagation`` seconds later does it sign the serving
certificate, so that every API server trusts it before any replica serves with it; the old
CA stays in the bundle until it expires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from braid.commands.nad_webhook_certs import (
    BACKDATE,
    CertInfo,
    KeyPair,
    cert_info,
    key_matches,
    make_ca,
    make_serving,
)

RENEW_AFTER = 2 / 3  # of a certificate's life


@dataclass(frozen=True)
class Policy:
    ca_lifetime: float
    serving_lifetime: float
    propagation: float
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class Material:
    """What the Secret holds (None: absent or unusable)."""

    ca: KeyPair | None = None
    serving: KeyPair | None = None
    next_ca: KeyPair | None = None
    previous_ca: str | None = None
    hosts: str = ""

    def to_data(self) -> dict[str, str]:
        """The Secret's ``data`` as text (the caller encodes it)."""
        data = {"hosts": self.hosts, "ca-bundle.crt": self.bundle()}
        pairs = {"ca": self.ca, "tls": self.serving, "next-ca": self.next_ca}
        for prefix, pair in pairs.items():
            if pair is not None:
                data[f"{prefix}.crt"], data[f"{prefix}.key"] = pair.cert, pair.key
        if self.previous_ca:
            data["previous-ca.crt"] = self.previous_ca
        return data

    def bundle(self) -> str:
        """Every CA a serving certificate of this Secret may come from, PEM."""
        cas = [p.cert for p in (self.ca, self.next_ca) if p is not None]
        cas += [self.previous_ca] if self.previous_ca else []
        return "".join(c if c.endswith("\n") else f"{c}\n" for c in cas)


def material_from_data(data: dict[str, str]) -> Material:
    def pair(prefix: str) -> KeyPair | None:
        cert, key = data.get(f"{prefix}.crt", ""), data.get(f"{prefix}.key", "")
        return KeyPair(cert=cert, key=key) if cert and key else None

    return Material(
        ca=pair("ca"),
        serving=pair("tls"),
        next_ca=pair("next-ca"),
        previous_ca=data.get("previous-ca.crt") or None,
        hosts=data.get("hosts", ""),
    )


def _due(info: CertInfo, now: float) -> bool:
    made = info.not_before + BACKDATE  # certificates are valid from a little before
    return now >= made + (info.not_after - made) * RENEW_AFTER


def _usable(pair: KeyPair | None, now: float) -> CertInfo | None:
    info = cert_info(pair.cert) if pair is not None else None
    if pair is None or info is None or now >= info.not_after or not key_matches(pair):
        return None
    return info


def _fresh(policy: Policy) -> Material:
    ca = make_ca(lifetime=policy.ca_lifetime)
    return _with_serving(Material(ca=ca), policy, ca_left=policy.ca_lifetime)


def _with_serving(m: Material, policy: Policy, *, ca_left: float) -> Material:
    if m.ca is None:  # the callers give a CA; without one there is nothing to sign with
        return _fresh(policy)
    lifetime = min(policy.serving_lifetime, ca_left)
    serving = make_serving(ca=m.ca, hosts=list(policy.hosts), lifetime=lifetime)
    return replace(m, serving=serving, hosts=",".join(policy.hosts))


def _serving_ok(m: Material, ca: CertInfo, policy: Policy, now: float) -> bool:
    info = _usable(m.serving, now)
    return (
        info is not None
        and info.issuer_hash == ca.subject_hash
        and not _due(info, now)
        and m.hosts == ",".join(policy.hosts)
    )


def _without_expired_previous(m: Material, now: float) -> Material:
    if m.previous_ca is None:
        return m
    info = cert_info(m.previous_ca)
    return m if info is not None and now < info.not_after else replace(m, previous_ca=None)


def renewed(m: Material, policy: Policy, now: float) -> Material | None:
    """What the Secret should hold now, or None when it is right as it is."""
    ca = _usable(m.ca, now)
    if ca is None:
        return _fresh(policy)
    out = _without_expired_previous(m, now)
    staged = _usable(m.next_ca, now) if m.next_ca is not None else None
    if m.next_ca is not None and staged is None:
        out = replace(out, next_ca=None)
    if staged is None and _due(ca, now):
        out = replace(out, next_ca=make_ca(lifetime=policy.ca_lifetime))
    elif staged is not None and now >= staged.not_before + BACKDATE + policy.propagation:
        previous = m.ca.cert if m.ca is not None else None
        out = replace(out, ca=out.next_ca, next_ca=None, previous_ca=previous)
        return _with_serving(out, policy, ca_left=staged.not_after - now)
    if not _serving_ok(out, ca, policy, now):
        out = _with_serving(out, policy, ca_left=ca.not_after - now)
    return None if out == m else out
