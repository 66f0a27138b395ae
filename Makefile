# p4rcp: `make deps`, then `make run` (the main experiment) or `make test`.
# The P4 toolchain (p4c-bm2-ss, p4test, simple_switch, simple_switch_CLI) is taken
# from PATH, then from $(P4_PREFIX)/bin; p4rcp never builds it (README, "The toolchain").

SHELL := /bin/bash
P4_PREFIX ?= /opt/p4
export P4_PREFIX
P4_TOOL_PATH := $(PATH):$(P4_PREFIX)/bin
find_tool = $(shell PATH='$(P4_TOOL_PATH)' command -v $(1))
P4C_BM2_SS := $(call find_tool,p4c-bm2-ss)
P4TEST := $(call find_tool,p4test)

PY := .venv/bin/python
BUILD := build
P4_MAIN := p4src/targets/v1model/p4rcp.p4
P4_PROGRAM_FILES := $(shell find p4src/shared p4src/targets/v1model -name '*.p4')
P4C_FLAGS := --std p4-16 --arch v1model
EXP ?= default
# Architecture includes of the hardware ports; never copied into the project.
# tna.p4: Intel's SDE, else a p4c built with its Tofino back end in P4_PREFIX, else a folder of its own.
TNA_INCLUDE ?= $(if $(SDE_INSTALL),$(SDE_INSTALL)/share/p4c/p4include,$(if $(wildcard $(P4_PREFIX)/share/p4c/p4include/tna.p4),$(P4_PREFIX)/share/p4c/p4include,/opt/p4-tofino-include))
SUME_INCLUDE ?= $(if $(SUME_SDNET),$(SUME_SDNET)/data/p4include,/opt/p4-sume-include)
# p4c's Tofino back end (its driver bf-p4c: Intel's SDE, or p4c built with its Tofino back end), on PATH, in
# $(P4_PREFIX)/bin or $(SDE_INSTALL)/bin, or given as BF_P4C=...
ifndef BF_P4C
BF_P4C := $(shell PATH='$(P4_TOOL_PATH)$(if $(SDE_INSTALL),:$(SDE_INSTALL)/bin)' command -v bf-p4c)
endif
TNA_MAIN := p4src/targets/tna/p4rcp_tna.p4
# RCP's profiles on Tofino and SUME (p4src/shared/profiles.p4), each compiled with -DRCP_PROFILE_<NAME>.
RCP_PROFILES ?= core weights policing feedforward full
# --target:--arch pairs the back end compiles for: Tofino 1 and Tofino 2.
TNA_BACKEND_TARGETS ?= tofino:tna tofino2:t2na

.PHONY: deps build build-plain test ptf run sim evaluate bench bench-dataplane bench-control bench-hosts \
        hosts docs record clean require-p4c require-venv check-tna check-tna-backend check-sume toolchain-archive \
        soak test-e2e-repeat

# The P4 toolchain: `make deps` installs an archive of it (P4_TOOLCHAIN_ARCHIVE=FILE, else the newest
# one for this system in P4_TOOLCHAIN_DIR) or the p4lang packages; `make toolchain-archive` packs the
# toolchain installed in P4_PREFIX (and tna.p4's folder, where it exists) for a lab's other machines.
P4_TOOLCHAIN_DIR ?= ../shared/toolchain
TOOLCHAIN_ARCHIVE_OUT ?= build/toolchain-archive

deps:
	P4_TOOLCHAIN_ARCHIVE='$(P4_TOOLCHAIN_ARCHIVE)' P4_TOOLCHAIN_DIR='$(P4_TOOLCHAIN_DIR)' tools/deps.sh

toolchain-archive:
	/usr/bin/python3 -m tools.toolchain_archive pack --prefix '$(P4_PREFIX)' \
	  $(if $(wildcard $(TNA_INCLUDE)/tna.p4),--tna-include '$(TNA_INCLUDE)') --out '$(TOOLCHAIN_ARCHIVE_OUT)'

require-p4c:
	@if [ -z "$(P4C_BM2_SS)" ] || [ -z "$(P4TEST)" ]; then \
	  echo "make: p4c-bm2-ss / p4test not found on PATH or in $(P4_PREFIX)/bin: run 'make deps' (it installs the p4lang packages or a lab's toolchain archive, or says how to get them; README, 'The toolchain')" >&2; \
	  exit 1; fi

require-venv:
	@[ -x $(PY) ] || { echo "make: $(PY) missing: run 'make deps' first" >&2; exit 1; }

build: $(BUILD)/p4rcp.json

$(BUILD)/p4rcp.json: $(P4_PROGRAM_FILES) | require-p4c
	@mkdir -p $(BUILD)
	$(P4TEST) $(P4C_FLAGS) $(P4_MAIN)
	$(P4C_BM2_SS) $(P4C_FLAGS) -o $@ --p4runtime-files $(BUILD)/p4rcp.p4info.txtpb $(P4_MAIN)

