# sluice — build, demo, test, bench. Every target installs what it needs.
CARGO ?= cargo
BIN   := target/release/sluice
STAGE := target/release/libsluice_stage.so

.PHONY: all build demo test check deps fmt-check clippy rust-tests conformance bench experiments experiments-themis docs dist deb rpm clean

all: build

build:
	$(CARGO) build --release --workspace

## The main job: four jobs share one pool under the control plane (a local controller,
## PSFA), live, beside the same jobs without control; nothing to start by hand. A scenario
## bundled into the binary (crates/sluice-workload/src/demo.toml); results in experiments/demo.
demo: build
	$(BIN) demo

## Everything CI runs: format, lints, unit and integration tests, conformance suites.
## Clippy runs beside the integration tests (tests/beside-integration.sh), not first.
test: deps fmt-check build rust-tests conformance

## The quick loop while editing (a minute or two, warm): format, lints, and the unit
## tests of every crate (no integration tests, no daemons, no conformance suites).
check: fmt-check clippy
	$(CARGO) test --workspace --lib --bins

deps:
	bash tests/deps.sh

fmt-check:
	$(CARGO) fmt --all -- --check

# Twice: --all-targets leaves out the integration tests (test = false), and given with
# it, --test integration selects nothing more; so they are linted on their own.
clippy:
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(CARGO) clippy --workspace --test integration --release -- -D warnings

# Unit, property, doc and integration tests, built with the test profile (Cargo.toml);
# the integration tests preload the real stage (the release build above) into real
# programs. They are one binary, run module by module by tests/integration.sh, not by
# `cargo test` itself. They mostly wait (about 100 s of CPU in 606 s), so once the
# modules that measure rates have run alone, the rest of the CPU work runs beside them
# at nice 19 (tests/beside-integration.sh: the upgrade test's build of the previous
# release, clippy, the unit tests' build); the unit tests run after them. Every cargo
# command here selects the whole workspace: a narrower selection unifies the
# dependencies' features differently and builds them all again.
rust-tests: build
	$(CARGO) test --workspace --test integration --no-run
	BESIDE='bash tests/beside-integration.sh' bash tests/integration.sh
	$(CARGO) test --workspace

conformance: build
	bash tests/conformance/run-all.sh

## Figures, not tests: the stage's admission path; real stat, open and printf loops
## natively, under a bare forwarding preload and under the stage, as ratios to this
## machine's clock_gettime; 200 MiB through stdio under a bytes rule; the algorithms; one
## period detection.
bench: build
	@$(BIN) bench stage --threads 2
	@bash tests/bench/loops.sh
	@bash tests/bench/stdio.sh
	@$(BIN) bench alloc
	@$(BIN) bench cycle --locals 1000
	@$(BIN) bench cycle --locals 1000 --churn
	@$(BIN) bench period

## The published experiments, reproduced (docs/experiments.md): PADLL's Fig. 6 (limits
## stepped with `sluice rule change`, about 2.5 minutes: experiments/fig6/), then every
## scenario under experiments/scenarios/, its figures written beside it under
## experiments/NAME/. IO-SETS (38 minutes, all of it time its jobs spend computing or
## held to a 64 MiB/s device) runs beside the metadata ones (PADLL §5.3 and the real
## applications, 25 minutes on tmpfs), its output in experiments/iosets/run.log; then the
## other bandwidth ones (sdqos-*, adaptbf-*: about 7 minutes), alone, AdapTBF's last.
## The bandwidth ones make a throttled loop-device file system and need root.
## Timed whole: 47.5 minutes on 2 cores (docs/experiments.md). SERIAL=1 runs every
## scenario one after another (about 72 minutes).
EXPERIMENT_BW := $(filter experiments/scenarios/sdqos-%,$(wildcard experiments/scenarios/*.toml)) \
	$(wildcard experiments/scenarios/adaptbf-*.toml)
EXPERIMENT_MD := $(filter-out $(EXPERIMENT_BW) experiments/scenarios/iosets.toml,$(wildcard experiments/scenarios/*.toml))
experiments: build
	@bash experiments/fig6/run.sh
	@if [ -n "$(SERIAL)" ]; then \
		$(BIN) experiment run experiments/scenarios/iosets.toml || exit 1; \
	else \
		mkdir -p experiments/iosets; \
		$(BIN) experiment run experiments/scenarios/iosets.toml >experiments/iosets/run.log 2>&1 & io=$$!; \
	fi; \
	for s in $(EXPERIMENT_MD); do \
		$(BIN) experiment run $$s || { [ -z "$$io" ] || kill $$io; exit 1; }; done; \
	if [ -n "$$io" ]; then \
		wait $$io; rc=$$?; cat experiments/iosets/run.log; [ $$rc -eq 0 ] || exit 1; \
	fi
	@for s in $(EXPERIMENT_BW); do \
		$(BIN) experiment run $$s || exit 1; done

## ThemisIO's comparison (docs/experiments.md; needs root): ten runs of
## experiments/themis/scenario.toml (about 1.5 minutes each), experiments/themis/run-N/,
## then runs.md and comparison.svg over them.
experiments-themis: build
	@for k in 1 2 3 4 5 6 7 8 9 10; do \
		$(BIN) experiment run experiments/themis/scenario.toml --out experiments/themis/run-$$k || exit 1; done
	@python3 experiments/themis/summarize.py experiments/themis/run-* --out experiments/themis

## A release tarball for the nodes sites have (glibc 2.17 and later): target/dist/.
dist:
	bash packaging/dist.sh

## Packages of that release (nfpm): the binary, the stage and the SPANK plugin in
## /usr/lib/sluice, systemd units, /etc/sluice, man pages, completions: target/dist/.
deb: dist
	bash packaging/package.sh deb

rpm: dist
	bash packaging/package.sh rpm

## Regenerate docs/operations.md from the hook table.
docs:
	SLUICE_BLESS=1 $(CARGO) test --release -p sluice-stage operations_doc

clean:
	$(CARGO) clean
