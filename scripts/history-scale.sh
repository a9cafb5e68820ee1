#!/usr/bin/env bash
# Does a loopx-state history of a million writebacks stay workable?
#
#   cargo build --release
#   TMPDIR=<a roomy directory> scripts/history-scale.sh [N]      # N defaults to 1,000,000
#
# Synthesizes, with one `git fast-import`, a state branch of N writeback
# commits on top of a real `git loopx init`: each commit adds one run file
# at its place in the real layout (goals/main/runs/<day>/<xx>/<run-id>.yaml),
# PER_DAY of them a day (default 1,000), as `git loopx writeback` would.
# Then it times, with the release binary: the first read (no cache), status,
# should-run, a writeback, log and history with limited output, git's
# merge-base and a real `git loopx sync` between a clone and a bare remote
# that diverged by a few commits, and the repository's size after `git gc`.
# The same figures are then taken again after one more commit keeps only the
# last KEEP_DAYS days of runs (default 30): same history, small state — which
# separates what grows with history from what grows with the state.
#
# Environment: GIT_LOOPX (the binary; default target/release/git-loopx),
# PER_DAY, KEEP_DAYS, KEEP=1 (keep the scratch directory, and print it).
set -euo pipefail

N=${1:-1000000}
PER_DAY=${PER_DAY:-1000}
KEEP_DAYS=${KEEP_DAYS:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GIT_LOOPX:-$here/target/release/git-loopx}
[ -x "$BIN" ] || { echo "no $BIN: run cargo build --release" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/loopx-history.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "scratch: $work" >&2; else trap 'rm -rf "$work"' EXIT; fi

# Hermetic: nothing from the user's git config or clock.
export HOME=$work/home GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 TZ=UTC LANG=C LC_ALL=C
export GIT_AUTHOR_NAME=scale GIT_AUTHOR_EMAIL=scale@example.com
export GIT_COMMITTER_NAME=scale GIT_COMMITTER_EMAIL=scale@example.com
unset LOOPX_AGENT LOOPX_GOAL
mkdir -p "$HOME"

T0=1767225600                       # 2026-01-01T00:00:00Z, the first day
days=$(( (N + PER_DAY - 1) / PER_DAY ))
end=$(( T0 + days * 86400 ))         # midnight after the last run
export LOOPX_NOW
LOOPX_NOW=$(date -u -d "@$((end - 600))" +%Y-%m-%dT%H:%M:%SZ)
export GIT_AUTHOR_DATE="$end +0000" GIT_COMMITTER_DATE="$end +0000"

loopx() { "$BIN" "$@"; }
now_ms() { date +%s%3N; }
# `timed LABEL CMD...`: the median wall time of 3 runs (1 when REPS=1).
rows=()
timed() {
    local label=$1; shift
    local reps=${REPS:-3} times=() i t0
    for ((i = 0; i < reps; i++)); do
        t0=$(now_ms); "$@" >/dev/null; times+=($(( $(now_ms) - t0 )))
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (reps + 1) / 2 ))p")
    rows+=("$label|$median ms")
    printf '  %-58s %8s ms\n' "$label" "$median" >&2
}
# `inside DIR CMD...`: CMD run in DIR by this shell (so `timed` keeps its rows).
inside() { local dir=$1; shift; cd "$dir"; "$@"; cd "$repo"; }
note() { rows+=("$1|$2"); printf '  %-58s %11s\n' "$1" "$2" >&2; }
size() { du -sk "$1/objects" | awk '{printf "%.0f MiB", $1 / 1024}'; }

repo=$work/repo
mkdir -p "$repo" && cd "$repo"
git init -q -b main && git commit -q --allow-empty -m base
GIT_AUTHOR_DATE="$T0 +0000" GIT_COMMITTER_DATE="$T0 +0000" LOOPX_NOW=2026-01-01T00:00:00Z \
    loopx init --objective "history scale" >/dev/null
todo=$(LOOPX_NOW=2026-01-01T00:00:00Z loopx --json todo add "the long-running task" |
    sed -n 's/.*"id": *"\(todo_[0-9a-f]*\)".*/\1/p' | head -1)
[ -n "$todo" ] || { echo "todo add gave no id" >&2; exit 1; }

# The days, one per line, for the generator.
for ((d = 0; d < days; d++)); do date -u -d "@$((T0 + d * 86400))" +%F; done >"$work/days"

