"""braid.k8s: NADs and pods from the Kubernetes API server, and the published network status.

Importing this package costs nothing: the HTTP client (urllib3) and, for kubeconfigs that use
``exec`` or ``auth-provider`` users, the ``kubernetes`` package are imported by the modules
that need them, so ``braid-thin`` pays for them only when braid's configuration asks for the
Kubernetes store (``kubeconfig``, or the in-cluster service account).

- ``braid.k8s.select.open_call_session``: the engine's session of one ``braid-thin`` call (the
  Kubernetes store when ``kubernetes_wanted``, else the file store).
- ``braid.k8s.podresources.read_pod_devices``: kubelet's PodResources API, the session's
  kubelet reader.
- ``braid.k8s.client.KubeClient``: credentials (re-read when rotated) and one request.
- ``braid.k8s.store.KubeStore``: live GETs with the UID check (the engine's ``Store``).
- ``braid.k8s.caches.ClusterCaches``: the daemon's watch-based caches and their ``Store`` view,
  bounded (``braid.k8s.budget``: ``maxCacheBytes``, NADs over ``maxNadBytes`` as markers).
- ``braid.k8s.listing.Pager``: every LIST, in pages (``limit``, ``continue``).
- ``braid.k8s.status.StatusWriter``: the ``StatusPublisher`` (network-status PATCH, events).
"""
