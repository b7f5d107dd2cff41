#!/usr/bin/env bash
# Install the package built by build-deb.sh on this machine (root) and
# check it as a user would: the binaries on PATH, `man pipelab-shell`
# renders, completions are where bash, zsh and fish look, the `pipelab`
# group exists, and pipelabd starts from its systemd unit (with
# `systemctl` where systemd runs; elsewhere, as the unit would: its
# ExecStart with the unit's runtime and state directories and capability
# bounding set) and answers `pipelab show`. Then it is removed and purged.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=$(ls -t target/debian/pipelab_*.deb | head -n 1)
fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
echo "test-deb: installing $deb"
dpkg -i "$deb" >/dev/null

[ "$(command -v pipelab)" = /usr/bin/pipelab ] || fail "pipelab is not /usr/bin/pipelab"
[ -x /usr/sbin/pipelabd ] || fail "no /usr/sbin/pipelabd"
pipelab --version | grep -q '^pipelab ' || fail "pipelab --version"
page=$(MANWIDTH=80 man -P cat pipelab-shell 2>/dev/null) || fail "man pipelab-shell does not render"
grep -q 'Run a command in a new network namespace' <<<"$page" || fail "man pipelab-shell: unexpected text"
MANWIDTH=80 man -P cat 8 pipelabd 2>/dev/null | grep -q -- '--state-dir' || fail "man 8 pipelabd"
for f in /usr/share/bash-completion/completions/pipelab \
         /usr/share/zsh/vendor-completions/_pipelab \
         /usr/share/fish/vendor_completions.d/pipelab.fish; do
    [ -s "$f" ] || fail "no completion file $f"
done
bash -c 'source /usr/share/bash-completion/completions/pipelab && complete -p pipelab' >/dev/null \
    || fail "the bash completion does not load"
getent group pipelab >/dev/null || fail "no pipelab group"
unit=/lib/systemd/system/pipelabd.service
[ -f "$unit" ] || unit=/usr/lib/systemd/system/pipelabd.service
[ -f "$unit" ] || fail "no pipelabd.service"

sock=/run/pipelab/pipelab.sock
answers() {
    for _ in $(seq 1 100); do
        if pipelab show >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    return 1
}
if [ -d /run/systemd/system ]; then
    echo "test-deb: systemd runs: systemctl start pipelabd"
    systemctl daemon-reload
    systemctl start pipelabd
    answers || { systemctl status pipelabd --no-pager || true; fail "pipelabd (systemd) does not answer"; }
    systemctl stop pipelabd
else
    echo "test-deb: systemd does not run here: starting pipelabd as its unit would"
    exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
    bounding=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g')
    mkdir -p /run/pipelab /var/lib/pipelab
    setpriv --bounding-set "-all,+$bounding" --no-new-privs $exec_start 2>/tmp/pipelabd-deb.log &
    pid=$!
    trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; pipelab cleanup >/dev/null 2>&1 || true' EXIT
    answers || { cat /tmp/pipelabd-deb.log; fail "pipelabd (as the unit would) does not answer"; }
    pipelab list | grep -q '^pipelabd ' || fail "pipelab list does not show pipelabd"
    kill -TERM "$pid"
    wait "$pid" || { cat /tmp/pipelabd-deb.log; fail "pipelabd did not stop cleanly"; }
    trap - EXIT
    grep -q 'listening on' /tmp/pipelabd-deb.log || fail "no listening line"
fi
[ -e "$sock" ] && fail "pipelabd left its socket"
dpkg --purge pipelab >/dev/null
[ -e /usr/bin/pipelab ] && fail "pipelab outlived the purge"
echo "test-deb: ok ($deb)"
