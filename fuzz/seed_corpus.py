"""Seeds for braid's fuzz targets (docs/fuzzing.md), from the test fixtures and the CNI and
NPWG spec examples: writes one file per seed under DIR/<target>/ (default target/fuzz/seeds).
``fuzz/run.sh --reseed`` minimises them into the committed corpus, fuzz/corpus/<target>/."""

from __future__ import annotations

import base64
import json
import struct
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

CNI_ARGS = [
    "",
    "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0",
    "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=1234-5678",
    "FOO=a=b",
    "FOO=bar;",
    "=",
    "IP=10.1.0.5;MAC=aa:bb:cc:dd:ee:ff",
]
ANNOTATIONS = [
    "net1",
    "ns1/net1@eth1, net2,other-ns/net3",
    "macvlan-conf@net2",
    '[{"name": "net1"}]',
    '[{"name": "macvlan-net", "namespace": "ns1", "interface": "mv0", '
    '"ips": ["10.1.1.5/24", "2001:db8::5"], "mac": "c2:b0:57:49:47:f1", '
    '"default-route": ["10.1.1.1"], "cni-args": {"k": "v"}, "org.example.x": [1, 2.50]}]',
    '[{"name": "ib", "infiniband-guid": "c2:11:22:33:44:55:66:77", "deviceID": "0000:00:1f.6",'
    ' "portMappings": [{"hostPort": 8080, "containerPort": 80}], "bandwidth": {"ingressRate": 1},'
    ' "interfaceRequest": "net5", "ipam-claim-reference": "x"}]',
    '{"name": "override-net", "namespace": "kube-system"}',
    '"net1"',
]
VERSION_OUTPUTS = [
    {"cniVersion": "1.1.0", "supportedVersions": ["0.1.0", "0.4.0", "1.0.0", "1.1.0"]},
    {"cniVersion": "0.2.0"},
]
ERROR_OBJECTS = [
    {"cniVersion": "1.0.0", "code": 7, "msg": "invalid config", "details": "no type"},
    {"code": 11, "msg": "try again"},
]


def dumps(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def config_seeds() -> list[bytes]:
    inputs = FIXTURES / "cni" / "config" / "inputs"
    seeds = [p.read_bytes() for p in sorted(inputs.iterdir()) if p.is_file()]
    for case in sorted((FIXTURES / "cni" / "config").glob("*.json")):
        value = json.loads(case.read_text())["input"]
        if not (isinstance(value, str) and value.startswith("@")):
            seeds.append(dumps(value))
    seeds += [p.read_bytes() for p in sorted((ROOT / "examples" / "net.d").iterdir())]
    return seeds


def result_seeds() -> list[bytes]:
    seeds = [dumps(v) for v in VERSION_OUTPUTS + ERROR_OBJECTS]
    for case in sorted((FIXTURES / "cni" / "convert").glob("*/*.json")):
        seeds.append(dumps(json.loads(case.read_text())["input"]))
    seeds += [p.read_bytes() for p in sorted((FIXTURES / "nad" / "results").glob("*.json"))]
    return seeds


def record_seeds() -> list[bytes]:
    records = FIXTURES / "records"
    return [p.read_bytes() for p in sorted(records.glob("*.json")) if p.name != "cases.json"]


def wire_seeds() -> list[bytes]:
    bodies = [p.read_bytes().strip() for p in sorted((FIXTURES / "protocol").glob("*.json"))]
    braid_conf = (ROOT / "examples" / "nads" / "braid.conf").read_bytes()
    response = {"protocol": 1, "exitCode": 0, "stdout": base64.b64encode(b"{}\n").decode()}
    bodies += [braid_conf, dumps(response), dumps({"protocol": 1, "ready": True})]
    return bodies + [frame(body) for body in bodies]


def annotation_seeds() -> list[bytes]:
    seeds = [a.encode() for a in ANNOTATIONS]
    for pod in sorted((ROOT / "examples" / "nads" / "pods").glob("*.yaml")):
        annotations = yaml.safe_load(pod.read_text())["metadata"].get("annotations", {})
        seeds += [str(v).encode() for v in annotations.values()]
    return seeds


def manifest_seeds() -> list[bytes]:
    """NAD and pod manifests, each behind the byte that picks its suffix (``j``: JSON)."""
    files = sorted((FIXTURES / "nad" / "store").glob("*/*.y*ml"))
    files += sorted((ROOT / "examples" / "nads").glob("**/*.yaml"))
    seeds = [b"y" + p.read_bytes() for p in files]
    seeds += [b"j" + p.read_bytes() for p in sorted((FIXTURES / "nad" / "store").glob("*/*.json"))]
    seeds += [
        b"y" + b"kind: Pod\nmetadata: &m {name: a}\nspec: *m\n",
        b"y" + b"kind: Pod\nmetadata: {name: 0x" + b"f" * 4000 + b"}\n",
        b"y" + b"kind: NetworkAttachmentDefinition\nmetadata: {name: a}\nspec:\n"
        b'  config: {cniVersion: "1.0.0", type: bridge, ipam: {type: host-local}}\n',
        b'j{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "a"}}]}',
        b'j{"kind": "NetworkAttachmentDefinition", "metadata": {"name": "a"}, "spec": '
        b'{"config": "{\\"type\\": \\"bridge\\", \\"x\\": \\"\\ud800\\"}"}}',
    ]
    return seeds


def _event(kind: str, obj: dict[str, Any]) -> bytes:
    return dumps({"type": kind, "object": obj})


def k8s_object_seeds() -> list[bytes]:
    """Watch events of pods and NADs, as the API server sends them."""
    status = [
        {"name": "cbr0", "interface": "eth0", "ips": ["10.1.0.5"], "default": True},
        {"name": "default/macvlan-conf", "interface": "net1", "ips": ["10.2.0.5"], "dns": {}},
    ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "uid": "0b9d8e8a-2f0c-4d7e-9d55-6a4c4f7b1a11",
            "resourceVersion": "7",
            "annotations": {
                "k8s.v1.cni.cncf.io/networks": "macvlan-conf@net1",
                "k8s.v1.cni.cncf.io/network-status": json.dumps(status),
            },
        },
        "spec": {"nodeName": "node-a", "resourceClaims": [{"name": "nic"}]},
    }
    seeds = [_event("ADDED", pod), _event("DELETED", pod)]
    for path in sorted((FIXTURES / "nad" / "store" / "nads").glob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for obj in doc.get("items", [doc]) if isinstance(doc, dict) else []:
                seeds.append(_event("MODIFIED", obj))
    seeds += [
        _event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "9"}}),
        _event("ERROR", {"kind": "Status", "code": 410, "message": "too old"}),
        b'{"type": "ADDED", "object": {"metadata": {"name": "a\xdc"}}}',
    ]
    return seeds