# The same program without the RCP control: the baseline of bench-dataplane.
build-plain: $(BUILD)/p4rcp_plain.json

$(BUILD)/p4rcp_plain.json: $(P4_PROGRAM_FILES) | require-p4c
	@mkdir -p $(BUILD)
	$(P4C_BM2_SS) $(P4C_FLAGS) -DWITHOUT_RCP -o $@ $(P4_MAIN)

# Front and mid end of p4c against the TNA include: every profile, for Tofino 1 and 2; then the Tofino back
# end where it exists.
check-tna:
	@if [ ! -f "$(TNA_INCLUDE)/tna.p4" ]; then \
	  echo "SKIP check-tna: tna.p4 not found in TNA_INCLUDE=$(TNA_INCLUDE) (tna.p4 comes with Intel's SDE, in \$$SDE_INSTALL/share/p4c/p4include, and with p4c's sources, in backends/tofino/bf-p4c/p4include; README, 'The toolchain')"; \
	elif [ -z "$(P4TEST)" ]; then echo "SKIP check-tna: p4test not found on PATH or in $(P4_PREFIX)/bin"; \
	else set -e; \
	  for profile in $(RCP_PROFILES); do for tofino in 1 2; do \
	    echo "p4test -D__TARGET_TOFINO__=$$tofino -DRCP_PROFILE_$${profile^^} -I $(TNA_INCLUDE) $(TNA_MAIN)"; \
	    $(P4TEST) --std p4-16 -D__TARGET_TOFINO__=$$tofino -DRCP_PROFILE_$${profile^^} -I $(TNA_INCLUDE) $(TNA_MAIN); \
	  done; done; \
	  echo "check-tna: front and mid end OK"; \
	  if [ -n "$(BF_P4C)" ]; then $(MAKE) --no-print-directory check-tna-backend; \
	  else echo "SKIP check-tna back end: bf-p4c (p4c's Tofino back end) not found on PATH, in $(P4_PREFIX)/bin or \$$SDE_INSTALL/bin; give it as BF_P4C=... (README, 'The toolchain')"; fi; \
	fi

