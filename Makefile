# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma2 — out-of-tree module build plus the project's entry points.
# `make help` prints the lines below that start with "make", one per target
# (tools/testing/docs_admin_check.py fails when a target is missing here).
#
#   make                 build rpcrdma2.ko against KDIR (default: the cached testbed kernel)
#   make modules         the same; KDIR=<dir> builds against your own kernel build tree
#   make modules-kunit   the KUnit variant (suites, self-tests, test-only code): build/kunit/rpcrdma2.ko
#   make kunit-tree      copy the module's sources to build/kunit/ (the first step of modules-kunit)
#   make mod-tree        check KDIR; for KERNEL other than default copy the sources to build/KERNEL/ (the first step of modules)
#   make clippy          the module under clippy with the kernel's lints
#   make clippy-kunit    the KUnit variant under clippy
#   make install         rpcrdma2.ko into /lib/modules/<release>/updates/, depmod, the modprobe.d snippet
#   make kernel          build (or reuse) the cached testbed kernel
#   make kernel-debug    its debug variant (KASAN, lockdep, kmemleak, ...)
#   make modules-debug   rpcrdma2.ko for the debug kernel (KDIR_DEBUG): build/debug/rpcrdma2.ko
#   make modules-kunit-debug  the KUnit variant for the debug kernel: build/kunit-debug/
#   make modules-intree  build rpcrdma2 in-tree, in a copy of KDIR's source (Kconfig SUNRPC_XPRT_RDMA2)
#   make check           the tests: kernel, host, module, KUnit and integration phases
#   make check-long      the long tier of the integration tests (fault catalogues, soak, races)
#   make check-debug     kernel, module builds, KUnit and an integration subset on the debug kernel
#   make host-test       make check's host phase alone
#   make kunit           make check's KUnit phase alone
#   make integration     make check's integration phase alone
#   make demo            boot the two guests and show rpcrdma2 in use
#   make bench           fio and metadata benchmarks (BENCH_ARGS: options of tools/testing/bench/run.sh)
#   make fuzz            the long coverage-guided fuzz run (FUZZ_SECONDS per target, default 900)
#   make soak            the long soak under injected faults (SOAK_SECONDS per phase, default 300)
#   make clean           remove the build products
#   make help            this list
#
# KERNEL=next (or another variant of tools/testing/kernel/build.sh): the
# kernel-side targets (kernel, modules, modules-kunit, clippy, check, bench, ...)
# build for and run on that testbed kernel, Linux 7.3 for next, with the
# module in build/next/; KDIR=<dir> builds against any 6.12 or 7.3 tree
# (clang/LLVM follows the tree's CONFIG_CLANG_VERSION).
# make install: INSTALL_MOD_PATH= and DESTDIR= stage it under another root.
# make fuzz: FUZZ_TARGETS chooses the targets.

# KERNEL: the testbed kernel variant to build for (tools/testing/lib.sh
# has the table): default (Linux 6.12), debug, next (Linux 7.3). Default
# KDIR: that variant's kernel, cached outside the repository; the debug
# variant's for the *-debug targets.
KERNEL ?= default
KDIR ?= $(shell tools/testing/kernel/build.sh --variant $(KERNEL) --kdir)
KDIR_DEBUG ?= $(shell tools/testing/kernel/build.sh --variant debug --kdir)
# clang/LLVM: the version KDIR was built with (6.12's testbed kernel uses
# clang-15, 7.3's clang-19), -15 without a configured KDIR. A versioned LLVM
# also picks the libclang bindgen loads.
ifeq ($(origin LLVM),undefined)
KDIR_CLANG := $(shell sed -n 's/^CONFIG_CLANG_VERSION=\([1-9][0-9]*\)[0-9]\{4\}$$/\1/p' $(KDIR)/.config 2>/dev/null)
LLVM := -$(or $(KDIR_CLANG),15)
endif
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(shell command -v bindgen 2>/dev/null || echo $(HOME)/.cargo/bin/bindgen)
ifneq ($(filter -%,$(LLVM)),)
export LIBCLANG_PATH := /usr/lib/llvm$(LLVM)/lib
endif

CLIPPY_DRIVER ?= /usr/bin/clippy-driver

# A versioned LLVM (LLVM=-15) names the compiler and linker explicitly too,
# so that a CC=clang handed down by the caller (DKMS does that for clang
# kernels) cannot pick an unversioned clang that may not exist.
ifneq ($(filter -%,$(LLVM)),)
KMAKE_LLVM = CC=clang$(LLVM) LD=ld.lld$(LLVM)
endif

