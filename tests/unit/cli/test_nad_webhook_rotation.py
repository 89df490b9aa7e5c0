"""When the NAD webhook renews its certificates (real `openssl`, lifetimes in seconds, the
clock given): a serving certificate under the same CA, a CA staged in the bundle before it
signs, the old CA kept until it expires, anything unusable made afresh."""

from __future__ import annotations

import time
from dataclasses import replace

from braid.commands.nad_webhook_certs import BACKDATE, KeyPair, cert_info, make_ca
from braid.commands.nad_webhook_rotation import (
    Material,
    Policy,
    material_from_data,
    renewed,
)

POLICY = Policy(ca_lifetime=300, serving_lifetime=30, propagation=10, hosts=("svc.ns.svc",))


def issuer_of(pem: str) -> str:
    info = cert_info(pem)
    assert info is not None
    return info.issuer_hash


def subject_of(pem: str) -> str:
    info = cert_info(pem)
    assert info is not None
    return info.subject_hash


def fresh() -> tuple[Material, float]:
    made = renewed(Material(), POLICY, time.time())
    assert made is not None
    assert made.ca is not None
    assert made.serving is not None
    return made, time.time()


def test_an_empty_secret_gets_a_ca_and_a_serving_certificate() -> None:
    m, now = fresh()
    assert m.ca is not None
    assert m.serving is not None
    assert issuer_of(m.serving.cert) == subject_of(m.ca.cert)
    assert m.bundle() == m.ca.cert
    assert m.hosts == "svc.ns.svc"
    assert renewed(m, POLICY, now + 1) is None
    assert material_from_data(m.to_data()) == m


def test_the_serving_certificate_is_renewed_under_the_same_ca() -> None:
    m, now = fresh()
    later = renewed(m, POLICY, now + 21)  # past two thirds of 30 s
    assert later is not None
    assert later.serving is not None
    assert later.ca == m.ca
    assert later.serving != m.serving
    assert later.bundle() == m.bundle()


def test_a_ca_is_staged_then_signs_after_propagation() -> None:
    m, now = fresh()
    staged = renewed(m, POLICY, now + 201)  # past two thirds of 300 s
    assert staged is not None
    assert staged.next_ca is not None
    assert staged.ca is not None
    assert staged.ca == m.ca
    assert staged.bundle() == staged.ca.cert + staged.next_ca.cert
    # Still the old CA's serving certificate: the API servers may not trust the new CA yet.
    assert staged.serving is not None
    assert issuer_of(staged.serving.cert) == subject_of(m.ca.cert)
    info = cert_info(staged.next_ca.cert)
    assert info is not None
    staged_at = info.not_before + BACKDATE
    assert renewed(staged, POLICY, staged_at + 5) in (None, staged)
    promoted = renewed(staged, POLICY, staged_at + POLICY.propagation + 1)
    assert promoted is not None
    assert promoted.ca is not None
    assert promoted.serving is not None
    assert promoted.ca == staged.next_ca
    assert promoted.previous_ca == m.ca.cert
    assert promoted.next_ca is None
    assert issuer_of(promoted.serving.cert) == subject_of(promoted.ca.cert)
    assert promoted.bundle() == promoted.ca.cert + m.ca.cert


def test_an_expired_previous_ca_leaves_the_bundle() -> None:
    m, now = fresh()
    old = make_ca(lifetime=5)  # validity is to the second: 4 s at least, 6 s at most
    with_old = replace(m, previous_ca=old.cert)
    assert renewed(with_old, POLICY, now + 1) is None
    dropped = renewed(with_old, POLICY, now + 7)
    assert dropped is not None
    assert dropped.previous_ca is None


def test_new_hosts_get_a_new_serving_certificate() -> None:
    m, now = fresh()
    moved = renewed(m, replace(POLICY, hosts=("other.ns.svc",)), now + 1)
    assert moved is not None
    assert moved.ca == m.ca
    assert moved.hosts == "other.ns.svc"


def test_anything_unusable_is_made_afresh() -> None:
    m, now = fresh()
    assert m.ca is not None
    assert m.serving is not None
    garbage = material_from_data({"ca.crt": "junk", "ca.key": "junk", "tls.crt": "x"})
    assert renewed(garbage, POLICY, now) is not None
    wrong_key = replace(m, ca=KeyPair(cert=m.ca.cert, key=m.serving.key))
    remade = renewed(wrong_key, POLICY, now)
    assert remade is not None
    assert remade.ca != m.ca
    expired = renewed(m, POLICY, now + 301)
    assert expired is not None
    assert expired.ca != m.ca
    assert expired.previous_ca is None
