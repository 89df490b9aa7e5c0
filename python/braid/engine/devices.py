"""The engine's part in devices (``braid.nad.devices``): kubelet asked, devices assigned, the
device-information files written before the delegates run, read back after them, and removed
when the container's attachments are torn down.

kubelet is asked through the reader the engine's caller gives (``EngineContext.kubelet``,
from its session): only a plan that has a NAD with a resourceName calls it, so no other call
pays for kubelet's client (grpcio, protobuf).

A resourceName's devices are those of its device plugin (kubelet's ``devices``) and those of
the pod's DRA claims (with ``resourceClaims``): the devices of its allocated ResourceClaims
whose ResourceSlice attribute ``k8s.cni.cncf.io/resourceName`` names it (the store's
``ClaimSource``), or, when no claim's device carries that attribute, the devices kubelet
reports for the pod's claim of that name (``dynamic_resources``). One ID from two sources is
one device.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from braid._native import delegate as native_delegate
from braid.engine.context import EngineContext, log
from braid.engine.devdirs import io_error, make_levels, open_levels, write_file
from braid.engine.record import AttachmentRecord
from braid.engine.request import CniRequest
from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.nad.devices import (
    DEVICE_INFO_FILE,
    ClaimedDevice,
    ClaimSource,
    DeviceAssignments,
    DeviceRefused,
    KubeletDevices,
    assign_devices,
    check_requests,
    cni_info_dir,
    cni_info_path,
    needs_devices,
    read_device_info,
)
from braid.nad.plan import AttachmentPlan, PodRef


def plan_devices(
    ctx: EngineContext, pod: PodRef, container_id: str, plan: AttachmentPlan
) -> DeviceAssignments:
    """``plan`` with a device for each attachment of a NAD with a resourceName (unchanged when
    there is none): kubelet is asked once, over ``podResourcesSocket``."""
    if not needs_devices(plan):
        return DeviceAssignments(plan=plan)
    config = ctx.config.engine.devices
    check_requests(plan, allow=config.allow_device_id_requests)
    if not pod.name:
        raise DeviceRefused(
            "the pod selects a NAD with a resourceName but the runtime names no pod "
            "(K8S_POD_NAME), so kubelet cannot say which devices it got"
        )
    found = _kubelet_devices(ctx, pod)
    claimed: list[ClaimedDevice] = []
    by_claim: dict[str, list[str]] = {}
    if config.resource_claims:
        if isinstance(ctx.store, ClaimSource):
            claimed = ctx.store.claimed_devices(pod.namespace, pod.name, pod.uid)
        by_claim = found.claims
    held = {(c.resource, c.device): c for c in claimed}

    def elsewhere(resource: str, device: str) -> list[str]:
        claim = held.get((resource, device))
        return found.other_pods(resource, device) + list(claim.others if claim else ())

    planned = assign_devices(
        plan,
        combined(found.devices, by_claim, claimed),
        info_path=lambda a: cni_info_path(config.device_info_dir, container_id, a.ifname),
        dp_dir=config.device_info_dir,
        socket=config.pod_resources_socket,
        elsewhere=elsewhere,
    )
    network = {}
    for assigned in planned.assignments:
        claim = held.get((assigned.resource, assigned.device))
        if claim is not None and claim.network:
            network[assigned.position] = claim.network
    return msgspec.structs.replace(planned, network=network)


def _kubelet_devices(ctx: EngineContext, pod: PodRef) -> KubeletDevices:
    """What kubelet's PodResources API reports for the pod (``podResourcesSocket``)."""
    if ctx.kubelet is None:
        raise CniError(
            INVALID_CONFIG,
            "the pod selects a NAD with a resourceName, and this caller of braid's engine "
            "gave it no way to ask kubelet for the pod's devices",
        )
    config = ctx.config.engine.devices
    socket = config.pod_resources_socket
    try:
        local = ctx.local(socket)
    except OSError as exc:  # the node's links to it loop
        raise CniError(
            TRY_AGAIN_LATER, f"kubelet's PodResources API at {socket} cannot be reached", str(exc)
        ) from None
    return ctx.kubelet(
        socket, pod.namespace, pod.name, timeout=config.pod_resources_timeout, local=local
    )


