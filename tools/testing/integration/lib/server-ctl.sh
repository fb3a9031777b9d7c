# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Requests to a server script that serves the control directory
# (server/soak.sh: nfsd and responder restarts, link bounce, outage,
# diagnostics), sourced by the client scripts that use it. The caller
# sets CTL (the control directory) and REQ (the request counter, 0 at
# start).

# server_do ACTION...: ask the server and wait (30 s at most) for it.
server_do() {
	local name=$$.$((REQ += 1)) i
	# Written aside and renamed: the server must never see half a request.
	echo "$*" >"$CTL/soak-tmp.$name"
	mv "$CTL/soak-tmp.$name" "$CTL/soak-req.$name"
	for ((i = 0; i < 300; i++)); do
		if [ -e "$CTL/soak-done.$name" ]; then
			[ "$(cat "$CTL/soak-done.$name")" = ok ] ||
				tb_die "server: $(cat "$CTL/soak-done.$name")"
			return 0
		fi
		sleep 0.1
	done
	tb_die "server did not serve '$*' within 30 s"
}