def network_status_seeds() -> list[bytes]:
    """Results of every version, each for the default network with v1 keys and for a
    secondary one with Multus's (the first byte's bits)."""
    return [flags + result for result in result_seeds() for flags in (b"\x00", b"\x03")]


KUBECONFIG = """apiVersion: v1
kind: Config
current-context: braid
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    tls-server-name: kubernetes
contexts:
- name: braid
  context: {cluster: local, user: node, namespace: kube-system}
users:
- name: node
  user:
"""
KUBECONFIG_USERS = [
    "    token: abc.def\n",
    "    tokenFile: token\n    client-certificate: cert.pem\n    client-key: key.pem\n",
    "    client-certificate-data: LS0tCg==\n    client-key-data: LS0tCg==\n",
    "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./get-token\n"
    "      args: [--node, a]\n      env: [{name: A, value: b}]\n      interactiveMode: Never\n"
    "      provideClusterInfo: true\n",
    "    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: get-token}\n",
    "    auth-provider: {name: oidc, config: {id-token: x}}\n",
]
KUBECONFIG_SECOND = """current-context: other
clusters:
- name: local
  cluster: {server: 'http://10.0.0.1:8080', proxy-url: 'http://user:pw@proxy:3128'}
- {name: other, cluster: {server: 'https://b'}}
contexts: [{name: other, context: {cluster: other, user: node}}]
users: [{name: node, user: {token: b}}]
"""


