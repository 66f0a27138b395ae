# p4rcp: `make deps`, then `make run` (the main experiment) or `make test`.
# The P4 toolchain (p4c, p4test, simple_switch, simple_switch_CLI) is taken
# from PATH, then from /opt/p4/bin.

SHELL := /bin/bash
P4_TOOL_PATH := $(PATH):/opt/p4/bin
find_tool = $(shell PATH='$(P4_TOOL_PATH)' command -v $(1))
P4C_BM2_SS := $(call find_tool,p4c-bm2-ss)
P4TEST := $(call find_tool,p4test)

PY := .venv/bin/python
BUILD := build
P4_MAIN := p4src/targets/v1model/p4rcp.p4
P4_SOURCES := $(shell find p4src/shared p4src/targets/v1model -name '*.p4')
P4C_FLAGS := --std p4-16 --arch v1model
EXP ?= default

.PHONY: deps build build-plain test ptf run bench bench-dataplane bench-control bench-hosts \
        hosts clean require-p4c require-venv

deps:
	tools/deps.sh

require-p4c:
	@if [ -z "$(P4C_BM2_SS)" ] || [ -z "$(P4TEST)" ]; then \
	  echo "make: p4c-bm2-ss / p4test not found on PATH or in /opt/p4/bin: install p4lang-p4c (see 'make deps')" >&2; \
	  exit 1; fi

require-venv:
	@[ -x $(PY) ] || { echo "make: $(PY) missing: run 'make deps' first" >&2; exit 1; }

build: $(BUILD)/p4rcp.json

$(BUILD)/p4rcp.json: $(P4_SOURCES) | require-p4c
	@mkdir -p $(BUILD)
	$(P4TEST) $(P4C_FLAGS) $(P4_MAIN)
	$(P4C_BM2_SS) $(P4C_FLAGS) -o $@ --p4runtime-files $(BUILD)/p4rcp.p4info.txtpb $(P4_MAIN)

# The same program without the RCP control: the baseline of bench-dataplane.
build-plain: $(BUILD)/p4rcp_plain.json

$(BUILD)/p4rcp_plain.json: $(P4_SOURCES) | require-p4c
	@mkdir -p $(BUILD)
	$(P4C_BM2_SS) $(P4C_FLAGS) -DWITHOUT_RCP -o $@ $(P4_MAIN)

hosts:
	cargo build --release --quiet --manifest-path hosts/Cargo.toml

# Builds the P4 program when p4c is there; the tests that need it skip loudly otherwise.
test: require-venv hosts
	@if [ -n "$(P4C_BM2_SS)" ]; then $(MAKE) --no-print-directory build build-plain; \
	 else echo "SKIP make build: p4c-bm2-ss not found on PATH or in /opt/p4/bin"; fi
	cargo test --manifest-path hosts/Cargo.toml
	$(PY) -m pytest

ptf: require-venv build
	$(PY) -m ptf_tests.run

run: require-venv build hosts
	$(PY) -m topo.run $(EXP)

bench: bench-dataplane bench-control bench-hosts

bench-dataplane: require-venv build build-plain
	$(PY) -m ptf_tests.bench_dataplane

bench-control: require-venv build
	$(PY) -m control_plane.bench

bench-hosts: hosts
	bash hosts/bench/bench-hosts.sh

clean:
	rm -rf $(BUILD) results/.tmp