def combined(
    plugins: dict[str, list[str]], by_claim: dict[str, list[str]], claimed: list[ClaimedDevice]
) -> dict[str, list[str]]:
    """Per resourceName, the device plugin's devices and the pod's DRA devices: those whose
    slice attribute names the resource, else those of the pod's claim of that name."""
    devices = {r: list(ids) for r, ids in plugins.items()}
    attributed: dict[str, list[str]] = {}
    for claim in claimed:
        attributed.setdefault(claim.resource, []).append(claim.device)
    for resource in by_claim.keys() | attributed.keys():
        ids = attributed.get(resource) or by_claim.get(resource, [])
        devices.setdefault(resource, []).extend(ids)
    return devices


def write_device_info(ctx: EngineContext, request: CniRequest, devices: DeviceAssignments) -> None:
    """Copies each assigned device's device-plugin file to the path its delegate gets (no
    file: none is written; the delegate may still write one). A device-plugin file that is
    not a regular file, too large or not a JSON object, or a directory level that is a link
    or not root's (``braid.engine.devdirs``), fails the ADD before anything ran."""
    if not devices.assignments:
        return
    directory = cni_info_dir(ctx.config.engine.devices.device_info_dir, request.container_id)
    by_position = {a.position: a for a in devices.plan.attachments}
    try:
        fd = make_levels(_local_base(ctx), ["cni", request.container_id])
    except OSError as exc:
        raise io_error(f"written in {directory}", exc) from None
    try:
        for assigned in devices.assignments:
            what = f"the device plugin's device-information file for device {assigned.device}"
            info = read_device_info(ctx.local(assigned.dp_file), what=what)
            target = by_position[assigned.position].capability_args[DEVICE_INFO_FILE]
            data = None if info is None else msgspec.json.encode(info)
            write_file(fd, target.rpartition("/")[2], data)
    except OSError as exc:
        raise io_error(f"written in {directory}", exc) from None
    finally:
        os.close(fd)


def _local_base(ctx: EngineContext) -> str:
    """``deviceInfoDir`` where this process reaches it: the node's directories above it
    resolved, its own last component not (``open_levels`` refuses it if it is a link)."""
    node = ctx.config.engine.devices.device_info_dir.rstrip("/")
    parent, sep, name = node.rpartition("/")
    if not sep:
        return node
    return f"{ctx.local(parent or '/').rstrip('/')}/{name}"


def device_infos(ctx: EngineContext, record: AttachmentRecord) -> dict[int, dict[str, Any]]:
    """Per attachment position, the device-information its delegate left in the file braid
    gave it (the device plugin's, or the delegate's own), read by the directory's descriptor
    (no level followed when it is a link). A file that cannot be read is logged and left out
    of the status: the attachment itself succeeded."""
    own = cni_info_dir(ctx.config.engine.devices.device_info_dir, record.container_id) + "/"
    files = {
        entry.position: (entry.label, path)
        for entry in record.attachments
        if isinstance(path := entry.capability_args.get(DEVICE_INFO_FILE), str)
        and path.startswith(own)
        and "/" not in path[len(own) :]
    }
    if not files:
        return {}
    try:
        fd = open_levels(_local_base(ctx), ["cni", record.container_id], create=False)
    except OSError as exc:
        log.warning("container %s: device-information not read: %s", record.container_id, exc)
        return {}
    if fd is None:
        return {}
    found: dict[int, dict[str, Any]] = {}
    try:
        for position, (label, path) in files.items():
            name = path[len(own) :]
            try:
                info = read_device_info(name, what="device-information file", dir_fd=fd, shown=path)
            except CniError as exc:
                log.warning("container %s: %s: %s", record.container_id, label, exc)
                continue
            if info is not None:
                found[position] = info
    finally:
        os.close(fd)
    return found


def remove_device_info(ctx: EngineContext, record: AttachmentRecord) -> None:
    """Removes the device-information files braid wrote for the container: its directory under
    ``deviceInfoDir`` and those ``record``'s entries name (``braid_delegate::devinfo``, the
    rule the shim's DEL replay follows; none: nothing to do), by descriptor, no level from
    ``deviceInfoDir`` down followed when it is a link. Failures are logged: they cannot undo a
    teardown that succeeded."""
    found = native_delegate.device_info_dirs(
        data=msgspec.json.encode(record),
        container_id=record.container_id,
        device_info_dir=ctx.config.engine.devices.device_info_dir,
    )
    for directory in found:
        above = directory.rsplit("/", 3)[0] or "/"  # the directory above deviceInfoDir
        try:
            native_delegate.remove_device_info_dir(directory=directory, above=ctx.local(above))
        except OSError as exc:
            log.warning(
                "container %s: device-information files in %s not removed: %s",
                record.container_id,
                directory,
                exc,
            )
