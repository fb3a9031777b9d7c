# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma2 — out-of-tree module build plus the project's entry points.
#
#   make                 build rpcrdma2.ko against KDIR
#   make KDIR=<dir>      ... against your own kernel build tree
#   make kernel          build (or reuse) the cached testbed kernel
#   make check           every test: host, KUnit in a guest, guest integration
#   make clippy          the module under clippy with the kernel's lints
#   make demo            boot the two guests and show rpcrdma2 in use
#   make fuzz            the long coverage-guided fuzz run (FUZZ_SECONDS per
#                        target, default 900; FUZZ_TARGETS to choose)
#   make clean

# Default KDIR: the testbed kernel cached outside the repository.
KDIR ?= $(shell tools/testing/kernel/build.sh --kdir)
LLVM ?= -15
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(shell command -v bindgen 2>/dev/null || echo $(HOME)/.cargo/bin/bindgen)
export LIBCLANG_PATH ?= /usr/lib/llvm-15/lib

CLIPPY_DRIVER ?= /usr/bin/clippy-driver

KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=$(LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN)

.PHONY: all modules clippy kernel check demo bench host-test kunit integration fuzz clean

all: modules

modules:
	@test -f $(KDIR)/Makefile || { echo "error: no kernel build tree at KDIR=$(KDIR): run 'make kernel' or pass KDIR=" >&2; exit 1; }
	$(KMAKE) modules

# clippy-driver must match the kernel's rustc (Debian: rust-web-clippy);
# .clippy.toml here is the kernel's configuration with the module's MSRV.
clippy:
	@test -f $(KDIR)/Makefile || { echo "error: no kernel build tree at KDIR=$(KDIR): run 'make kernel' or pass KDIR=" >&2; exit 1; }
	@test -x $(CLIPPY_DRIVER) || { echo "error: no clippy-driver at $(CLIPPY_DRIVER) (Debian package rust-web-clippy)" >&2; exit 1; }
	$(KMAKE) CLIPPY=1 CLIPPY_DRIVER=$(CLIPPY_DRIVER) CLIPPY_CONF_DIR=$(CURDIR) modules

kernel:
	tools/testing/kernel/build.sh

check:
	tools/testing/check.sh

host-test:
	tools/testing/check.sh host

kunit:
	tools/testing/check.sh kunit

integration:
	tools/testing/check.sh integration

demo:
	tools/testing/demo.sh

# BENCH_ARGS: options of tools/testing/bench/run.sh, e.g. BENCH_ARGS='--repeats 5'
bench:
	tools/testing/bench/run.sh $(BENCH_ARGS)

# The documented long fuzz run (fuzz/fuzz.sh long); figures in
# fuzz/work/summary.txt.
FUZZ_SECONDS ?= 900
fuzz:
	fuzz/fuzz.sh long $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	@if test -f $(KDIR)/Makefile; then $(KMAKE) clean; fi
	rm -f rpcrdma/bindings_generated.rs