def kubeconfig_seeds() -> list[bytes]:
    """A kubeconfig for each kind of user, a second file to merge, a plugin's answer."""
    answers = [b""]
    for api, status in (
        ("v1", {"token": "t0k", "expirationTimestamp": "2030-01-01T00:00:00Z"}),
        ("v1beta1", {"clientCertificateData": "-----BEGIN", "clientKeyData": "-----BEGIN"}),
    ):
        version = f"client.authentication.k8s.io/{api}"
        answers.append(dumps({"apiVersion": version, "kind": "ExecCredential", "status": status}))
    seeds = []
    for user in KUBECONFIG_USERS:
        for answer in answers:
            files = (KUBECONFIG + user).encode() + b"\0" + KUBECONFIG_SECOND.encode()
            seeds.append(files + b"\0" + answer)
    nested = [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    bomb = [
        "l0: &l0 [x, x, x, x, x, x, x, x, x, x]",
        *nested,
        "users: [{name: u, user: {token: *l7}}]",
    ]
    seeds.append("\n".join(bomb).encode())
    return seeds


DEVICE_INFOS = [  # the NPWG Device Information specification's examples, by type
    {
        "type": "pci",
        "version": "1.1.0",
        "pci": {
            "pci-address": "0000:18:02.5",
            "vhost-net": "/dev/vhost-net",
            "rdma-device": "mlx5_3",
            "pf-pci-address": "0000:18:00.0",
            "representor-device": "eth3",
        },
    },
    {
        "type": "vdpa",
        "version": "1.1.0",
        "vdpa": {
            "parent-device": "vdpa:0000:65:00.3",
            "driver": "vhost",
            "path": "/dev/vhost-vdpa-1",
            "pci-address": "0000:65:00.3",
        },
    },
    {
        "type": "vhost-user",
        "version": "1.1.0",
        "vhost-user": {"mode": "server", "path": "/var/run/vhost/sock"},
    },
    {
        "type": "memif",
        "version": "1.1.0",
        "memif": {"role": "primary", "mode": "ethernet", "path": "/var/run/memif.sock"},
    },
    {
        "type": "pci",
        "version": "1.0.0",
        "pci": {"pci-address": "0000:03:02.1"},
        "network-status": {"x": [1, 2.5, None, True]},
    },
]


def device_info_seeds() -> list[bytes]:
    """Device-information files, each written once (the first byte: copies, less one)."""
    seeds = [b"\x00" + dumps(info) for info in DEVICE_INFOS]
    return [*seeds, b"\x00{}", b"\x00[]", b"\x07" + dumps(DEVICE_INFOS[0])]


def _pod_message(api: Any, namespace: str, name: str, device: str) -> Any:
    claim = api.DynamicResource(
        claim_name="nic",
        claim_namespace=namespace,
        claim_resources=[
            api.ClaimResource(
                cdi_devices=[api.CDIDevice(name=f"dra.example.com/net={device}")],
                driver_name="dra.example.com",
                pool_name="node-a",
                device_name=device,
            )
        ],
    )
    devices = api.ContainerDevices(resource_name="intel.com/sriov", device_ids=[device, "x"])
    container = api.ContainerResources(name="c0", devices=[devices], dynamic_resources=[claim])
    return api.PodResources(name=name, namespace=namespace, containers=[container])


def podresources_seeds() -> list[bytes]:
    """kubelet's Get and List replies (the first byte: bit 0 for List), as protobuf bytes."""
    sys.path.insert(0, str(ROOT / "python"))
    from braid.k8s.podresources import api_pb2 as api  # noqa: PLC0415 - needs the path

    ours = _pod_message(api, "default", "web-0", "0000:03:02.1")
    other = _pod_message(api, "other", "db-0", "0000:03:02.2")
    get = api.GetPodResourcesResponse(pod_resources=ours).SerializeToString()
    listed = api.ListPodResourcesResponse(pod_resources=[other, ours]).SerializeToString()
    return [b"\x00" + get, b"\x01" + listed, b"\x00", b"\x01", b"\x00\x0a\xff\xff\xff\xff\x0f"]


DRA_DEVICE = {"driver": "dra.example.com", "pool": "node-a", "device": "nic-1"}
DRA_OBJECTS = [
    {  # a pod with a claim of its own and one made from a template
        "metadata": {"name": "web-0", "namespace": "default", "uid": "u-1"},
        "spec": {
            "nodeName": "node-a",
            "resourceClaims": [
                {"name": "nic", "resourceClaimName": "shared-nic"},
                {"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
            ],
        },
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "web-0-gpu"}]},
    },
    {  # an allocated ResourceClaim, reserved for the pod, with the driver's network data
        "metadata": {"name": "shared-nic", "namespace": "default", "uid": "c-1"},
        "status": {
            "allocation": {"devices": {"results": [{**DRA_DEVICE, "request": "nic"}]}},
            "reservedFor": [{"resource": "pods", "name": "web-0", "uid": "u-1"}],
            "devices": [
                {
                    **DRA_DEVICE,
                    "networkData": {
                        "interfaceName": "net1",
                        "ips": ["10.9.0.5/24", "2001:db8::5/64"],
                        "hardwareAddress": "aa:bb:cc:dd:ee:ff",
                    },
                }
            ],
        },
    },
    {  # the node's ResourceSlice of the driver
        "metadata": {"name": "node-a-dra.example.com"},
        "spec": {
            "driver": "dra.example.com",
            "nodeName": "node-a",
            "pool": {"name": "node-a", "generation": 2, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "nic-1",
                    "attributes": {
                        "k8s.cni.cncf.io/resourceName": {"string": "example.com/nic"},
                        "k8s.cni.cncf.io/deviceID": {"string": "0000:03:02.1"},
                    },
                }
            ],
        },
    },
    {"metadata": [], "status": {"allocation": {}}},
    {  # a pod asking for the device as an extended resource: the scheduler's claim and status
        "metadata": {"name": "web-1", "namespace": "default", "uid": "u-2"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "app"}]},
        "status": {
            "extendedResourceClaimStatus": {
                "resourceClaimName": "web-1-extended-resources-x2k9q",
                "requestMappings": [
                    {
                        "containerName": "app",
                        "resourceName": "example.com/nic",
                        "requestName": "container-0-request-0",
                    }
                ],
            }
        },
    },
    {  # that claim: owned by the pod, allocated and reserved
        "metadata": {
            "name": "web-1-extended-resources-x2k9q",
            "namespace": "default",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "web-1",
                    "uid": "u-2",
                    "controller": True,
                }
            ],
        },
        "status": {
            "allocation": {
                "devices": {"results": [{**DRA_DEVICE, "request": "container-0-request-0"}]}
            },
            "reservedFor": [{"resource": "pods", "name": "web-1", "uid": "u-2"}],
        },
    },
]


