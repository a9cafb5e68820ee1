#!/usr/bin/env bash
# Does a loopx-state history of a million writebacks stay workable, with
# the retention horizon at its default (the quota window, 24 h)?
#
#   cargo build --release
#   TMPDIR=<a roomy directory> scripts/history-scale.sh [N]      # N defaults to 1,000,000
#
# Synthesizes, with `git fast-import`, a state branch of N writeback commits
# on top of a real `git loopx init`: each commit adds one run file at its
# place in the real layout (goals/main/runs/<day>/<xx>/<run-id>.yaml),
# PER_DAY of them a day (default 1,000), as `git loopx writeback` would.
# The days are imported CHUNK_DAYS at a time (default 10), and after each
# chunk the release binary makes one real writeback at the chunk's last
# evening, which archives what fell past the horizon, as a fleet's next
# writeback would. It times, with the release binary, at 1,000 runs (the
# first day) and again at N: a cold read (the host cache removed), status,
# should-run, a writeback, log and history with limited output, and
# `history --since` the first day (which reads archived runs back); then a
# real `git loopx sync` between two clones of a bare remote, and the
# repository's size after `git gc`. It prints the two columns and their
# ratio.
#
# Environment: GIT_LOOPX (the binary; default target/release/git-loopx),
# PER_DAY, CHUNK_DAYS, KEEP=1 (keep the scratch directory, and print it).
set -euo pipefail

N=${1:-1000000}
PER_DAY=${PER_DAY:-1000}
CHUNK_DAYS=${CHUNK_DAYS:-10}
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
# Its days run past this machine's clock: let LOOPX_NOW go there.
export LOOPX_ALLOW_FUTURE=1
export GIT_AUTHOR_DATE="$end +0000" GIT_COMMITTER_DATE="$end +0000"

loopx() { "$BIN" "$@"; }
now_ms() { date +%s%3N; }
# `timed LABEL CMD...`: the median wall time of 3 runs (1 when REPS=1).
rows=()
declare -A fig
timed() {
    local label=$1; shift
    local reps=${REPS:-3} times=() i t0
    for ((i = 0; i < reps; i++)); do
        t0=$(now_ms); "$@" >/dev/null; times+=($(( $(now_ms) - t0 )))
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (reps + 1) / 2 ))p")
    rows+=("$label|$median ms")
    fig[$label]=$median
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

# `import FIRST COUNT`: writeback commits FIRST..FIRST+COUNT-1 (1-based).
import() {
    "$mawk_or_awk" -v first="$1" -v count="$2" -v per="$PER_DAY" -v t0="$T0" -v todo="$todo" -v days="$work/days" '
BEGIN {
    while ((getline line < days) > 0) day[d++] = line
    for (i = first; i < first + count; i++) {
        j = i - 1; dn = int(j / per); s = int((j % per) * 86400 / per)
        at = sprintf("%sT%02d:%02d:%02dZ", day[dn], int(s / 3600), int(s % 3600 / 60), s % 60)
        shard = sprintf("%02x", (i * 167) % 256)
        id = sprintf("run_%s%010x", shard, i)
        yaml = sprintf("id: %s\nkind: writeback\ngoal: main\nagent: agent-%d\nat: \x27%s\x27\nseq: %d\ntodo: %s\noutcome: outcome_progress\nsummary: step %d of the long-running task\n", id, i % 4, at, i, todo, i)
        msg = sprintf("writeback %s on %s by agent-%d: outcome_progress step %d\n\nLoopx-Op: writeback\nLoopx-Todo: %s\nLoopx-Run: %s\nLoopx-Goal: main\nLoopx-Agent: agent-%d\n", id, todo, i % 4, i, todo, id, i % 4)
        printf "commit refs/heads/loopx-state\ncommitter scale <scale@example.com> %d +0000\ndata %d\n%s", t0 + dn * 86400 + s, length(msg), msg
        if (i == first) printf "from refs/heads/loopx-state^0\n"
        printf "M 100644 inline goals/main/runs/%s/%s/%s.yaml\ndata %d\n%s\n", day[dn], shard, id, length(yaml), yaml
    }
}' | git fast-import --quiet --depth=50
}
mawk_or_awk=$(command -v mawk || command -v awk)

# `evening DAY-INDEX CMD...`: CMD at 23:50 of that day (clock and dates).
evening() {
    local t=$(( T0 + $1 * 86400 + 85800 )); shift
    LOOPX_NOW=$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ) \
        GIT_AUTHOR_DATE="$t +0000" GIT_COMMITTER_DATE="$t +0000" "$@"
}

runs_in_tip() { git ls-tree -r --name-only loopx-state goals/main/runs | wc -l; }

