"""The per-node daemon (``braidctl daemon``): the compiled shim's other end.

``protocol`` frames, ``scheduler`` bounds and orders requests, ``service`` answers them with
the engine, ``server`` owns the unix socket and shutdown, ``probes`` the HTTP endpoint,
``metrics`` and ``logs`` what operators see; ``braid.commands.daemon`` is the subcommand.
"""