def devinfo_seeds() -> list[bytes]:
    """A container ID, NUL, then capability arguments naming its device-information file (or
    a ``deviceInfoDir``)."""
    base = "/var/run/k8s.cni.cncf.io/devinfo"
    files = [f"{base}/cni/abc123/net1-device.json", f"{base}/cni/../cni/abc123/x", "cni/abc123/x"]
    seeds = [b"abc123\0" + dumps({"CNIDeviceInfoFile": f, "portMappings": []}) for f in files]
    return [*seeds, f"abc123\0{base}/".encode(), b"..\0/cni/../x", b"\0{}"]


def _attr(kind: int, value: bytes) -> bytes:
    body = struct.pack("=HH", 4 + len(value), kind) + value
    return body + b"\0" * (-len(body) % 4)


def _message(kind: int, payload: bytes) -> bytes:
    """A netlink message (``struct nlmsghdr``, host byte order, as the kernel replies)."""
    return struct.pack("=IHHII", 16 + len(payload), kind, 2, 1, 0) + payload


def netlink_seeds() -> list[bytes]:
    """Dump replies the kernel sends for ``ip rule`` and ``ip route``: a rule and a route of
    each family as braid's source routing makes them, a route through ``RTA_VIA``, then
    ``NLMSG_DONE``; each value after it is read by the round trips."""
    new_rule, new_route, done = 32, 24, struct.pack("=IHHII", 20, 3, 2, 1, 0) + bytes(4)
    v4, v6 = bytes([10, 231, 51, 5]), bytes.fromhex("fd000231005100000000000000000005")
    rule4 = struct.pack("=BBBBBBBBI", 2, 0, 32, 0, 0, 0, 0, 1, 0)
    rule4 += _attr(2, v4) + _attr(15, struct.pack("=I", 10003)) + _attr(6, struct.pack("=I", 1000))
    rule6 = struct.pack("=BBBBBBBBI", 10, 0, 128, 0, 0, 0, 0, 1, 0) + _attr(2, v6)
    route4 = struct.pack("=BBBBBBBBI", 2, 24, 0, 0, 0, 3, 0, 1, 0) + _attr(
        15, struct.pack("=I", 10003)
    )
    route4 += _attr(1, bytes([10, 231, 51, 0])) + _attr(4, struct.pack("=I", 3))
    route4 += _attr(5, bytes([10, 231, 51, 1])) + _attr(6, struct.pack("=I", 300))
    route6 = struct.pack("=BBBBBBBBI", 10, 0, 0, 0, 254, 3, 0, 1, 0) + _attr(5, v6)
    via = struct.pack("=BBBBBBBBI", 2, 0, 0, 0, 254, 3, 0, 1, 0) + _attr(
        18, struct.pack("=H", 10) + v6
    )
    replies = [
        _message(new_rule, rule4) + _message(new_rule, rule6) + done,
        _message(new_route, route4) + _message(new_route, route6) + done,
        _message(new_route, via),
        _message(new_rule, rule4[:8]),
        done,
    ]
    return [*replies, b"", bytes(64), b"\xff" * 64]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "fuzz" / "seeds"
    cni_args = [a.encode() for a in CNI_ARGS]
    targets = {
        "cni_config": config_seeds(),
        "cni_result": result_seeds(),
        "record": record_seeds(),
        "wire": wire_seeds(),
        "daemon_protocol": wire_seeds(),
        "cni_args": cni_args,
        "cni_args_py": cni_args,
        "annotations": annotation_seeds(),
        "nad_manifest": manifest_seeds(),
        "k8s_objects": k8s_object_seeds(),
        "network_status": network_status_seeds(),
        "kubeconfig": kubeconfig_seeds(),
        "device_info": device_info_seeds(),
        "podresources": podresources_seeds(),
        "dra": [dumps(obj) for obj in DRA_OBJECTS],
        "devinfo": devinfo_seeds(),
        "netlink": netlink_seeds(),
    }
    for target, seeds in targets.items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        for number, seed in enumerate(seeds):
            (folder / f"seed-{number:03d}").write_bytes(seed)


if __name__ == "__main__":
    main()
