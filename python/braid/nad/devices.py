"""Devices of NADs annotated ``k8s.v1.cni.cncf.io/resourceName``: which device each attachment
gets, and the NPWG device-information files.

A pod that selects such a NAD requests the extended resource; a device plugin allocates the
devices and kubelet reports them (``braid.k8s.podresources``). Each attachment of the resource
gets one of the pod's devices, in plan order, the device IDs sorted (so the same pod always
gets the same devices on the same interfaces), never one twice. The ID reaches the delegate as
the ``deviceID`` capability argument, and the path of the attachment's device-information file
as ``CNIDeviceInfoFile``: a copy of the device plugin's file
(``<deviceInfoDir>/dp/<resource>-<device>-device.json``, ``/`` written as ``-``) that the
delegate may rewrite, and whose content goes into the attachment's network-status
``device-info``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from braid.errors import DECODE_FAILURE, INVALID_CONFIG, IO_FAILURE, TRY_AGAIN_LATER, CniError
from braid.nad.plan import Attachment, AttachmentPlan

RESOURCE_NAME_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
DEVICE_ID = "deviceID"
DEVICE_INFO_FILE = "CNIDeviceInfoFile"
# A device-information file is a few hundred bytes; the NPWG format has no bound of its own.
MAX_DEVICE_INFO_BYTES = 64 * 1024
# Extended resource names are qualified names (at most 253 + 1 + 63 characters).
MAX_RESOURCE_NAME = 317
MAX_DEVICE_ID = 256


class DeviceRefused(CniError):
    """A pod refused for its devices (code 7): what the Kubernetes store reports as an
    event on the pod."""

    reason = "NoDeviceFound"

    def __init__(self, msg: str, details: str = "") -> None:
        super().__init__(INVALID_CONFIG, msg, details)


def _printable(text: str) -> bool:
    return text.isprintable() and not any(c.isspace() for c in text)


def resource_of(attachment: Attachment) -> str | None:
    """The NAD's ``resourceName``, or None; one that is no resource name fails (code 7)."""
    value = attachment.nad_annotations.get(RESOURCE_NAME_ANNOTATION)
    if value is None:
        return None
    name = value.strip()
    if not name or len(name) > MAX_RESOURCE_NAME or not _printable(name) or ".." in name:
        raise CniError(
            INVALID_CONFIG,
            f"{attachment.label}: annotation {RESOURCE_NAME_ANNOTATION} {value[:80]!r} is not "
            "an extended resource name (such as vendor.example/sriov_net)",
        )
    return name


def requested_device(attachment: Attachment) -> str | None:
    """The ``deviceID`` the attachment's selection (or the runtime) asks for, if any."""
    for key, value in attachment.capability_args.items():
        if key.lower() == DEVICE_ID.lower():
            return value if isinstance(value, str) else str(value)
    return None


def dp_info_path(directory: str, resource: str, device: str) -> str:
    """The device plugin's device-information file of ``device`` (NPWG naming)."""
    name = f"{resource.replace('/', '-')}-{device.replace('/', '-')}-device.json"
    return f"{directory.rstrip('/')}/dp/{name}"


def cni_info_dir(directory: str, container_id: str) -> str:
    """Where braid keeps the device-information files of one container's attachments."""
    return f"{directory.rstrip('/')}/cni/{container_id}"


def cni_info_path(directory: str, container_id: str, ifname: str) -> str:
    """The device-information file braid hands the delegate of interface ``ifname``."""
    return f"{cni_info_dir(directory, container_id)}/{ifname}-device.json"


def _check_device(device: str, resource: str, socket: str) -> None:
    if not device or len(device) > MAX_DEVICE_ID or not _printable(device):
        raise CniError(
            TRY_AGAIN_LATER,
            f"kubelet's PodResources API at {socket} reports a device of resource {resource} "
            f"whose ID {device[:80]!r} is not one braid can use; the ADD is to be retried",
        )


