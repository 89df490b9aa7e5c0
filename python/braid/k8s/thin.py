"""The Kubernetes pieces of one ``braid-thin`` call: live GETs, the status write with its
retries inside the call (``background`` then means: log after the bounded retries), and
events posted inline.
"""

from __future__ import annotations

from braid.config.layers import KubernetesConfig
from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.events import EventRecorder, MissRecordingStore
from braid.k8s.podresources import read_pod_devices
from braid.k8s.retry import RetryPolicy
from braid.k8s.status import StatusWriter
from braid.k8s.store import KubeStore
from braid.nad.devices import KubeletReader
from braid.nad.plan import PodRef

# One CNI call: a few quick retries, never minutes (the runtime retries the whole ADD).
THIN_RETRY = RetryPolicy(attempts=4, base_delay=0.1, max_delay=1.0, max_retry_after=3.0, budget=5.0)


class ThinKubernetes:
    """The engine's session of one call (``braid.engine.session.Session``): ``store``,
    ``publisher`` and ``kubelet`` for the engine's context; ``add_failed`` after a failed ADD
    reports the NADs that were not found; ``close`` at the end of the call."""

    def __init__(self, config: KubernetesConfig, client: KubeClient) -> None:
        self.client = client
        self.kubelet: KubeletReader = read_pod_devices
        self.events = EventRecorder(client, level=config.events)
        self.store = MissRecordingStore(KubeStore(client, retry=THIN_RETRY))
        self.publisher = StatusWriter(
            client,
            policy=config.status_write_policy,
            skip_without_networks=config.skip_status_without_networks,
            retry=THIN_RETRY,
            events=self.events,
        )

    def add_failed(self, pod: PodRef, error: CniError) -> None:
        self.store.report(self.events, pod, error)

    def close(self) -> None:
        self.client.close()
