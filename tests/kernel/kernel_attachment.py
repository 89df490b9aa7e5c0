"""One test's attachment: its namespaces, directories, and the runtime and request for it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle

from braid.cni import ProcessExecutor, Runtime, RuntimeRequest, network_list_from_bytes

CNI_BIN_DIR = Path(os.environ.get("CNI_BIN_DIR", "/usr/lib/cni"))
TUNING_STATE_DIR = Path("/run/cni/tuning")


@dataclass
class Attachment:
    """Everything one test's attachment lives in, and the runtime that makes it."""

    host: kernel_netns.Netns
    pod: kernel_netns.Netns
    container_id: str
    cache_dir: Path
    ipam_dir: Path
    fake_plugin_dir: Path
    ifname: str = "eth0"

    def runtime(self, *, timeout: float | None = None) -> Runtime:
        return Runtime(
            [str(CNI_BIN_DIR), str(self.fake_plugin_dir)],
            cache_dir=str(self.cache_dir),
            executor=ProcessExecutor(host_netns=self.host.path),
            timeout=timeout,
        )

    def request(self, capability_args: dict[str, object] | None = None) -> RuntimeRequest:
        return RuntimeRequest(
            container_id=self.container_id,
            netns=self.pod.path,
            ifname=self.ifname,
            capability_args=capability_args or {},
        )

    def leftover_files(self) -> list[Path]:
        """Cache entries, leases and tuning state that still name this container."""
        return [
            *kernel_oracle.files_naming(self.cache_dir, self.container_id),
            *kernel_oracle.files_naming(self.ipam_dir, self.container_id),
            *kernel_oracle.files_naming(TUNING_STATE_DIR, self.container_id),
        ]

    def cache_entries(self) -> list[Path]:
        return kernel_oracle.files_naming(self.cache_dir, self.container_id)


def load(conf: dict[str, Any]) -> Any:
    """The runtime's network list for `conf` (the bytes a configuration file would hold)."""
    return network_list_from_bytes(json.dumps(conf, indent=2).encode())