def _check_request(attachment: Attachment, device: str) -> None:
    """A selection's own ``deviceID`` names a file (``dp_info_path``): it is refused (code 7)
    unless printable, without spaces or NUL, and at most ``MAX_DEVICE_ID`` characters."""
    if not device or len(device) > MAX_DEVICE_ID or not _printable(device):
        raise DeviceRefused(
            f"{attachment.label}: deviceID {device[:80]!r} is not a device ID (printable, no "
            f"spaces, at most {MAX_DEVICE_ID} characters, such as 0000:03:00.1)"
        )


class Assignment(msgspec.Struct, frozen=True):
    """The device of one attachment: its resource, its ID, the device plugin's file."""

    position: int
    resource: str
    device: str
    dp_file: str = ""


class DeviceAssignments(msgspec.Struct, frozen=True):
    """The plan with each device attachment's capability arguments set, what was assigned
    (``assignments``, in plan order), and per attachment position the network data a DRA
    driver published for its device (``ClaimedDevice.network``)."""

    plan: AttachmentPlan
    assignments: tuple[Assignment, ...] = ()
    network: dict[int, dict[str, Any]] = msgspec.field(default_factory=dict)


class ClaimedDevice(msgspec.Struct, frozen=True):
    """A device a pod's allocated ResourceClaim gave it (Dynamic Resource Allocation), for
    the NADs whose resourceName is ``resource``: ``device``, the ID the delegate gets;
    ``claim``, namespace/name; ``network``, what the driver published in the claim's
    status (network-status keys: ``ips``, ``mac``); ``others``, the other pods the claim or
    another claim of the same device is reserved for; ``key``, the device's driver, pool
    and name."""

    resource: str
    device: str
    claim: str
    network: dict[str, Any] = msgspec.field(default_factory=dict)
    others: tuple[str, ...] = ()
    key: tuple[str, str, str] = ("", "", "")


@runtime_checkable
class ClaimSource(Protocol):
    """A store that can say which devices a pod's ResourceClaims allocated."""

    def claimed_devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        """The pod's claimed devices that carry a resourceName (none: an empty list)."""
        ...


class KubeletDevices(Protocol):
    """What kubelet's PodResources API reports for one pod: per resource name the device IDs
    of its containers (``devices``: device plugins'; ``claims``: DRA claims', by claim name),
    and per device the other pods of the node it is reported for."""

    @property
    def devices(self) -> dict[str, list[str]]: ...

    @property
    def claims(self) -> dict[str, list[str]]: ...

    def other_pods(self, resource: str, device: str) -> list[str]: ...


class KubeletReader(Protocol):
    """Asks kubelet's PodResources API at ``socket`` (the node's path, named in errors;
    ``local``: where this process opens it) for pod ``namespace/name``; raises ``CniError``
    when kubelet cannot answer. The engine's caller gives one (``Session.kubelet``)."""

    def __call__(
        self, socket: str, namespace: str, name: str, *, timeout: float, local: str
    ) -> KubeletDevices: ...


def check_requests(plan: AttachmentPlan, *, allow: bool) -> None:
    """A selection's own ``deviceID`` for a NAD with a resourceName is refused (code 7)
    unless the operator allows it (``allowDeviceIDRequests``)."""
    if allow:
        return
    for attachment in plan.attachments:
        resource = resource_of(attachment)
        requested = requested_device(attachment)
        if resource is not None and requested is not None:
            raise DeviceRefused(
                f"{attachment.label}: asks for device {requested[:80]!r} but the NAD's device "
                f"comes from resource {resource}, allocated by kubelet; remove `deviceID` from "
                "the selection (braid configuration key `allowDeviceIDRequests` lets it through)"
            )


def needs_devices(plan: AttachmentPlan) -> bool:
    """Whether any attachment takes a device from kubelet."""
    return any(resource_of(a) is not None for a in plan.attachments)


