"""Syntax of the names and addresses the NAD spec validates: DNS-1123 names, kernel interface
names, IP addresses, hardware addresses and plugin types."""

from __future__ import annotations

from braid._native import delegate as native_delegate
from braid.cni.request import interface_name_problem

# Character sets rather than regular expressions: compiling one costs braid-thin's start-up
# more than every check of a call.
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LABEL_CHARS = _ALNUM | {"-"}
_HEX = frozenset("0123456789abcdefABCDEF")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253


def _label(value: str) -> bool:
    """``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, whole."""
    return (
        bool(value)
        and value[0] in _ALNUM
        and value[-1] in _ALNUM
        and _LABEL_CHARS.issuperset(value)
    )


def is_dns1123_label(value: str) -> bool:
    """A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, <= 63."""
    return len(value) <= DNS1123_LABEL_MAX and _label(value)


def is_dns1123_subdomain(value: str) -> bool:
    """DNS-1123 labels joined by dots, <= 253 characters (how Kubernetes names objects)."""
    if not value or len(value) > DNS1123_SUBDOMAIN_MAX:
        return False
    return all(_label(part) for part in value.split("."))


def is_interface_name(value: str) -> bool:
    """What ``braid.cni.request.interface_name_problem`` accepts: what the kernel's
    dev_valid_name accepts (1-15 bytes, not '.' or '..', no '/', ':' or whitespace), without
    '%', which the kernel takes as a template."""
    return interface_name_problem(value) is None


def is_ip(value: str) -> bool:
    """An IPv4 or IPv6 address without a prefix."""
    import ipaddress  # noqa: PLC0415 -- only for a selection that names IPs (braid-thin)

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_ip_or_cidr(value: str) -> bool:
    """An IPv4 or IPv6 address, optionally with a prefix length ('10.1.1.5/24'), as Multus
    accepts; the host bits of a prefixed address are kept."""
    import ipaddress  # noqa: PLC0415 -- only for a selection that names IPs (braid-thin)

    try:
        ipaddress.ip_interface(value)
    except ValueError:
        return False
    return True


def ip_family(value: str) -> int:
    """4 or 6 for an address with or without prefix (the caller validated it)."""
    import ipaddress  # noqa: PLC0415 -- only for a selection that names IPs (braid-thin)

    return ipaddress.ip_interface(value).version


def hardware_address_length(value: str) -> int:
    """The byte length of a colon- or hyphen-separated hex hardware address, 0 when malformed."""
    for sep in (":", "-"):
        parts = value.split(sep)
        if len(parts) > 1 and all(len(p) == 2 and _HEX.issuperset(p) for p in parts):
            return len(parts)
    return 0


def is_mac(value: str) -> bool:
    """A 6-byte Ethernet MAC or a 20-byte IP-over-InfiniBand hardware address (spec 4.1.2.1.4)."""
    return hardware_address_length(value) in {6, 20}


def is_infiniband_guid(value: str) -> bool:
    """An InfiniBand GUID: 8 bytes; 6 and 20 are accepted too, as Multus' MAC parser does."""
    return hardware_address_length(value) in {6, 8, 20}


def is_meta_plugin(plugin_type: str) -> bool:
    """A plugin ``type`` that is braid or another meta-plugin, never a delegate
    (``braid_delegate::lookup``)."""
    return native_delegate.is_meta_plugin(plugin_type=plugin_type)


def is_safe_plugin_type(value: str) -> bool:
    """A plugin ``type`` that names a file inside CNI_PATH: a plain file name (not empty, not
    '.' or '..', no '/' or NUL), by the one rule the shim and the runtime look plugins up with
    (``braid_delegate::lookup::is_plain_name``)."""
    return native_delegate.is_plain_plugin_type(plugin_type=value)
