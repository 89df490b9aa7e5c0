"""``braidctl bench``'s measuring code, shipped so that a node with the wheel installed can
measure braid on its own plugins and networks: paired, interleaved rounds of the same CNI calls
through braid and directly (``paired``), every call a process start as a runtime makes it
(``spawn``), in private network namespaces made and removed here (``namespaces``, ``world``),
with the daemon of thick mode started as a user starts it (``daemon``). The repository's
``benches/`` use the same code.
"""
