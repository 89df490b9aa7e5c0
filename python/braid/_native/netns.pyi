# Hand-written stub of braid._native.netns, answered by braid_netns: namespace ids, and
# routes and links inside a network namespace.
# Checked against the built module by mypy.stubtest (make lint).

__all__ = [
    "link_info",
    "list_links",
    "list_routes",
    "namespace_id",
    "set_default_route",
]

def namespace_id(*, path: str) -> tuple[int, int]: ...
def list_routes(*, netns: str) -> bytes: ...
def set_default_route(
    *, netns: str, family: int, gateway: str, ifname: str | None = None
) -> None: ...
def link_info(*, netns: str, ifname: str) -> tuple[int, str, int] | None: ...
def list_links(*, netns: str) -> list[str]: ...