echo "history-scale: $N writebacks, $PER_DAY a day ($days days), in $work" >&2
t0=$(now_ms)
mawk_or_awk=$(command -v mawk || command -v awk)
"$mawk_or_awk" -v n="$N" -v per="$PER_DAY" -v t0="$T0" -v todo="$todo" -v days="$work/days" '
BEGIN {
    while ((getline line < days) > 0) day[d++] = line
    for (i = 1; i <= n; i++) {
        j = i - 1; dn = int(j / per); s = int((j % per) * 86400 / per)
        at = sprintf("%sT%02d:%02d:%02dZ", day[dn], int(s / 3600), int(s % 3600 / 60), s % 60)
        shard = sprintf("%02x", (i * 167) % 256)
        id = sprintf("run_%s%010x", shard, i)
        yaml = sprintf("id: %s\nkind: writeback\ngoal: main\nagent: agent-%d\nat: \x27%s\x27\nseq: %d\ntodo: %s\noutcome: outcome_progress\nsummary: step %d of the long-running task\n", id, i % 4, at, i, todo, i)
        msg = sprintf("writeback %s on %s by agent-%d: outcome_progress step %d\n\nLoopx-Op: writeback\nLoopx-Todo: %s\nLoopx-Run: %s\nLoopx-Goal: main\nLoopx-Agent: agent-%d\n", id, todo, i % 4, i, todo, id, i % 4)
        printf "commit refs/heads/loopx-state\ncommitter scale <scale@example.com> %d +0000\ndata %d\n%s", t0 + dn * 86400 + s, length(msg), msg
        if (i == 1) printf "from refs/heads/loopx-state^0\n"
        printf "M 100644 inline goals/main/runs/%s/%s/%s.yaml\ndata %d\n%s\n", day[dn], shard, id, length(yaml), yaml
    }
}' | git fast-import --quiet --depth=50
import_ms=$(( $(now_ms) - t0 ))
note "import: $N commits with git fast-import" "$(( import_ms / 1000 )) s"
note "objects after import (fast-import's pack)" "$(size .git)"

# `measure LABEL [local]`: the figures at the tip; `local` skips the clones
# and syncs (each of which reads a state no cache holds).
measure() {
    local what=$1
    REPS=1 timed "first read, no cache ($what)" loopx status
    timed "status ($what)" loopx status
    timed "should-run ($what)" loopx --agent agent-0 should-run
    timed "writeback, process ($what)" loopx --agent agent-0 writeback --todo "$todo" \
        --outcome outcome_progress --summary "measured"
    timed "log -n 20 ($what)" loopx log -n 20
    timed "history -n 20 ($what)" loopx history -n 20
    [ "${2:-}" = local ] && return
    # Two clones of a bare remote, each a few writebacks ahead.
    rm -rf "$work/remote.git" "$work/a" "$work/b"
    git clone -q --bare "$repo" "$work/remote.git"
    git clone -q "$work/remote.git" "$work/a"
    git clone -q "$work/remote.git" "$work/b"
    local side k
    for side in a b; do
        inside "$work/$side" git branch -q loopx-state origin/loopx-state
        REPS=1 inside "$work/$side" timed "first read in a fresh clone ($what)" loopx status
        for k in 1 2 3; do
            inside "$work/$side" loopx --agent "agent-$side" writeback --todo "$todo" \
                --outcome outcome_progress --summary "$side $k" >/dev/null
        done
    done
    inside "$work/a" loopx sync >/dev/null
    inside "$work/b" git fetch -q origin
    inside "$work/b" timed "git merge-base, 3 commits apart each side ($what)" \
        git merge-base loopx-state origin/loopx-state
    REPS=1 inside "$work/b" timed "sync: fetch, merge, push ($what)" loopx sync
    REPS=1 inside "$work/a" timed "sync: fetch, fast-forward ($what)" loopx sync
}

echo "with every run in the state:" >&2
REPS=1 measure "all $N runs in state" local
t0=$(now_ms)
git gc -q
note "git gc" "$(( ($(now_ms) - t0) / 1000 )) s"
note "repository size after git gc" "$(size .git)"

# Keep the last KEEP_DAYS days of runs: one commit removing the older days.
keep_from=$(( days - KEEP_DAYS ))
msg="keep the last $KEEP_DAYS days of runs"
{
    printf 'commit refs/heads/loopx-state\ncommitter scale <scale@example.com> %d +0000\n' "$end"
    printf 'data %d\n%s\nfrom refs/heads/loopx-state^0\n' "${#msg}" "$msg"
    head -n "$keep_from" "$work/days" | sed 's|^|D goals/main/runs/|'
} | git fast-import --quiet
echo "with the last $KEEP_DAYS days of runs in the state:" >&2
measure "last $KEEP_DAYS days in state"

echo
echo "| measure | figure |"
echo "|---|---:|"
for row in "${rows[@]}"; do echo "| ${row%%|*} | ${row#*|} |"; done
