#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# bare-debian.sh: README.md's two commands (`make demo`, `make check`) on a
# bare Debian 12, as on a fresh machine: a bookworm chroot made with
# debootstrap (minbase), this clone bind-mounted at /src, and nothing on
# PATH but the chroot's /usr/sbin, /usr/bin, /sbin and /bin, so that no
# toolchain of the host (rustup's cargo, a pyenv python, ...) hides a
# package the setup forgot to install.
#
#   bare-debian.sh [--stage STAGE] [CHROOT]
#
# Stages (default: all, in this order):
#   prepare   debootstrap bookworm into CHROOT (default
#             $RPCRDMA2_CACHE/bare-debian), with bookworm-updates and
#             bookworm-security as apt sources, and make (what README.md
#             asks for before its commands); installs debootstrap on the
#             host if missing
#   packages  install every package list of tools/testing/lib.sh in the
#             chroot (what the setup would install) and report the disk
#             the chroot then takes; not needed by `run`, which installs
#             them itself
#   run       `make demo` then `make check` in /src, as root, with the
#             chroot's own cache (/root/.cache/rpcrdma2: a cold machine;
#             about an hour on 2 cores)
#
# The builds write into the clone (cargo's target directories, the module,
# build/): use a fresh clone. The guests run under TCG; the chroot needs no
# /dev/kvm. Needs root (debootstrap, chroot, mounts). Ends with the exit
# status of the last command it ran; the mounts are undone on exit.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

stage=all
if [ "${1:-}" = --stage ]; then
	stage=${2:?--stage needs prepare, packages or run}
	shift 2
fi
case $stage in all | prepare | packages | run) ;; *) die "unknown stage '$stage'" ;; esac
root=${1:-$RPCRDMA2_CACHE/bare-debian}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"

mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
}
trap cleanup EXIT
# bind SRC DEST: SRC and the mounts under it at DEST, as a slave (its
# unmount on exit does not propagate back to the host's mounts).
bind() {
	mkdir -p "$2"
	mount --rbind "$1" "$2"
	mount --make-rslave "$2"
	mounted+=("$2")
}

# in_chroot CMD: CMD under bash in the chroot, with a clean environment.
in_chroot() {
	env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		chroot "$root" /bin/bash -c "$1"
}

prepare() {
	if [ ! -f "$root/.debootstrap-done" ]; then
		ensure_debs debootstrap
		log "debootstrap bookworm (minbase) into $root"
		rm -rf "$root"
		mkdir -p "$root"
		debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
			die "debootstrap failed (see $root.debootstrap.log)"
		touch "$root/.debootstrap-done"
	fi
	cat >"$root/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb $security bookworm-security main
	EOF
	mount_all
	in_chroot 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make >/dev/null' ||
		die "apt-get install make in the chroot failed"
	log "chroot ready: $(du -sh -x "$root" | cut -f1)"
}

mount_all() {
	((${#mounted[@]} == 0)) || return 0
	bind /proc "$root/proc"
	bind /sys "$root/sys"
	bind /dev "$root/dev"
	bind "$RPCRDMA2_TOP" "$root/src"
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	# The host's site-local certificate authorities (a TLS-inspecting
	# proxy's, say) are, like resolv.conf, the network's configuration and
	# not a package the setup forgot: without them cargo cannot reach
	# crates.io through such a proxy. ca-certificates (which the setup
	# installs) adds them to the chroot's bundle.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		mkdir -p "$root/usr/local/share/ca-certificates"
		cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
		[ ! -x "$root/usr/sbin/update-ca-certificates" ] ||
			in_chroot 'update-ca-certificates >/dev/null' || die "update-ca-certificates in the chroot failed"
	fi
}

packages() {
	mount_all
	local before after
	before=$(du -sk -x "$root" | cut -f1)
	in_chroot '. /src/tools/testing/lib.sh && ensure_debs "${KERNEL_DEBS[@]}" "${HOST_DEBS[@]}" \
		"${RESPONDER_DEBS[@]}" "${MODULE_DEBS[@]}" "${VM_DEBS[@]}" && apt-get clean' ||
		die "installing the setup's packages in the chroot failed"
	after=$(du -sk -x "$root" | cut -f1)
	log "the setup's packages: $(((after - before) / 1024)) MiB installed; the chroot: $((after / 1024)) MiB"
}

run() {
	mount_all
	in_chroot 'cd /src && make demo && make check'
}

case $stage in
prepare) prepare ;;
packages) prepare; packages ;;
run) [ -f "$root/.debootstrap-done" ] || die "no chroot at $root: run --stage prepare first"
     run ;;
all) prepare; run ;;
esac
