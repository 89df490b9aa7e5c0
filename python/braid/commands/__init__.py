"""braid's command line: ``braidctl``'s subcommands and ``braid-thin``.

Nothing here is part of the runtime library (``braid.cni``) or the engine; each module is one
command, imported only when that command runs. The package imports nothing itself, so
``braid-thin`` pays for no other command.
"""
