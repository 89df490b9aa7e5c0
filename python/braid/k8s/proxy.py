"""Which proxy carries the requests to the API server, chosen as kubectl (client-go) chooses.

A cluster's ``proxy-url`` in the kubeconfig wins. Otherwise the environment: ``HTTPS_PROXY``
for an https server, ``HTTP_PROXY`` for an http one (upper case first, then lower case),
unless ``NO_PROXY`` names the server. As with Go's ``http.ProxyFromEnvironment``, requests to
``localhost`` and to loopback addresses never take a proxy from the environment, and a proxy
given without a scheme is an http one.

http and https proxies work; a request to an https server goes through an HTTP ``CONNECT``
tunnel. kubectl also takes ``socks5://``, which urllib3 serves only with PySocks, a package
braid does not ship: such a proxy is a configuration error naming it.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from urllib.parse import SplitResult, unquote, urlsplit

from braid.errors import INVALID_CONFIG, CniError

PROXY_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}


def shown(url: str) -> str:
    """``url`` for a message: a password in it replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    return parts._replace(netloc=f"{user}:***@{parts.netloc.rpartition('@')[2]}").geturl()


def _fail(url: str, origin: str, why: str) -> CniError:
    return CniError(INVALID_CONFIG, f"proxy {shown(url)} ({origin}): {why}")


def checked_proxy_url(url: str, origin: str) -> str:
    """``url`` when braid can send requests through it, else a code-7 error naming it and
    ``origin`` (where it was configured)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _fail(url, origin, f"not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme.startswith("socks"):
        raise _fail(
            url,
            origin,
            "SOCKS proxies need PySocks, which braid does not ship; use an http:// or"
            " https:// proxy",
        )
    if scheme not in PROXY_SCHEMES or not parts.hostname:
        raise _fail(url, origin, "must be an http:// or https:// URL with a host")
    if port == 0 or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _fail(url, origin, "must be scheme://[user:password@]host[:port] and nothing more")
    return url


def proxy_headers(url: str) -> dict[str, str]:
    """The ``Proxy-Authorization`` header for the user and password in ``url``, if any."""
    parts = urlsplit(url)
    if parts.username is None:
        return {}
    login = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return {"Proxy-Authorization": "Basic " + base64.b64encode(login.encode()).decode("ascii")}


def without_login(url: str) -> str:
    """``url`` without its user and password (they travel in ``proxy_headers``)."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _from_env(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or env.get(name.lower()) or "").strip()


def proxy_for(server: str, proxy_url: str, env: Mapping[str, str]) -> str:
    """The proxy for requests to ``server`` ("" for none): the cluster's ``proxy_url``, else
    the one ``env`` names for the server's scheme, unless ``NO_PROXY`` excludes it."""
    if proxy_url:
        return proxy_url
    target = urlsplit(server)
    name = "HTTPS_PROXY" if target.scheme == "https" else "HTTP_PROXY"
    value = _from_env(env, name)
    if not value or bypasses_proxy(target, _from_env(env, "NO_PROXY")):
        return ""
    if "://" not in value:
        value = "http://" + value
    return checked_proxy_url(value, f"environment variable {name}")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def bypasses_proxy(target: SplitResult, no_proxy: str) -> bool:
    """Whether a request to ``target`` goes direct despite an environment proxy: localhost,
    a loopback address, or an entry of ``no_proxy`` (``*``; an address or CIDR; a domain,
    which covers its subdomains, or ``.domain`` for the subdomains only; each with an optional
    ``:port``)."""
    host = (target.hostname or "").lower().rstrip(".")
    port = target.port or DEFAULT_PORTS.get(target.scheme, 0)
    ip = _ip(host)
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return True
    return any(_matches(entry.strip().lower(), host, port, ip) for entry in no_proxy.split(","))


def _matches(
    entry: str, host: str, port: int, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> bool:
    if not entry or entry == "*":
        return entry == "*"
    if "/" in entry:
        return _in_network(entry, ip)
    name, want_port = _split_port(entry)
    if want_port is not None and want_port != port:
        return False
    named_ip = _ip(name)
    if named_ip is not None:
        return ip == named_ip
    name = name.removeprefix("*").rstrip(".")
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


def _in_network(entry: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    try:
        return ip is not None and ip in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host[:port]`` or ``[v6][:port]``; a bare IPv6 address has no port."""
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return name, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None