# The module for the default kernel is built in the tree (rpcrdma2.ko);
# for another KERNEL from a copy of the sources in build/KERNEL (Kbuild
# writes objects next to their sources, so builds for two kernels cannot
# share a directory; tools/testing/lib.sh module_ko says where the testbed
# finds each).
ifeq ($(KERNEL),default)
MOD_BUILD := .
else
MOD_BUILD := build/$(KERNEL)
endif
KMAKE = $(MAKE) -C $(KDIR) M=$(abspath $(MOD_BUILD)) LLVM=$(LLVM) $(KMAKE_LLVM) RUSTC=$(RUSTC) \
	BINDGEN=$(BINDGEN)

# The KUnit variant is built from a copy of the module's sources in
# KUNIT_BUILD (build/kunit, or build/kunit-KERNEL); the copy keeps mtimes,
# so rebuilds are incremental.
ifeq ($(KERNEL),default)
KUNIT_BUILD := build/kunit
else
KUNIT_BUILD := build/kunit-$(KERNEL)
endif
KMAKE_KUNIT = $(MAKE) -C $(KDIR) M=$(CURDIR)/$(KUNIT_BUILD) LLVM=$(LLVM) $(KMAKE_LLVM) RUSTC=$(RUSTC) \
	BINDGEN=$(BINDGEN) RPCRDMA2_KUNIT=1

# The same two variants for the debug kernel, each from its own copy
# (tools/testing/lib.sh module_build_dir says where the testbed finds them).
DEBUG_BUILD := build/debug
KUNIT_DEBUG_BUILD := build/kunit-debug
KMAKE_DEBUG = $(MAKE) -C $(KDIR_DEBUG) LLVM=$(LLVM) $(KMAKE_LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN)

# copy-tree DIR: the module's sources into DIR (for KUNIT_BUILD and the
# debug builds). Sources deleted or moved since the last copy must not
# linger; cp -p keeps mtimes, so rebuilds are incremental.
define copy-tree
	@mkdir -p $(1)
	@find $(1) -path $(1)/rpcrdma/bindings_generated.rs -prune -o -type f \
		\( -name '*.rs' -o -name '*.c' -o -name '*.h' \) -print | xargs -r rm -f
	@find Kbuild rpcrdma xdr/src -type f \( -name Kbuild -o -name '*.rs' -o -name '*.c' -o -name '*.h' \) \
		! -name bindings_generated.rs -exec cp -p --parents -t $(1)/ {} +
endef

define check-kdir
	@test -f $(1)/Makefile || { echo "error: no kernel build tree at $(1): run 'make $(2)' or pass KDIR=/KDIR_DEBUG=" >&2; exit 1; }
endef

.PHONY: all modules modules-kunit mod-tree kunit-tree clippy clippy-kunit install kernel check demo bench \
	host-test kunit integration fuzz soak clean kernel-debug modules-debug modules-kunit-debug \
	check-debug check-long help modules-intree

all: modules

help:
	@sed -n 's/^#   \(make.*\)/\1/p' $(firstword $(MAKEFILE_LIST))

# mod-tree: KDIR is a kernel build tree, and the copy of the sources in
# MOD_BUILD is current (for KERNEL other than default).
mod-tree:
	@test -f $(KDIR)/Makefile || { echo "error: no kernel build tree at KDIR=$(KDIR): run 'make kernel KERNEL=$(KERNEL)' or pass KDIR=" >&2; exit 1; }
ifneq ($(MOD_BUILD),.)
	$(call copy-tree,$(MOD_BUILD))
endif

modules: mod-tree
	$(KMAKE) modules

kunit-tree:
	@test -f $(KDIR)/Makefile || { echo "error: no kernel build tree at KDIR=$(KDIR): run 'make kernel KERNEL=$(KERNEL)' or pass KDIR=" >&2; exit 1; }
	$(call copy-tree,$(KUNIT_BUILD))

modules-kunit: kunit-tree
	$(KMAKE_KUNIT) modules

clippy-kunit: kunit-tree
	@test -x $(CLIPPY_DRIVER) || { echo "error: no clippy-driver at $(CLIPPY_DRIVER) (Debian package rust-web-clippy)" >&2; exit 1; }
	$(KMAKE_KUNIT) CLIPPY=1 CLIPPY_DRIVER=$(CLIPPY_DRIVER) CLIPPY_CONF_DIR=$(CURDIR) modules

# clippy-driver must match the kernel's rustc (Debian: rust-web-clippy);
# .clippy.toml here is the kernel's configuration with the module's MSRV.
clippy: mod-tree
	@test -x $(CLIPPY_DRIVER) || { echo "error: no clippy-driver at $(CLIPPY_DRIVER) (Debian package rust-web-clippy)" >&2; exit 1; }
	$(KMAKE) CLIPPY=1 CLIPPY_DRIVER=$(CLIPPY_DRIVER) CLIPPY_CONF_DIR=$(CURDIR) modules

