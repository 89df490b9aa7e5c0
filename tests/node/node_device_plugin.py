"""A kubelet device plugin (device plugin API v1beta1) for the node tier: it advertises network
interfaces of the node as devices of one extended resource, so that kubelet allocates them to
pods as it allocates SR-IOV virtual functions.

Run as a process of the node (the test starts and stops it):

    python node_device_plugin.py --plugin-dir <kubelet root>/device-plugins \\
        --resource braid-test.example/nic --devinfo-dir /run/k8s.cni.cncf.io/devinfo/dp \\
        bdev0 bdev1 ...

- Each device's ID is its interface name; the interfaces must exist when it starts.
- It writes one NPWG device-information file per device,
  `<devinfo-dir>/<resource>-<ID>-device.json` (every `/` written as `-`), before it registers,
  and removes them when it stops.
- It serves the DevicePlugin service on `<plugin-dir>/<socket>` and registers with kubelet's
  Registration service (`<plugin-dir>/kubelet.sock`). kubelet empties the directory when it
  starts: when its own socket is gone the plugin serves and registers again.
- `Allocate` answers, per container, the environment variable `BRAID_TEST_NIC` (the container's
  device IDs, comma-separated); `GetPreferredAllocation` prefers the lowest IDs;
  `PreStartContainer` is not asked for and answers nothing.
- It prints `registered` on stdout each time kubelet accepted it, and stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deviceplugin import api_pb2, api_pb2_grpc

API_VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
HEALTHY = "Healthy"
ENV_NAME = "BRAID_TEST_NIC"
# A Linux interface name: what the plugin accepts as a device.
_IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")
WATCH_INTERVAL = 0.2
REGISTER_TIMEOUT = 10.0


def device_info_path(directory: Path, resource: str, device: str) -> Path:
    """The NPWG device-plugin file name: `<resource>-<device>-device.json`, `/` as `-`."""
    return directory / f"{resource.replace('/', '-')}-{device.replace('/', '-')}-device.json"


def device_info(device: str, mac: str) -> dict[str, Any]:
    """What the plugin publishes for a device: the test's own type (a veth has no PCI
    address), in the NPWG file's shape."""
    return {"type": "veth", "version": "1.1.0", "veth": {"ifname": device, "mac": mac}}


class Plugin(api_pb2_grpc.DevicePluginServicer):  # type: ignore[misc]
    def __init__(self, devices: list[str]) -> None:
        self.devices = devices
        self.stopping = threading.Event()

    def GetDevicePluginOptions(self, request: Any, context: Any) -> Any:
        return api_pb2.DevicePluginOptions(
            pre_start_required=False, get_preferred_allocation_available=True
        )

    def ListAndWatch(self, request: Any, context: Any) -> Iterator[Any]:
        # The devices never change: one list, then the stream stays open until the plugin
        # stops or kubelet goes away (a closed stream tells kubelet the plugin is gone).
        yield api_pb2.ListAndWatchResponse(
            devices=[api_pb2.Device(ID=d, health=HEALTHY) for d in self.devices]
        )
        while context.is_active() and not self.stopping.wait(0.5):
            pass

    def GetPreferredAllocation(self, request: Any, context: Any) -> Any:
        answers = []
        for wanted in request.container_requests:
            chosen = list(wanted.must_include_deviceIDs)
            for device in sorted(wanted.available_deviceIDs):
                if len(chosen) >= wanted.allocation_size:
                    break
                if device not in chosen:
                    chosen.append(device)
            answers.append(api_pb2.ContainerPreferredAllocationResponse(deviceIDs=chosen))
        return api_pb2.PreferredAllocationResponse(container_responses=answers)

    def Allocate(self, request: Any, context: Any) -> Any:
        answers = []
        for wanted in request.container_requests:
            unknown = [d for d in wanted.devices_ids if d not in self.devices]
            if unknown:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown devices {unknown}")
            envs = {ENV_NAME: ",".join(wanted.devices_ids)}
            answers.append(api_pb2.ContainerAllocateResponse(envs=envs))
        return api_pb2.AllocateResponse(container_responses=answers)

    def PreStartContainer(self, request: Any, context: Any) -> Any:
        return api_pb2.PreStartContainerResponse()


def serve(plugin: Plugin, socket: Path) -> grpc.Server:
    socket.unlink(missing_ok=True)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    api_pb2_grpc.add_DevicePluginServicer_to_server(plugin, server)
    server.add_insecure_port(f"unix:{socket}")
    server.start()
    return server


def register(plugin_dir: Path, socket: Path, resource: str) -> None:
    """Registers with kubelet; raises grpc.RpcError when kubelet refuses or does not answer."""
    with grpc.insecure_channel(f"unix:{plugin_dir / KUBELET_SOCKET}") as channel:
        stub = api_pb2_grpc.RegistrationStub(channel)
        stub.Register(
            api_pb2.RegisterRequest(
                version=API_VERSION,
                endpoint=socket.name,
                resource_name=resource,
                options=api_pb2.DevicePluginOptions(get_preferred_allocation_available=True),
            ),
            timeout=REGISTER_TIMEOUT,
            wait_for_ready=True,
        )


def write_device_infos(directory: Path, resource: str, devices: list[str]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for device in devices:
        mac = Path(f"/sys/class/net/{device}/address").read_text().strip()
        path = device_info_path(directory, resource, device)
        partial = path.with_name(f".{path.name}.tmp")
        partial.write_text(json.dumps(device_info(device, mac)))
        partial.replace(path)
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    devices = list(dict.fromkeys(args.devices))
    bad = [d for d in devices if not _IFNAME.fullmatch(d) or d in {".", ".."}]
    if bad:
        print(f"not interface names: {bad}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    written = write_device_infos(args.devinfo_dir, args.resource, devices)
    plugin = Plugin(devices)
    socket = args.plugin_dir / args.socket
    server: grpc.Server | None = None
    try:
        while not stop.is_set():
            if server is None or not socket.exists():
                if server is not None:  # kubelet restarted and removed the socket
                    server.stop(grace=None)
                server = serve(plugin, socket)
                try:
                    register(args.plugin_dir, socket, args.resource)
                except grpc.RpcError as exc:
                    print(f"registration failed: {exc.code().name}: {exc.details()}",
                          file=sys.stderr, flush=True)  # fmt: skip
                    server.stop(grace=None)
                    server = None
                    stop.wait(1.0)
                    continue
                print("registered", flush=True)
            stop.wait(WATCH_INTERVAL)
    finally:
        plugin.stopping.set()
        if server is not None:
            server.stop(grace=1.0).wait(5)
        socket.unlink(missing_ok=True)
        for path in written:
            path.unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plugin-dir", type=Path, required=True, help="<kubelet root-dir>/device-plugins"
    )
    parser.add_argument("--resource", required=True, help="the extended resource name")
    parser.add_argument("--devinfo-dir", type=Path, required=True,
                        help="the NPWG device-plugin directory (<devinfo>/dp)")  # fmt: skip
    parser.add_argument("--socket", default="braid-test-nic.sock", help="the plugin's socket")
    parser.add_argument("devices", nargs="+", help="the interfaces to advertise")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
