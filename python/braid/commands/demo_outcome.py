"""What ``braidctl demo-cni`` tells of each step: done, failed by braid, or failed by a delegate
plugin braid ran (whose error braid passes on, as the CNI spec has a runtime do), with the reason
when the failure is a known bug of that plugin; then one summary and the exit status."""

from __future__ import annotations

from collections.abc import Callable

from braid.errors import PLUGIN_NOT_FOUND, CniError, PluginError

# (plugin, text of its error, why): failures of the reference plugins that are theirs, not
# braid's, so a newcomer is not left to think braid broke.
KNOWN_PLUGIN_BUGS: tuple[tuple[str, str, str], ...] = (
    (
        "portmap",
        "could not check ipv6 dnat",
        "a known bug of the reference portmap plugin up to 1.1.1 (Debian bookworm's "
        "containernetworking-plugins; containernetworking/plugins issue 819): its CHECK looks "
        "for the IPv4 rules in the IPv6 table too, so it fails wherever ip6tables works. The "
        "port mappings shown above are in place; a newer portmap passes this CHECK, and "
        "`--no-port-mappings` leaves portmap nothing to check.",
    ),
)


def describe(exc: CniError) -> tuple[str, str]:
    """Who failed, in a few words, and the whole story: a delegate plugin (named, with the
    known bug it hit) or braid."""
    if not (isinstance(exc, PluginError) and exc.plugin):
        return "braid failed", f"braid failed: {exc}"
    if exc.code == PLUGIN_NOT_FOUND:
        who = f"the delegate plugin {exc.plugin!r} is not installed"
        return who, f"{who} (see --cni-path): {exc}"
    who = f"the delegate plugin {exc.plugin!r} failed"
    text = f"{who} (braid ran it and passed on its error): {exc}"
    for plugin, signature, why in KNOWN_PLUGIN_BUGS:
        if exc.plugin == plugin and signature in str(exc):
            return f"{who}: a known bug of {plugin} (above)", f"{text}\n   why: {why}"
    return who, text


class Outcome:
    """The failed steps of one demo, in order, and whether braid itself failed one."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.braid_failed = False

    def step(self, title: str, call: Callable[[], object]) -> bool:
        """Print ``title``, run ``call`` (which prints what it shows); a CniError is recorded
        with who failed. True when the step succeeded."""
        print(f"== {title}", flush=True)
        try:
            call()
        except CniError as exc:
            who, text = describe(exc)
            print(f"FAILED: {text}", flush=True)
            self.failures.append(f"{title}: {who}")
            self.braid_failed |= who == "braid failed"
            return False
        print("ok", flush=True)
        return True

    def left_behind(self, what: list[str]) -> None:
        """Files or namespaces still there after the demo: braid's failure to clean up."""
        if what:
            self.failures.append(f"left behind: {', '.join(what)}")
            self.braid_failed = True

    def summary(self) -> int:
        """Print the outcome; the exit status: 0 when every step succeeded, else 1."""
        print("== outcome")
        if not self.failures:
            print("every step succeeded and nothing was left behind")
            return 0
        print(f"{len(self.failures)} step(s) failed:")
        for failure in self.failures:
            print(f"- {failure}")
        if not self.braid_failed:
            print("braid itself failed no step: each failure above is a delegate plugin's")
        else:
            print("braid failed a step: its error codes are in braid's docs/errors.md")
        return 1