# `measure COLUMN DAY-INDEX`: the figures at the tip, on that day's evening.
# git's own housekeeping (a full `git gc`, timed) is done first and held
# off while timing: a writeback waits for a `git gc` that is running, and a
# gc of a million commits takes minutes — the history's cost, apart.
measure() {
    local what=$1 day=$2 t0 k
    t0=$(now_ms); git gc -q
    note "git gc before measuring ($what)" "$(( ($(now_ms) - t0) / 1000 )) s, $(size .git)"
    # Then a fleet's next writebacks, whose upkeep (one write in eight
    # looks) writes a multi-pack-index over a pack index of 32 MiB or more,
    # in the background: until it is there, or 64 writebacks.
    t0=$(now_ms)
    for ((k = 0; k < 64; k++)); do
        [ -f .git/objects/pack/multi-pack-index ] && break
        evening "$day" loopx --agent agent-2 writeback --todo "$todo" \
            --outcome outcome_progress --summary "after the gc, $k" >/dev/null
        while pgrep -f "multi-pack-index write" >/dev/null; do sleep 0.1; done
    done
    note "writebacks after the gc; multi-pack-index ($what)" \
        "$k, $([ -f .git/objects/pack/multi-pack-index ] && echo "written in $(( $(now_ms) - t0 )) ms" || echo none)"
    git config maintenance.auto false; git config gc.auto 0
    note "runs in the tip's tree ($what)" "$(runs_in_tip)"
    rm -rf .git/loopx/cache
    REPS=1 evening "$day" timed "cold read: status, no cache ($what)" loopx status
    evening "$day" timed "status ($what)" loopx status
    evening "$day" timed "should-run ($what)" loopx --agent agent-0 should-run
    evening "$day" timed "writeback, process ($what)" loopx --agent agent-0 writeback \
        --todo "$todo" --outcome outcome_progress --summary "measured"
    evening "$day" timed "log -n 20 ($what)" loopx log -n 20
    evening "$day" timed "history -n 20 ($what)" loopx history -n 20
    evening "$day" timed "report --since 7d ($what)" loopx report --since 7d
    evening "$day" timed "history --since the first day, -n 5 ($what)" \
        loopx history --since "$(head -1 "$work/days")" --until "$(head -1 "$work/days")" -n 5
    git config --unset maintenance.auto; git config --unset gc.auto
}

echo "history-scale: $N writebacks, $PER_DAY a day ($days days), in $work" >&2
import 1 "$(( PER_DAY < N ? PER_DAY : N ))"
measure "1,000 runs" 0
evening 0 loopx --json history --since "$(head -1 "$work/days")" -n 1000000 >"$work/first.json"
first_run=$(grep -o '"id": *"run_[0-9a-f]*"' "$work/first.json" | tail -1)

t0=$(now_ms)
done_runs=$PER_DAY
archive_ms=0
while ((done_runs < N)); do
    count=$(( CHUNK_DAYS * PER_DAY ))
    ((done_runs + count > N)) && count=$(( N - done_runs ))
    import "$(( done_runs + 1 ))" "$count"
    done_runs=$(( done_runs + count ))
    # The next writeback, on the evening of the chunk's last day, archives.
    a0=$(now_ms)
    evening "$(( (done_runs - 1) / PER_DAY ))" loopx --agent agent-1 writeback --todo "$todo" \
        --outcome outcome_progress --summary "end of day $(( (done_runs - 1) / PER_DAY ))" >/dev/null
    archive_ms=$(( archive_ms + $(now_ms) - a0 ))
    printf '\r  %d of %d runs' "$done_runs" "$N" >&2
done
echo >&2
note "import of $N commits, with a real writeback per $CHUNK_DAYS days" "$(( ($(now_ms) - t0) / 1000 )) s"
note "those writebacks (each archives what fell past the horizon)" "$(( archive_ms / 1000 )) s"
note "archives recorded along the chain" "$(git log --format=%B loopx-state | grep -c '^Loopx-Archived:' || true)"

last=$(( days - 1 ))
measure "$N runs written" "$last"
found=$(evening "$last" loopx --json history --since "$(head -1 "$work/days")" \
    --until "$(head -1 "$work/days")" -n 1000000 | grep -o '"id": *"run_' | wc -l)
note "runs of the first day history --since lists at $N" "$found ($PER_DAY imported, 3 measured writebacks)"
t0=$(now_ms)
evening "$last" loopx --json history --since "$(head -1 "$work/days")" -n 100000000 >"$work/all.json"
all_ms=$(( $(now_ms) - t0 ))
grep -q "$first_run" "$work/all.json" || { echo "history --since lost $first_run" >&2; exit 1; }
note "history --since the first day, every run listed" "$(grep -o '"id": *"run_' "$work/all.json" | wc -l) in $all_ms ms"

# Two clones of a bare remote, each a few writebacks ahead.
git clone -q --bare "$repo" "$work/remote.git"
for side in a b; do
    git clone -q "$work/remote.git" "$work/$side"
    inside "$work/$side" git branch -q loopx-state origin/loopx-state
    for k in 1 2 3; do
        inside "$work/$side" evening "$last" loopx --agent "agent-$side" writeback --todo "$todo" \
            --outcome outcome_progress --summary "$side $k" >/dev/null
    done
done
inside "$work/a" evening "$last" loopx sync >/dev/null
REPS=1 inside "$work/b" evening "$last" timed "sync: fetch, merge, push ($N runs written)" loopx sync
REPS=1 inside "$work/a" evening "$last" timed "sync: fetch, fast-forward ($N runs written)" loopx sync


echo
echo "| measure | figure |"
echo "|---|---:|"
for row in "${rows[@]}"; do echo "| ${row%%|*} | ${row#*|} |"; done
echo
echo "| at $N runs written against 1,000 | ratio |"
echo "|---|---:|"
for m in "cold read: status, no cache" "status" "should-run" "writeback, process" \
    "log -n 20" "history -n 20"; do
    a=${fig["$m (1,000 runs)"]} b=${fig["$m ($N runs written)"]}
    echo "| $m | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }') |"
done
