# ruff: noqa: S310 - every URL here is https://127.0.0.1 or http://127.0.0.1, built by the tier
"""A real etcd and kube-apiserver on 127.0.0.1 for the cluster tier.

Built by `make kube-bins` (hack/kube/build.sh) into `.cache/kube/bin`, or found in
`$BRAID_KUBE_BIN_DIR`. The server runs with TLS (a throw-away CA), a static token file for the
identities below, RBAC authorization and service-account token issuing (TokenRequest works),
and the ServiceAccount admission plugin off: no controller-manager runs, so namespaces never
get a `default` ServiceAccount and pods would be refused without it. `start(flags=...)` changes
those flags (the node tier runs a controller-manager and a kubelet against the same server);
`stop_apiserver`/`start_apiserver` take the API server down and bring it back on the same port
with the same etcd.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import cluster_pki
import kubernetes.client

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("BRAID_KUBE_BIN_DIR", REPO_ROOT / ".cache" / "kube" / "bin"))
BUILD_HINT = "build them with `make kube-bins` (hack/kube/build.sh)"
START_TIMEOUT = 90.0


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()


BRAID_USER = "system:serviceaccount:braid-system:braid"
# On a node braid's token is the kubelet's projected one, bound to braid's pod there: it carries
# the node's name (user-info extra `authentication.kubernetes.io/node-name`), which braid's
# admission policy (deploy/components/admission-policy) requires of braid's writes. The tier's
# "braid" is such a token, bound to a pod of its own on BRAID_NODE; the static token of
# IDENTITIES["braid"] has the same user and groups and no node.
BRAID_NODE = "node-a"
IDENTITIES: dict[str, Identity] = {
    "admin": Identity("braid-test-admin", ("system:masters",)),
    # The identity braid runs as: RBAC matches ServiceAccount subjects by this user name.
    "braid": Identity(
        BRAID_USER, ("system:serviceaccounts", "system:serviceaccounts:braid-system")
    ),
    "nobody": Identity("braid-test-nobody"),
}


class ApiServerError(RuntimeError):
    """The binaries are missing or a process did not come up; the message says why."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def find_binaries() -> tuple[Path, Path]:
    etcd, apiserver = BIN_DIR / "etcd", BIN_DIR / "kube-apiserver"
    missing = [str(p) for p in (etcd, apiserver) if not os.access(p, os.X_OK)]
    if missing:
        raise ApiServerError(f"no {' and no '.join(missing)}: {BUILD_HINT}")
    return etcd, apiserver


