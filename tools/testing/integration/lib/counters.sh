# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The counters the client scripts read, sourced by them: the mount's
# "xprt: rdma" line of /proc/self/mountstats (the caller sets MNT, the
# mount point, before calling these) and the responder's counters file.

# The fields of the line after "xprt: rdma", in order: the C client's
# layout (transport.c xprt_rdma_print_stats), then rpcrdma2's
# remote_inv, backchannel, error recovery, continuation and stale-reply
# counters.
FIELDS=(port bind connect connect_time idle sends recvs bad_xids req_u bklog_u
	read_chunk write_chunk reply_chunk rdma_request rdma_reply pullup fixup
	hardway failed_marshal bad_reply nomsg recycled orphaned mrs_allocated
	local_inv empty_sendctx zero remote_inv bc_calls bc_replies bc_dropped
	recover_position_zero recover_reply_chunk recover_segments
	recover_write_resource recover_reply_resource recover_failed
	cont_replies cont_calls grants_sent stale_replies)

# rdma_line: the whole line.
rdma_line() {
	awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" && $2 == "rdma" {print; exit}' \
		/proc/self/mountstats
}

# rdma_field NAME: the field NAME of FIELDS. Fails on a line of another
# length.
rdma_field() {
	local line i
	read -r -a line <<<"$(rdma_line)"
	((${#line[@]} == ${#FIELDS[@]} + 2)) ||
		tb_die "xprt line has ${#line[@]} fields, expected $((${#FIELDS[@]} + 2)): ${line[*]}"
	for i in "${!FIELDS[@]}"; do
		[ "${FIELDS[$i]}" = "$1" ] && { echo "${line[$((i + 2))]}"; return; }
	done
	tb_die "no mountstats field $1"
}

# xprt_field N: field N of the line, counted from 1 after "rdma" (the
# N-th of FIELDS), whatever the line's length.
xprt_field() {
	awk -v m="$MNT" -v f="$1" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" && $2 == "rdma" {print $(f + 2); exit}' \
		/proc/self/mountstats
}

# stat_of PORT NAME: the counter NAME of the responder on PORT (its
# --stats file in the control directory; 0 before the file exists).
stat_of() {
	awk -v n="$2" '$1 == n {print $2}' "/results/ctl/responder-$1.stats" 2>/dev/null || echo 0
}
