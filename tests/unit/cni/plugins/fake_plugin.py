"""A fake CNI plugin for the unit tests, installed by conftest.py under any plugin name.

It appends what it received (argv[0] name, the CNI environment, stdin) to
``$FAKE_CNI_STATE/calls.jsonl`` and then behaves as ``$FAKE_CNI_STATE/<name>.json`` says:
``{"<COMMAND>": {"exit": int, "stdout": str, "stderr": str, "sleep": float, "spawn": bool}}``.
Without instructions, ADD prints a result (the prevResult when chained), VERSION prints every
version, and every other verb succeeds silently.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

STARTED = time.time()  # before stdin is read: a plugin started ahead waits after this
NAME = Path(sys.argv[0]).name
STATE = Path(os.environ["FAKE_CNI_STATE"])
ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
CNI_VARS = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH")


def default_result(conf):
    version = conf.get("cniVersion", "")
    if "prevResult" in conf:
        return conf["prevResult"]
    if version in ("", "0.1.0", "0.2.0"):
        return {"cniVersion": version or "0.1.0", "ip4": {"ip": "10.0.0.2/24"}}
    ip = {"address": "10.0.0.2/24", "interface": 0}
    if version.startswith("0."):
        ip["version"] = "4"
    iface = {"name": os.environ.get("CNI_IFNAME", ""), "sandbox": os.environ.get("CNI_NETNS", "")}
    return {"cniVersion": version, "interfaces": [iface], "ips": [ip]}


def default_stdout(command, conf):
    if command == "ADD":
        return json.dumps(default_result(conf))
    if command == "VERSION":
        return json.dumps({"cniVersion": "1.1.0", "supportedVersions": ALL_VERSIONS}) + "\n"
    return ""


def main():
    raw = sys.stdin.buffer.read()
    read = time.time()
    try:
        conf = json.loads(raw)
    except ValueError:
        conf = None
    command = os.environ.get("CNI_COMMAND", "")
    record = {
        "plugin": NAME,
        "env": {k: os.environ.get(k) for k in CNI_VARS},
        "path_env": os.environ.get("PATH"),
        "stdin": conf,
        "pid": os.getpid(),
        "started": STARTED,
        "read": read,
    }
    with (STATE / "calls.jsonl").open("a") as log:
        log.write(json.dumps(record) + "\n")
    behaviour = {}
    script = STATE / f"{NAME}.json"
    if script.exists():
        behaviour = json.loads(script.read_text()).get(command, {})
    if behaviour.get("spawn"):
        child = subprocess.Popen(["sleep", "300"])
        (STATE / f"{NAME}.child").write_text(str(child.pid))
    time.sleep(behaviour.get("sleep", 0))
    stdout = behaviour.get("stdout")
    if stdout is None:
        stdout = default_stdout(command, conf or {})
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.stderr.write(behaviour.get("stderr", ""))
    return behaviour.get("exit", 0)


if __name__ == "__main__":
    sys.exit(main())