def _log_tail(path: Path, lines: int = 25) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ApiServer:
    url: str
    ca_file: Path
    pki: cluster_pki.Pki
    workdir: Path
    tokens: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    # The command lines once started (start_etcd and start_apiserver run them again).
    argv: list[str] = field(default_factory=list)
    etcd_argv: list[str] = field(default_factory=list)
    etcd_url: str = ""

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def log_path(self) -> Path:
        return self.workdir / "kube-apiserver.log"

    def token(self, identity: str) -> str:
        """The bearer token of `identity` (a key of IDENTITIES): the static one, but for braid,
        whose token is bound to a pod on BRAID_NODE, made on first use (once deploy/base is
        applied)."""
        if identity == "braid":
            if "braid@node" not in self.tokens:
                with self.api_client("admin") as admin:
                    self.tokens["braid@node"] = node_bound_token(admin, "braid-tier", BRAID_NODE)
            return self.tokens["braid@node"]
        return self.tokens[identity]

    def kubeconfig(
        self, identity: str, path: Path, *, server: str | None = None, token: str | None = None
    ) -> Path:
        """Writes a kubeconfig for `identity` (token user, CA inline) to `path`; `server` (the
        fault proxy's URL) and `token` (one from TokenRequest) replace the defaults."""
        ca_data = base64.b64encode(self.ca_file.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "braid-test",
                    "cluster": {
                        "server": server or self.url,
                        "certificate-authority-data": ca_data,
                    },
                }
            ],
            "users": [{"name": identity, "user": {"token": token or self.token(identity)}}],
            "contexts": [
                {"name": identity, "context": {"cluster": "braid-test", "user": identity}}
            ],
            "current-context": identity,
        }
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        path.chmod(0o600)
        return path

    def api_client(
        self, identity: str = "admin", *, token: str | None = None
    ) -> kubernetes.client.ApiClient:
        """A `kubernetes` client as `identity` (or with `token`); the caller closes it."""
        configuration = kubernetes.client.Configuration(host=self.url)
        configuration.ssl_ca_cert = str(self.ca_file)
        configuration.api_key = {"authorization": token or self.token(identity)}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def stop(self) -> None:
        """Stops kube-apiserver, then etcd; kills whatever does not stop within 15 s."""
        for process in reversed(self.processes):
            _terminate(process)
        self.processes.clear()

    def stop_apiserver(self, grace: float = 15.0) -> None:
        """Stops kube-apiserver alone (SIGTERM, SIGKILL after `grace` seconds: with clients
        watching it may take that long); etcd keeps the cluster's state."""
        if len(self.processes) > 1:
            _terminate(self.processes.pop(), grace)

    def start_etcd(self) -> None:
        """Starts etcd again after `stop` (same data, same ports) and waits for its health."""
        if self.processes:
            raise ApiServerError("start_etcd: stop everything first")
        self.processes.append(_spawn(self.etcd_argv, self.workdir / "etcd.log", append=True))
        _wait_ready(self, f"{self.etcd_url}/health", self.workdir / "etcd.log")

    def start_apiserver(self) -> None:
        """Starts kube-apiserver again (same flags, port and etcd; its log is appended to) and
        returns once /readyz says ok."""
        if len(self.processes) != 1:
            raise ApiServerError("start_apiserver: etcd alone must be running")
        self.processes.append(_spawn(self.argv, self.log_path, append=True))
        _wait_ready(self, f"{self.url}/readyz", self.log_path)


def node_bound_token(
    admin: kubernetes.client.ApiClient, pod: str, node: str, *, seconds: int = 86400
) -> str:
    """A token of braid's ServiceAccount bound to braid-system/`pod`, created bound to `node`
    (`spec.nodeName`) unless it exists: TokenRequest adds the node's name to such a token, as
    to the kubelet's projected one. Valid while the pod exists; deleting it is the caller's."""
    core = kubernetes.client.CoreV1Api(admin)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": "braid-system"},
        "spec": {
            "nodeName": node,
            "serviceAccountName": "braid",
            "containers": [{"name": "braid", "image": "braid"}],
        },
    }
    try:
        uid = core.create_namespaced_pod("braid-system", body).metadata.uid
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
        uid = core.read_namespaced_pod(pod, "braid-system").metadata.uid
    ref = kubernetes.client.V1BoundObjectReference(kind="Pod", api_version="v1", name=pod, uid=uid)
    spec = kubernetes.client.V1TokenRequestSpec(
        audiences=[], expiration_seconds=seconds, bound_object_ref=ref
    )
    request = kubernetes.client.AuthenticationV1TokenRequest(spec=spec)
    answer = core.create_namespaced_service_account_token("braid", "braid-system", request)
    return str(answer.status.token)


