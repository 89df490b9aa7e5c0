"""``auxiliaryCNIChainName`` (Multus 4.2.1 and later): the chain directory next to the
clusterNetwork file becomes one network list, attached last, named ``net<N>`` by position,
flagged so its ADD starts from an empty prevResult; missing or empty directory: no chain."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.config import BraidConfig, load_braid_config
from braid.engine.context import runtime_request
from braid.engine.record import (
    RECORD_KIND,
    RECORD_VERSION,
    AttachmentEntry,
    AttachmentRecord,
    decode_record,
)
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef
from braid.nad import resolve_plan as resolve
from braid.nad.plan import Attachment, AttachmentPlan

POD = PodRef(namespace="my-namespace", name="my-pod", uid="u1")
NETWORKS = "k8s.v1.cni.cncf.io/networks"
CHAIN = "vendor-chain"
# Verbatim bytes: key order, spacing and number text must reach the plugins unchanged.
TUNING = b'{"type": "tuning", "sysctl": {"net.ipv4.conf.all.arp_notify": "1"}, "weight": 1.50}\n'
SBR = b'{"type":"sbr"}'


class OneNadStore:
    """Knows the NAD ``my-namespace/macvlan-a`` only."""

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        if (namespace, name) != ("my-namespace", "macvlan-a"):
            return None
        config = json.dumps({"cniVersion": "1.0.0", "type": "macvlan"})
        return NetworkAttachmentDefinition(namespace=namespace, name=name, config=config)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


@pytest.fixture
def cluster_file(tmp_path: Path) -> Path:
    directory = tmp_path / "net.d"
    directory.mkdir()
    path = directory / "10-cluster.conflist"
    doc = {"cniVersion": "0.4.0", "name": "cluster", "plugins": [{"type": "ptp"}]}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def chain_dir(cluster_file: Path) -> Path:
    directory = cluster_file.parent / CHAIN
    directory.mkdir()
    (directory / "20-sbr.conf").write_bytes(SBR)
    (directory / "10-tuning.conf").write_bytes(TUNING)
    (directory / "30-ignored.conflist").write_text('{"type": "bridge"}')
    (directory / "40-ignored.json").write_text('{"type": "bridge"}')
    return directory


def braid(cluster: str, **keys: Any) -> BraidConfig:
    doc = {"type": "braid", "clusterNetwork": cluster, "auxiliaryCNIChainName": CHAIN, **keys}
    doc["confDir"] = doc.get("confDir", str(Path(cluster).parent))
    return load_braid_config(json.dumps(doc).encode()).config


def plan_of(config: BraidConfig, networks: str = "", pod: PodRef = POD) -> AttachmentPlan:
    annotations = {NETWORKS: networks} if networks else {}
    return resolve(config, OneNadStore(), pod, annotations=annotations)


def chain_of(plan: AttachmentPlan) -> Attachment:
    chain = plan.attachments[-1]
    assert chain.auxiliary_chain
    return chain


def test_chain_runs_last_as_one_list_of_the_directory_plugins(cluster_file, chain_dir):
    plan = plan_of(braid(str(cluster_file)), "macvlan-a,macvlan-a")
    assert [a.ifname for a in plan.attachments] == ["eth0", "net1", "net2", "net3"]
    assert [a.auxiliary_chain for a in plan.attachments] == [False, False, False, True]
    chain = chain_of(plan)
    assert (chain.status_name, chain.network_name, chain.is_default) == (CHAIN, CHAIN, False)
    assert chain.is_list
    assert chain.args_cni == {}
    net = chain.network_list()
    assert net.name == CHAIN
    assert net.summary.cni_version == "0.4.0"  # the clusterNetwork file's version
    assert net.plugin_types == ["tuning", "sbr"]  # lexical order, .conf only
    assert TUNING.strip() in chain.config
    assert SBR in chain.config
    assert b"passthru" not in chain.config


def test_the_chain_is_not_renumbered_by_explicit_names(cluster_file, chain_dir):
    plan = plan_of(braid(str(cluster_file)), "macvlan-a@foo")
    assert [a.ifname for a in plan.attachments] == ["eth0", "foo", "net2"]


def test_an_explicit_name_taking_the_chains_name_is_a_collision(cluster_file, chain_dir):
    with pytest.raises(CniError) as info:
        plan_of(braid(str(cluster_file)), "macvlan-a@net2")
    assert info.value.code == INVALID_CONFIG
    assert "auxiliary chain" in info.value.msg


def test_pods_of_system_namespaces_get_the_chain_too(cluster_file, chain_dir):
    plan = plan_of(braid(str(cluster_file)), pod=PodRef(namespace="kube-system", name="dns"))
    assert [a.ifname for a in plan.attachments] == ["eth0", "net1"]
    assert chain_of(plan).status_name == CHAIN


def test_chain_without_cni_version_follows_the_cluster_file(tmp_path):
    cluster = tmp_path / "cluster.conf"
    cluster.write_text('{"name": "cluster", "type": "ptp"}')
    (tmp_path / CHAIN).mkdir()
    (tmp_path / CHAIN / "a.conf").write_bytes(SBR)
    chain = chain_of(plan_of(braid(str(cluster))))
    assert "cniVersion" not in json.loads(chain.config)


@pytest.mark.parametrize("make", ["missing", "empty", "only-other-files"])
def test_no_chain_when_the_directory_has_no_conf(cluster_file, caplog, make):
    directory = cluster_file.parent / CHAIN
    if make != "missing":
        directory.mkdir()
    if make == "only-other-files":
        (directory / "a.conflist").write_bytes(SBR)
        (directory / "sub.conf").mkdir()
    with caplog.at_level(logging.INFO, logger="braid.nad"):
        plan = plan_of(braid(str(cluster_file)))
    assert [a.ifname for a in plan.attachments] == ["eth0"]
    assert f"no .conf file in {directory}" in caplog.text


def test_no_chain_without_the_key(cluster_file, chain_dir):
    plan = plan_of(braid(str(cluster_file), auxiliaryCNIChainName=""))
    assert [a.auxiliary_chain for a in plan.attachments] == [False]


@pytest.mark.parametrize("kind", ["name", "directory", "delegates"])
def test_cluster_network_must_be_a_file_path(cluster_file, chain_dir, kind):
    inline = [{"name": "inline", "cniVersion": "1.0.0", "type": "ptp"}]
    keys: dict[str, Any] = {
        "name": {"clusterNetwork": "cluster"},
        "directory": {"clusterNetwork": str(cluster_file.parent)},
        "delegates": {"clusterNetwork": "", "delegates": inline},
    }[kind]
    config = braid(str(cluster_file), **keys)
    with pytest.raises(CniError) as info:
        plan_of(config)
    assert info.value.code == INVALID_CONFIG
    assert "`clusterNetwork`" in info.value.msg


@pytest.mark.parametrize("name", ["../etc", "a/b", ".hidden", "-x"])
def test_chain_name_must_be_a_plain_network_name(cluster_file, chain_dir, name):
    with pytest.raises(CniError) as info:
        plan_of(braid(str(cluster_file), auxiliaryCNIChainName=name))
    assert info.value.code == INVALID_CONFIG
    assert "`auxiliaryCNIChainName`" in info.value.msg


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b"[1, 2]", "must be a JSON object"),
        (b"{not json", "not valid JSON"),
        (b'{"type": "../../bin/sh"}', "names a path"),
        (b'{"sysctl": {}}', "'type'"),
        (b'{"plugins": [{"type": "sbr"}]}', "one plugin object"),
    ],
)
def test_a_bad_chain_file_is_an_error_naming_it(cluster_file, chain_dir, text, said):
    (chain_dir / "15-bad.conf").write_bytes(text)
    with pytest.raises(CniError) as info:
        plan_of(braid(str(cluster_file)))
    assert info.value.code == INVALID_CONFIG
    assert said in info.value.msg
    assert str(chain_dir / "15-bad.conf") in info.value.msg


def test_the_record_keeps_the_flag_and_rebuilds_the_empty_prev_result(cluster_file, chain_dir):
    plan = plan_of(braid(str(cluster_file)), "macvlan-a")
    written = AttachmentRecord(
        container_id="c1",
        netns="/run/netns/p",
        kind=RECORD_KIND,
        version=RECORD_VERSION,
        attachments=[AttachmentEntry.of(a, dict(a.capability_args)) for a in plan.attachments],
    )
    raw = msgspec.json.encode(written)
    assert [e.get("auxiliaryChain", False) for e in json.loads(raw)["attachments"]] == [
        False,
        False,
        True,
    ]
    record = decode_record(raw, container_id="c1")
    *others, chain = record.attachments
    assert chain.attachment().auxiliary_chain
    request = runtime_request(record, chain)
    assert request.ifname == "net2"
    assert json.loads(request.initial_prev_result or b"null") == {"cniVersion": "0.4.0"}
    assert all(runtime_request(record, e).initial_prev_result is None for e in others)
