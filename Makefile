# tcc: one entry point for set-up, build, tests and the main job.
#
#   make deps   install the toolchain (LLVM/MLIR 22, OpenCL, lit) — idempotent
#   make build  build every crate
#   make test   deps + build + every test (unit, lit, end-to-end, ONNX), one summary line
#   make test-asan  the runtime's tests under AddressSanitizer (target/asan)
#   make test-asan-ci  CI's part of them (.ci/run runs it after make test)
#   make run    deps + build + the main job (the bundled example model)
#   make fuzz   every fuzz target for FUZZ_SECONDS each (default 60; nightly)
#
# The build environment (LLVM prefixes, PATH) comes from this file and
# .cargo/config.toml, never from the user's shell.

SHELL := /bin/bash
LLVM_PREFIX := /usr/lib/llvm-22
export PATH := $(LLVM_PREFIX)/bin:$(HOME)/.cargo/bin:$(PATH)
export MLIR_SYS_220_PREFIX := $(LLVM_PREFIX)
export TABLEGEN_220_PREFIX := $(LLVM_PREFIX)
export LLVM_SYS_221_PREFIX := $(LLVM_PREFIX)
CARGO ?= cargo

.PHONY: deps build test test-asan test-asan-ci run lit clean fuzz

deps:
	@bash scripts/deps.sh

build: deps
	$(CARGO) build --workspace --bins --lib --locked

# Tests get their own caches (test/support: TCC_CACHE_DIR, POCL_CACHE_DIR
# under target/test-caches). XDG_CACHE_HOME points at an empty sentinel
# directory standing in for ~/.cache: a test that falls back to the default
# cache writes there, and the summary counts that as a failure. The build is
# part of the log, so that a build failure is counted too; the summary line
# (docs/testing.md) always ends the output, and make's exit status agrees
# with it.
test: deps
	mkdir -p target; rm -rf target/test-caches target/test-default-cache; mkdir -p target/test-caches target/test-default-cache
	{ $(CARGO) build --workspace --bins --lib --locked && \
	  TCC_TEST_CACHE_ROOT=$(CURDIR)/target/test-caches XDG_CACHE_HOME=$(CURDIR)/target/test-default-cache \
	  $(CARGO) test --workspace --locked --no-fail-fast; } 2>&1 | tee target/test.log; status=$${PIPESTATUS[0]}; \
	  bash scripts/summarize-tests.sh target/test.log $$status $(CURDIR)/target/test-default-cache; summary=$$?; \
	  if [ $$status -ne 0 ]; then exit $$status; fi; exit $$summary

# The runtime crate's tests (its unit tests and tests/, which need no
# compiler: C fixtures, PoCL, the fake CUDA driver) once more under
# AddressSanitizer, in target/asan (docs/testing.md#addresssanitizer).
# Stable rustc takes -Zsanitizer with RUSTC_BOOTSTRAP; the explicit --target
# keeps the flag off build scripts and proc macros.
# allocator_may_return_null: the tests of huge allocations expect
# `try_reserve`'s error, which ASan otherwise turns into an abort.
# use_sigaltstack=0: PoCL's LLVM replaces a thread's alternate signal stack
# that is smaller than it wants with one from malloc (MINSIGSTKSZ + 64 KiB),
# and ASan, which assumes the stack it installed is still there, munmaps
# that heap block when the thread exits and dies ("failed to deallocate
# 0x1bac0 bytes ... error code: 22"); without its own alternate stacks ASan
# leaves the thread's to their owners.
# ASAN_SKIP: capi's tests that link C programs against libtcc_runtime.so/.a
# (cargo test builds no instrumented cdylib, and such a library needs the C
# program built with the sanitizer too); `make test` runs them, bad_input.c
# under gcc's -fsanitize=address,undefined.
ASAN_ENV := RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=address -Clink-arg=-fuse-ld=lld" \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:use_sigaltstack=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan-suppressions.txt:print_suppressions=0
# The dependencies at opt-level 0 (the workspace builds them at 2): their
# instrumented build is most of the cost. CI's share builds from empty in
# 171 s of CPU so (the whole suite at opt-level 2 took 591 s).
ASAN_CARGO := $(CARGO) test -p tcc-runtime --locked --no-fail-fast \
	--target x86_64-unknown-linux-gnu --target-dir $(CURDIR)/target/asan \
	--config 'profile.dev.package."*".opt-level=0'
ASAN_SKIP := --skip c_api_refuses --skip c_api_bad_input --skip c_example_ --skip the_c_api_runs
test-asan:
	$(ASAN_ENV) $(ASAN_CARGO) -- $(ASAN_SKIP)

# CI's share (.ci/run, after `make test`): the unit tests and the tests of
# the runtime's memory handling (buffers, the program cache, loading from
# memory), within CI's time budget (docs/testing.md#addresssanitizer).
test-asan-ci:
	$(ASAN_ENV) $(ASAN_CARGO) --lib --test reliability --test program_cache --test capi -- $(ASAN_SKIP)

lit: build
	$(LLVM_PREFIX)/bin/lit -sv --param=tcc_bin_dir=$(CURDIR)/target/debug lit

run: build
	bash scripts/main-job.sh

# Bounded: FUZZ_SECONDS per target (three targets), then a non-zero exit on
# any crash, hang or leak (docs/reliability.md#fuzzing).
FUZZ_SECONDS ?= 60
fuzz:
	bash scripts/fuzz.sh all $(FUZZ_SECONDS)

clean:
	$(CARGO) clean