# Like any out-of-tree module: rpcrdma2.ko into
# $(INSTALL_MOD_PATH)/lib/modules/<KDIR's release>/updates/ and depmod (by
# the kernel's modules_install), then the modprobe.d snippet that makes a
# proto=rdma mount load rpcrdma2 instead of rpcrdma.ko (client machines
# only: an NFS server needs rpcrdma.ko for svcrdma).
INSTALL_MOD_DIR ?= updates
MODPROBE_D ?= /etc/modprobe.d
install: modules
	$(KMAKE) INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) modules_install
	install -D -m 0644 samples/modprobe.d/rpcrdma2.conf $(DESTDIR)$(MODPROBE_D)/rpcrdma2.conf

kernel:
	tools/testing/kernel/build.sh --variant $(KERNEL)

kernel-debug:
	tools/testing/kernel/build.sh --variant debug

modules-debug:
	$(call check-kdir,$(KDIR_DEBUG),kernel-debug)
	$(call copy-tree,$(DEBUG_BUILD))
	$(KMAKE_DEBUG) M=$(CURDIR)/$(DEBUG_BUILD) modules

modules-kunit-debug:
	$(call check-kdir,$(KDIR_DEBUG),kernel-debug)
	$(call copy-tree,$(KUNIT_DEBUG_BUILD))
	$(KMAKE_DEBUG) M=$(CURDIR)/$(KUNIT_DEBUG_BUILD) RPCRDMA2_KUNIT=1 modules

# rpcrdma2 built in a kernel tree (Kconfig, SUNRPC_XPRT_RDMA2) in a copy
# of the testbed kernel's source: tools/testing/intree.sh.
modules-intree:
	tools/testing/intree.sh

check-debug:
	tools/testing/check.sh kernel-debug module-debug kunit-debug integration-debug

check:
	tools/testing/check.sh --kernel $(KERNEL)

check-long:
	tools/testing/check.sh integration-long

host-test:
	tools/testing/check.sh host

kunit:
	tools/testing/check.sh kunit

integration:
	tools/testing/check.sh integration

demo:
	tools/testing/demo.sh

# BENCH_ARGS: options of tools/testing/bench/run.sh, e.g. BENCH_ARGS='--repeats 5';
# KERNEL=next measures on the 7.3 testbed kernel (run.sh --variant).
bench:
	tools/testing/bench/run.sh --variant $(KERNEL) $(BENCH_ARGS)

# The long soak (make check runs its short version, rpcrdma2-soak):
# SOAK_SECONDS per phase (four phases), a fault every SOAK_FAULT_EVERY
# seconds, SOAK_DEVICE_REMOVAL=1 adds deleting the client's RDMA device
# under the mount, SOAK_LINK_BOUNCE=1 the server's link down for 3 s
# (breaks soft-RoCE itself: Documentation/testing.rst, "Soak"),
# SOAK_OUTAGE=1 (the default here) the network losing every frame for 3 s;
# SOAK_FAULTS chooses faults by name instead (for example SOAK_FAULTS=outage;
# default: all that apply); figures in the run's results directory
# (soak.txt, soak-stalls.txt, trace-*.txt around outages).
SOAK_SECONDS ?= 300
SOAK_FAULT_EVERY ?= 10
SOAK_DEVICE_REMOVAL ?= 0
SOAK_LINK_BOUNCE ?= 0
SOAK_OUTAGE ?= 1
SOAK_MAX_STALL ?= 60
SOAK_FAULTS ?=
soak: modules
	tools/responder/build.sh >/dev/null
	tools/testing/vm/run.sh --timeout $$(( $(SOAK_SECONDS) * 4 + 900 )) \
		--server-script tools/testing/integration/server/soak.sh \
		tools/testing/integration/rpcrdma2-soak.sh $(SOAK_SECONDS) $(SOAK_FAULT_EVERY) \
		$(SOAK_DEVICE_REMOVAL) $(SOAK_MAX_STALL) $(SOAK_LINK_BOUNCE) $(SOAK_OUTAGE) \
		"$(SOAK_FAULTS)"

# The documented long fuzz run (fuzz/fuzz.sh long); figures in
# fuzz/work/summary.txt.
FUZZ_SECONDS ?= 900
fuzz:
	fuzz/fuzz.sh long $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	@if test -f $(KDIR)/Makefile; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	rm -f rpcrdma/bindings_generated.rs
	rm -rf build