# The Tofino back end for each profile and each of TNA_BACKEND_TARGETS into build/tna/PROFILE/TARGET/ (-g:
# the resource logs; where bf-p4c finds its assembler, the binary and context a driver loads; bf-p4c
# deletes the *.log files there before it compiles, so its log goes beside it, TARGET.compile.log), the
# resources each used (tools/tna_resources.py) into build/tna/PROFILE/TARGET.resources.md, and last the
# table of every profile's (build/tna/profiles.json too; docs/porting.md quotes its record). The P4Info
# holds its registers and counters as standard P4Runtime messages, which python -m control_plane and
# P4Runtime servers for Tofino (Stratum) read, rather than as Tofino's own extern messages.
# Fails on any error. __TARGET_TOFINO__ is given as bf-p4c's driver gives it, so that BF_P4C may also name
# the compiler the driver runs, p4c-barefoot (a p4c build without the assembler: no binary, the same checks).
check-tna-backend:
	@if [ -z "$(BF_P4C)" ]; then echo "make: bf-p4c (p4c's Tofino back end) not found on PATH, in $(P4_PREFIX)/bin or \$$SDE_INSTALL/bin; give it as BF_P4C=..." >&2; exit 1; fi
	@set -e; rm -rf $(BUILD)/tna; for profile in $(RCP_PROFILES); do for pair in $(TNA_BACKEND_TARGETS); do \
	  target=$${pair%%:*}; arch=$${pair#*:}; out=$(BUILD)/tna/$$profile/$$target; \
	  tofino=1; [ $$target = tofino2 ] && tofino=2; \
	  mkdir -p $$out; \
	  echo "$(notdir $(BF_P4C)) -g --target $$target --arch $$arch -D__TARGET_TOFINO__=$$tofino -DRCP_PROFILE_$${profile^^} -o $$out $(TNA_MAIN)"; \
	  if ! $(BF_P4C) -g --target $$target --arch $$arch -D__TARGET_TOFINO__=$$tofino -DRCP_PROFILE_$${profile^^} -o $$out \
	       --p4runtime-files $$out/p4rcp_tna.p4info.txtpb --p4runtime-force-std-externs \
	       $(TNA_MAIN) > $$out.compile.log 2>&1; then \
	    cat $$out.compile.log; echo "check-tna: $$profile $$target: the back end failed (log: $$out.compile.log)" >&2; exit 1; fi; \
	  /usr/bin/python3 -m tools.tna_resources --target $$target --log $$out.compile.log $$out > $$out.resources.md; \
	  echo "check-tna: $$profile $$target: back end OK ($$out.resources.md)"; \
	done; done; \
	/usr/bin/python3 -m tools.tna_resources --profiles $$(echo $(RCP_PROFILES) | tr ' ' ,) $(BUILD)/tna

# Front end of p4c against P4-NetFPGA's SimpleSumeSwitch architecture file.
check-sume:
	@if [ ! -f "$(SUME_INCLUDE)/sume_switch.p4" ]; then \
	  echo "SKIP check-sume: sume_switch.p4 not found in SUME_INCLUDE=$(SUME_INCLUDE) (P4-NetFPGA's SDNet p4include)"; \
	elif [ -z "$(P4TEST)" ]; then echo "SKIP check-sume: p4test not found on PATH or in $(P4_PREFIX)/bin"; \
	else set -e; \
	  for profile in $(RCP_PROFILES); do \
	    echo "p4test -DRCP_PROFILE_$${profile^^} -I $(SUME_INCLUDE) p4src/targets/sume/p4rcp_sume.p4"; \
	    $(P4TEST) --std p4-16 -DRCP_PROFILE_$${profile^^} -I $(SUME_INCLUDE) p4src/targets/sume/p4rcp_sume.p4; \
	  done; \
	  echo "check-sume: front and mid end OK"; \
	fi

hosts:
	cargo build --release --quiet --manifest-path hosts/Cargo.toml

# Builds the P4 program when p4c is there; the tests that need it skip loudly otherwise.
test: require-venv hosts
	@if [ -n "$(P4C_BM2_SS)" ]; then $(MAKE) --no-print-directory build build-plain; \
	 else echo "SKIP make build: p4c-bm2-ss not found on PATH or in $(P4_PREFIX)/bin"; fi
	cargo test --manifest-path hosts/Cargo.toml
	$(PY) -m pytest

ptf: require-venv build
	$(PY) -m ptf_tests.run

# Not in `make test`: an hour of fct-short at load 0.9 on bmv2, every process's memory each minute, void
# windows and FCT per ten minutes (topo/soak.py). SOAK_OPTIONS="--duration 600 --window 120" for a shorter one.
soak: require-venv build hosts
	$(PY) -m topo.soak $(SOAK_OPTIONS)

# The Mininet end-to-end tests REPEAT times in a row (20 by default), stopping at the first failure; a run the
# machine voided is run again or its test skipped, by the tests themselves (topo/mininet/tests/runs.py).
REPEAT ?= 20
test-e2e-repeat: require-venv build hosts
	@set -e; for i in $$(seq 1 $(REPEAT)); do echo "end-to-end tests, round $$i of $(REPEAT)"; \
	  $(PY) -m pytest -q -rs topo/mininet/tests; done; echo "end-to-end tests: $(REPEAT) rounds in a row passed"

# HOLD=1: stop at Mininet's command line in the experiment's network; PCAP=1: keep bmv2's captures.
run: require-venv build hosts
	$(PY) -m topo.run $(EXP) $(if $(HOLD),--hold) $(if $(PCAP),--pcap)

# The same experiment in ns-3 (docs/ns3.md); no P4 toolchain needed. The host binary judges the
# experiment and plans its Poisson arrivals. NS3_OPTIONS="rtt_samples=arrival queue_sample=at-read jobs=1".
sim: require-venv hosts
	$(PY) -m topo.run $(EXP) --engine ns3 $(foreach o,$(NS3_OPTIONS),--engine-option $(o))

# docs/reproducing.md, the documents' generated blocks and the README's figure, from docs/records/
# (docs/experiments.md, "Recording a result"); make test fails when they are stale.
docs: require-venv
	$(PY) -m tools.records generate

# Re-record: RECORD="default-ns3 talk-example1-ns3" runs each record's command again, replaces the record with
# the new run, then does what make docs does (docs/experiments.md, "Recording a result").
record: require-venv hosts
	@[ -n "$(RECORD)" ] || { echo "make: give the records to run again: make record RECORD='NAME ...' (docs/records/NAME.toml)" >&2; exit 1; }
	@if [ -n "$(P4C_BM2_SS)" ]; then $(MAKE) --no-print-directory build; fi
	$(PY) -m tools.records rerun $(RECORD)

# The evaluation suite (docs/evaluate.md): one table of RCP and TCP Reno over the RCP talk's conditions, PASS or
# FAIL against the targets. ENGINE=mininet: the subset the emulation reaches; SCHEDULER=tcp://HOST:8786: the
# ns-3 runs on that Dask cluster's workers instead of a local one.
ENGINE ?= ns3
evaluate: require-venv hosts $(if $(filter mininet,$(ENGINE)),build)
	$(PY) -m topo.evaluate --engine $(ENGINE) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

bench: bench-dataplane bench-control bench-hosts

bench-dataplane: require-venv build build-plain
	$(PY) -m ptf_tests.bench_dataplane

# Idle and under load (p4rcp-host sender and receiver through the switch, as in an experiment).
bench-control: require-venv build hosts
	$(PY) -m control_plane.bench

bench-hosts: hosts
	bash hosts/bench/bench-hosts.sh

clean:
	rm -rf $(BUILD) results/.tmp
