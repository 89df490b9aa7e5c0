# braid: the one entry point. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMPS := .stamps
APT_PACKAGES := containernetworking-plugins iproute2 iptables containerd runc podman busybox-static strace gcc libc6-dev mmdebstrap zsh tcsh openssh-client openssl linux-perf
# One line per step of `make install` and the demos, so a long step is never silent.
step = @printf '==> %s\n' "$(1)"
CNI_BIN_DIR ?= /usr/lib/cni
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help install system venv build shim native demo demo-cni test lint test-rust test-unit test-fuzz test-kernel test-soak test-runtime kube-bins dra-driver helm-bin helm-chart test-cluster test-node multus-bin scale-bins test-bench-smoke bench-scale wheel-stage wheel test-wheel image test-image bench fmt clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

install: system venv build ## set up everything: apt packages, virtualenv, Rust build, extension

system: $(STAMPS)/system ## install the Debian packages the tests and demo need (root)
$(STAMPS)/system:
	$(call step,[1/4] Debian packages: $(APT_PACKAGES))
	@mkdir -p $(STAMPS)
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); \
	else echo '    all installed'; fi
	@touch $@

venv: $(STAMPS)/venv ## create the virtualenv with the development tools
$(STAMPS)/venv: pyproject.toml
	$(call step,[2/4] virtualenv $(VENV) with the development tools (pyproject.toml [dependency-groups] dev))
	@mkdir -p $(STAMPS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --group dev
	@touch $@

build: shim native ## build the shim and the extension (release)

shim: ## build the compiled shim at target/release/: `braid` (the front) and `braid-full`
	$(call step,[3/4] the compiled shim (cargo build --release; minutes the first time): target/release/braid and braid-full)
	packaging/build-shim.sh

native: venv ## build braid._native into the virtualenv
	$(call step,[4/4] braid._native (Rust, release) and braid into $(VENV))
	BRAID_BUILD=$$(packaging/build-id.sh) VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VENV)/bin/maturin develop --release --locked -q

wheel-stage: shim ## stage this machine's shim (braid, braid-full) where `maturin build` takes it
	rm -rf braid._native.data && mkdir -p braid._native.data/scripts
	install -m 0755 target/release/braid target/release/braid-full braid._native.data/scripts/

wheel: ## dist/: the manylinux2014 wheels (x86-64, aarch64) and the sdist (docs/packaging.md)
	rm -f dist/braid_cni-*
	packaging/build-wheels.sh -o dist

test-wheel: venv ## the wheels and sdist: auditwheel, installed and run on every CPython here
	packaging/check-wheel.sh

image: wheel ## the node image as an OCI archive, dist/braid-image.oci.tar (Debian packages, no registry)
	packaging/image/build.sh

test-image: native image ## image tier: the built archive (contents, reproducibility, ctr/podman import)
	$(PY) -m pytest tests/image -q

demo: install ## the main job: a pod gets the example networks (engine + real plugins), then detaches
	$(call step,demo: a pod in its own network namespace gets the example networks then detaches)
	$(VENV)/bin/braidctl demo --cni-path $(CNI_BIN_DIR)
	$(call step,braidctl is in $(VENV)/bin: '. $(VENV)/bin/activate' puts it on PATH (README: Try braid on one machine))

demo-cni: install ## the runtime library alone: braidctl cni on the example network list
	$(call step,demo-cni: the runtime library runs the example network list in a fresh namespace)
	@# Debian's portmap (1.1.1) fails CHECK wherever ip6tables works: it looks for its IPv4
	@# rules in the IPv6 table too. Without this option the demo names that failure as
	@# portmap's and exits 1.
	$(VENV)/bin/braidctl demo-cni --cni-path $(CNI_BIN_DIR) --no-port-mappings

test: install lint test-rust test-unit test-fuzz test-kernel test-soak test-runtime test-cluster test-image test-node test-bench-smoke test-wheel ## every test tier plus lint (what CI runs)

lint: venv ## ruff, mypy strict, import rules, stubtest on _native, rustfmt, clippy -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/mypy --strict
	$(VENV)/bin/lint-imports  # the import rules between layers (docs/architecture.md)
	$(VENV)/bin/python -m mypy.stubtest braid._native --mypy-config-file pyproject.toml
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets -- -D warnings
	packaging/build-shim.sh --clippy  # the braid front's binary, with the flags it is built with

test-rust: ## cargo test of every crate
	cargo test --locked --workspace

test-unit: native ## Python unit tier (no privileges)
	$(PY) -m pytest tests --ignore=tests/kernel --ignore=tests/runtime --ignore=tests/cluster --ignore=tests/image --ignore=tests/node --ignore=tests/soak -q

test-fuzz: native ## fuzz every parser of outside input, bounded and seeded (docs/fuzzing.md)
	fuzz/run.sh

test-kernel: native shim ## kernel tier: root, network namespaces, the real reference plugins
	$(PY) -m pytest tests/kernel -q

SOAK_SEED ?= 925860009
test-soak: native shim ## fault soak: 300 ADD/DEL cycles through shim and daemon, faults injected (root; docs/soak.md)
	SOAK_SEED=$(SOAK_SEED) $(PY) -m pytest tests/soak -q

test-runtime: native shim ## runtime tier: containerd and podman drive braid (root)
	$(PY) -m pytest tests/runtime -q

kube-bins: ## build kube-apiserver, etcd and kubectl for the cluster tier (reused while pinned)
	hack/kube/build.sh

test-cluster: native shim kube-bins helm-bin scale-bins multus-bin ## cluster tier: a real kube-apiserver + etcd on 127.0.0.1
	$(PY) -m pytest tests/cluster -q

helm-chart: venv ## write the Helm chart's config values, schema and deploy/ copies from their sources
	$(PY) hack/helm/gen-chart.py

helm-bin: ## build Helm for the chart's tests in the cluster and node tiers (reused while pinned)
	hack/helm/build.sh

dra-driver: ## build the node tier's test DRA driver (reused while pinned)
	hack/node/dra-driver.sh

test-node: native image kube-bins dra-driver helm-bin ## node tier: braid deployed as shipped on a real kubelet + containerd
	hack/node/tier.sh

multus-bin: ## build Multus thin and thick for the comparisons (reused while pinned)
	hack/multus/build.sh

test-bench-smoke: native shim multus-bin ## run every benchmark once, untimed, so they cannot rot (root)
	$(PY) -m pytest benches -q --benchmark-disable
	cargo test --locked -p braid-cni --benches

scale-bins: ## build the scale tier's delegate, noopcni (reused while unchanged)
	benches/scale/build.sh

bench-scale: native shim kube-bins scale-bins multus-bin ## one daemon as the cluster grows, then N nodes beside Multus thick, then a node reboot (root; docs/scale.md; ~25-45 min)
	$(PY) benches/scale/scale_run.py --steps full --restart --out .cache/scale
	$(PY) benches/scale/scale_fleet.py --nodes 4 --rate 10 --seconds 300 --grow 20000,10000,10000 --out .cache/scale
	$(PY) benches/scale/scale_reboot.py --pods 250 --out .cache/scale

bench: install multus-bin ## benchmarks (see docs/performance.md)
	$(PY) -m pytest benches -q --benchmark-only
	cargo bench --locked -p braid-cni

fmt: ## format Python and Rust
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches
	cargo fmt --all

clean: ## remove build products and the virtualenv
	rm -rf target $(VENV) $(STAMPS) python/braid/_native*.so
