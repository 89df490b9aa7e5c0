"""The Rust crates compiled into a wheel of braid-cni, as CycloneDX components and their
dependency graph (packaging/sbom.py's `wheel`): the packages `roots` and their normal
dependencies for one target, from `cargo metadata --locked --offline`, each crates.io crate
with the SHA-256 that Cargo.lock records for its `.crate`."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

Json = dict[str, Any]
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"


def crates(repo: Path, target: str, roots: list[str]) -> tuple[list[Json], list[Json]]:
    """The components and dependency graph of the crates `roots` compile for `target`."""
    meta = cargo_metadata(repo, target)
    packages = {p["id"]: p for p in meta["packages"]}
    members = {packages[m]["name"]: m for m in meta["workspace_members"]}
    edges = reachable(meta["resolve"]["nodes"], [members[name] for name in roots])
    ref = {node: crate_ref(packages[node]) for node in edges}
    checksums = cargo_lock_checksums(repo / "Cargo.lock")
    ordered = sorted(edges, key=lambda n: ref[n])
    components = [component(packages[node], ref[node], checksums) for node in ordered]
    graph = [{"ref": ref[n], "dependsOn": sorted(ref[d] for d in edges[n])} for n in ordered]
    return components, graph


def cargo_metadata(repo: Path, target: str) -> Json:
    argv = ["cargo", "metadata", "--locked", "--offline", "--format-version=1"]
    argv += [f"--filter-platform={target}", f"--manifest-path={repo / 'Cargo.toml'}"]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    meta: Json = json.loads(done.stdout)
    return meta


def reachable(nodes: list[Json], roots: list[str]) -> dict[str, list[str]]:
    """package id -> its normal dependencies, for every package `roots` reach that way (build
    and dev dependencies are not compiled into what ships)."""
    deps = {n["id"]: n["deps"] for n in nodes}
    edges: dict[str, list[str]] = {}
    todo = list(roots)
    while todo:
        node = todo.pop()
        if node in edges:
            continue
        normal = [d["pkg"] for d in deps[node] if any(k["kind"] is None for k in d["dep_kinds"])]
        edges[node] = normal
        todo.extend(normal)
    return edges


def component(package: Json, ref: str, checksums: dict[tuple[str, str], str]) -> Json:
    found: Json = {
        "type": "library",
        "bom-ref": ref,
        "name": package["name"],
        "version": package["version"],
    }
    if package.get("license"):
        found["licenses"] = [{"expression": package["license"]}]
    if package["source"] == CRATES_IO:
        found["purl"] = ref
        checksum = checksums[(package["name"], package["version"])]
        found["hashes"] = [{"alg": "SHA-256", "content": checksum}]
    else:
        found["properties"] = [{"name": "braid:source", "value": "braid's workspace"}]
    return found


def crate_ref(package: Json) -> str:
    if package["source"] == CRATES_IO:
        return f"pkg:cargo/{package['name']}@{package['version']}"
    return f"braid-crate:{package['name']}@{package['version']}"


def cargo_lock_checksums(path: Path) -> dict[tuple[str, str], str]:
    lock = tomllib.loads(path.read_text())
    return {(p["name"], p["version"]): p["checksum"] for p in lock["package"] if "checksum" in p}