def assign_devices(
    plan: AttachmentPlan,
    devices: Mapping[str, Sequence[str]],
    *,
    info_path: Callable[[Attachment], str],
    dp_dir: str,
    socket: str,
    elsewhere: Callable[[str, str], list[str]] = lambda resource, device: [],
) -> DeviceAssignments:
    """Gives each attachment of a resource the next unused device of the pod (``devices``:
    per resource, the IDs kubelet reports for the pod); an attachment whose selection names
    its own ``deviceID`` (allowed by ``check_requests``) keeps it. ``info_path``: the
    device-information file of an attachment; ``elsewhere``: the other pods kubelet reports a
    device for (such a device is refused, code 11)."""
    free = {r: sorted(set(ids)) for r, ids in devices.items()}
    attachments: list[Attachment] = []
    assignments: list[Assignment] = []
    for attachment in plan.attachments:
        resource = resource_of(attachment)
        if resource is None:
            attachments.append(attachment)
            continue
        device = requested_device(attachment)
        if device is not None:
            _check_request(attachment, device)
        else:
            device = _next_device(attachment, resource, free, devices, socket)
            _check_device(device, resource, socket)
            others = elsewhere(resource, device)
            if others:
                raise CniError(
                    TRY_AGAIN_LATER,
                    f"{attachment.label}: device {device} of resource {resource} is this "
                    f"pod's and also {', '.join(sorted(set(others))[:3])}'s (kubelet reports "
                    "it, or a ResourceClaim is reserved for them); braid attaches no device "
                    "two pods hold (the ADD is to be retried)",
                )
        capability_args = dict(attachment.capability_args)
        for key in [k for k in capability_args if k.lower() == DEVICE_ID.lower()]:
            del capability_args[key]
        capability_args[DEVICE_ID] = device
        capability_args[DEVICE_INFO_FILE] = info_path(attachment)
        attachments.append(msgspec.structs.replace(attachment, capability_args=capability_args))
        dp_file = dp_info_path(dp_dir, resource, device)
        assignments.append(Assignment(attachment.position, resource, device, dp_file))
    return DeviceAssignments(
        plan=msgspec.structs.replace(plan, attachments=tuple(attachments)),
        assignments=tuple(assignments),
    )


def _next_device(
    attachment: Attachment,
    resource: str,
    free: dict[str, list[str]],
    devices: Mapping[str, Sequence[str]],
    socket: str,
) -> str:
    left = free.get(resource)
    if left:
        return left.pop(0)
    given = len(set(devices.get(resource, ())))
    if not given:
        raise DeviceRefused(
            f"{attachment.label}: the NAD needs a device of resource {resource} and kubelet "
            f"({socket}) reports none for the pod; request it in the pod's containers "
            f"(resources.limits: {{{resource}: 1}}, one per selection of the NAD), or claim "
            f"it (a ResourceClaim whose device's attribute k8s.cni.cncf.io/resourceName is "
            f"{resource})"
        )
    raise DeviceRefused(
        f"{attachment.label}: the pod selects more networks of resource {resource} than the "
        f"{given} device(s) kubelet gave it; request one per selection "
        f"(resources.limits: {{{resource}: N}})"
    )


def read_device_info(
    path: str, *, what: str, dir_fd: int | None = None, shown: str = ""
) -> dict[str, Any] | None:
    """A device-information file's JSON object, or None when there is no file (``path`` in
    the directory ``dir_fd`` is open on, if given; named ``shown`` in errors, if given). A
    file that is not a regular file, larger than ``MAX_DEVICE_INFO_BYTES`` or not a JSON
    object fails (code 5 or 6) naming ``what``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    named = shown or path
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = "is a link" if exc.errno == errno.ELOOP else exc.strerror
        raise CniError(IO_FAILURE, f"{what} {named} cannot be read: {why}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CniError(IO_FAILURE, f"{what} {named} is not a regular file")
        data = os.read(fd, MAX_DEVICE_INFO_BYTES + 1)
    except OSError as exc:
        raise CniError(IO_FAILURE, f"{what} {named} cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_DEVICE_INFO_BYTES:
        raise CniError(
            DECODE_FAILURE,
            f"{what} {named} is larger than the {MAX_DEVICE_INFO_BYTES} bytes braid reads",
        )
    try:
        return msgspec.json.decode(data, type=dict[str, Any])
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise CniError(DECODE_FAILURE, f"{what} {named} is not a JSON object", str(exc)) from None