def _terminate(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _spawn(argv: list[str], log: Path, *, append: bool = False) -> subprocess.Popen[bytes]:
    with log.open("ab" if append else "wb") as sink:
        # A session of its own: an interrupt from the terminal reaches pytest alone, whose
        # fixtures stop the servers.
        return subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _etcd_argv(binary: Path, workdir: Path) -> tuple[list[str], str]:
    client, peer = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    argv = [
        str(binary), "--name=braid-test", f"--data-dir={workdir / 'etcd'}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=braid-test={peer}", "--unsafe-no-fsync", "--log-level=warn",
    ]  # fmt: skip
    return argv, client


def _apiserver_flags(server: ApiServer, etcd_url: str, port: int) -> dict[str, str]:
    pki, workdir = server.pki, server.workdir
    return {
        "etcd-servers": etcd_url,
        "bind-address": "127.0.0.1", "advertise-address": "127.0.0.1", "secure-port": str(port),
        "tls-cert-file": str(pki.serving_cert), "tls-private-key-file": str(pki.serving_key),
        "client-ca-file": str(pki.ca_cert), "cert-dir": str(workdir / "certs"),
        "token-auth-file": str(workdir / "tokens.csv"), "authorization-mode": "RBAC",
        "service-account-issuer": "https://kubernetes.default.svc.cluster.local",
        "service-account-key-file": str(pki.sa_public_key),
        "service-account-signing-key-file": str(pki.sa_signing_key),
        "service-cluster-ip-range": "10.96.0.0/24", "endpoint-reconciler-type": "none",
        "disable-admission-plugins": "ServiceAccount", "profiling": "false",
        "allow-privileged": "true",  # as clusters that run CNI daemons do
        # Alpha in 1.34 (KEP-5004): keeps pod.status.extendedResourceClaimStatus, which braid reads.
        "feature-gates": "DRAExtendedResource=true",
    }  # fmt: skip


def _write_tokens(workdir: Path) -> dict[str, str]:
    tokens = {name: base64.b32encode(os.urandom(20)).decode().lower() for name in IDENTITIES}
    rows = []
    for name, who in IDENTITIES.items():
        groups = ",".join(who.groups)
        rows.append(f'{tokens[name]},{who.user},uid-{name},"{groups}"' if groups else
                    f"{tokens[name]},{who.user},uid-{name}")  # fmt: skip
    path = workdir / "tokens.csv"
    path.write_text("\n".join(rows) + "\n")
    path.chmod(0o600)
    return tokens


def _wait_ready(server: ApiServer, url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {server.token('admin')}"}
    )
    context = server.ssl_context() if url.startswith("https") else None
    last = "no answer"
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in server.processes):
            raise ApiServerError(f"{url}: a process exited during start-up:\n{_log_tail(log)}")
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.2)
    raise ApiServerError(f"{url} not ready after {START_TIMEOUT:.0f} s ({last}):\n{_log_tail(log)}")


def start(
    workdir: Path,
    *,
    flags: Mapping[str, str | None] | None = None,
    pki: cluster_pki.Pki | None = None,
) -> ApiServer:
    """Starts etcd and kube-apiserver with state in `workdir`; returns once /readyz says ok.

    `flags` (names without the leading dashes) replace the API server's defaults; None drops
    one (e.g. `{"disable-admission-plugins": None}` turns the ServiceAccount plugin back on).
    `pki` is one made beforehand (`cluster_pki.make_pki`; flags may name its client
    certificates); without it a fresh one is made in `workdir/pki`.
    """
    etcd_bin, apiserver_bin = find_binaries()
    pki = pki or cluster_pki.make_pki(workdir / "pki")
    port = free_port()
    server = ApiServer(
        f"https://127.0.0.1:{port}", pki.ca_cert, pki, workdir, _write_tokens(workdir)
    )
    try:
        server.etcd_argv, server.etcd_url = _etcd_argv(etcd_bin, workdir)
        server.processes.append(_spawn(server.etcd_argv, workdir / "etcd.log"))
        _wait_ready(server, f"{server.etcd_url}/health", workdir / "etcd.log")
        merged: dict[str, str | None] = dict(_apiserver_flags(server, server.etcd_url, port))
        merged.update(flags or {})
        server.argv = [str(apiserver_bin)]
        server.argv += [f"--{name}={value}" for name, value in merged.items() if value is not None]
        server.processes.append(_spawn(server.argv, server.log_path))
        _wait_ready(server, f"{server.url}/readyz", server.log_path)
    except BaseException:
        server.stop()
        raise
    return server
