#!/usr/bin/env bash
# Run the same per-turn scenarios on the installed reference LoopX 2.1.1 and on
# git-loopx, and print what each one's should-run decides, side by side.
#
# Usage (after: eval "$(scripts/install-reference.sh REFDIR)"; export LOOPX_REF_BIN LOOPX_REF_PATH):
#   scripts/compare-reference.sh [--git-loopx BIN] [--keep]
#
#   --git-loopx BIN  the git-loopx binary to compare (default: git-loopx on PATH,
#                    else target/debug/git-loopx of this checkout)
#   --keep           keep the scratch directory (every command's JSON is in it)
#
# Scenarios (issue 17, "Done when" 1):
#   a  global gate + an independent todo
#   b  a gate with no scope (no --unblocks, no agent) + a todo
#   c  a gate scoped to agent-a + another todo; asked as agent-a (c/A) and agent-b (c/B)
#      (c/U, extra: a gate that unblocks one todo + an independent todo)
#   d  a new goal with no todos (d2, extra: the goal's only todo is done)
#   e  a deferred successor (resume when its predecessor is done), after the predecessor is done
#   f  only blocked todos
#   g  a continuous monitor, not due (g1), then due (g2)
#   h  an open user_action reminder + a todo
#
# Output: one row per scenario and field:
#   scenario | field | LoopX | git-loopx | same?
# for decision, state, effective_action, selected (the selected todo by its
# role in the scenario, or "none"), hint (scheduler_hint.action) and notify.
# LoopX has no notify_user field: "notify" there is true when
# interaction_contract.user_channel.notify is "NOTIFY" or notify_user_on_gate
# is true.
#
# Clocks: git-loopx runs with a pinned LOOPX_NOW. LoopX 2.1.1 has no clock
# override, so its monitor due times are set relative to the real clock
# (--next-due-at now+15m for "not due", now-1m for "due").
#
# A git-loopx step that fails (for example a flag that is not built yet) makes
# that scenario's git-loopx column "unsupported"; the script goes on. A
# reference step that fails is unexpected: the script stops with exit 1.
# Without LOOPX_REF_BIN/LOOPX_REF_PATH it prints "skipped: ..." and exits 0.
# JSON is read with the Python that the reference itself runs on.
# This script is not part of `cargo test`; each reference command takes
# seconds, so a full run takes a few minutes.
set -uo pipefail

usage() { echo "usage: $0 [--git-loopx BIN] [--keep]" >&2; exit 2; }
die() { echo "compare-reference: error: $*" >&2; exit 1; }

GL=""
KEEP=0
while [ "$#" -gt 0 ]; do
  case "$1" in
  --git-loopx) [ "$#" -ge 2 ] || usage; GL="$2"; shift 2 ;;
  --keep) KEEP=1; shift ;;
  -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) usage ;;
  esac
done

if [ -z "${LOOPX_REF_BIN:-}" ] || [ -z "${LOOPX_REF_PATH:-}" ]; then
  echo "skipped: LOOPX_REF_BIN/LOOPX_REF_PATH are not set (install the reference with scripts/install-reference.sh)"
  exit 0
fi
if [ ! -x "$LOOPX_REF_BIN" ]; then
  echo "skipped: LOOPX_REF_BIN is not executable: $LOOPX_REF_BIN"
  exit 0
fi

HERE="$(cd "$(dirname "$0")/.." && pwd -P)"
if [ -z "$GL" ]; then
  GL="$(command -v git-loopx || true)"
  [ -n "$GL" ] || GL="$HERE/target/debug/git-loopx"
fi
[ -x "$GL" ] || die "git-loopx binary not found or not executable: $GL (pass --git-loopx BIN)"
GL="$(cd "$(dirname "$GL")" && pwd -P)/$(basename "$GL")"

PY=""
for c in "$LOOPX_REF_PATH/python3" "$LOOPX_REF_PATH/python" "$(dirname "$LOOPX_REF_BIN")/python3"; do
  if [ -x "$c" ]; then PY="$c"; break; fi
done
[ -n "$PY" ] || PY="$(command -v python3 || true)"
[ -n "$PY" ] || die "no Python found next to the reference (needed to read its JSON)"

W="$(mktemp -d "${TMPDIR:-/tmp}/compare-reference.XXXXXX")"
if [ "$KEEP" = 1 ]; then
  echo "scratch directory: $W" >&2
else
  trap 'rm -rf "$W"' EXIT
fi

unset LOOPX_REGISTRY LOOPX_GOAL_ID LOOPX_AGENT_ID LOOPX_PROJECT LOOPX_TURN LOOPX_AGENT LOOPX_GOAL

# ---------------------------------------------------------------- reference
GOAL=g

# lxr DIR ARGS... : one reference CLI process for the project in DIR.
lxr() {
  local d="$1"; shift
  (cd "$d/proj" && env HOME="$d/home" LOOPX_RUNTIME_ROOT="$d/home/.loopx" TMPDIR="$d/tmp" \
    LOOPX_USAGE_PING=0 DO_NOT_TRACK=1 PATH="$LOOPX_REF_PATH:$PATH" \
    "$LOOPX_REF_BIN" --format json "$@")
}

# rstep DIR NAME ARGS... : run a reference step (with --registry), keep its
# JSON in DIR/out/NAME.json; any failure stops the script.
rstep() {
  local d="$1" name="$2"; shift 2
  local rc=0
  lxr "$d" --registry "$d/home/.loopx/registry.global.json" "$@" \
    >"$d/out/$name.json" 2>"$d/out/$name.err" || rc=$?
  if [ "$rc" -ne 0 ] || grep -q '^{"ok":false' "$d/out/$name.json"; then
    echo "compare-reference: reference step $name failed (rc=$rc) in $d" >&2
    head -c 600 "$d/out/$name.json" >&2; echo >&2; head -c 600 "$d/out/$name.err" >&2
    exit 1
  fi
}

# field FILE PATH : a value from a JSON file (dotted path), "" when absent.
field() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    o = o.get(k) if isinstance(o, dict) else None
print("" if o is None else o)
PY
}

# rnew NAME [AGENT...] : a fresh reference project with goal g and agents.
rnew() {
  local d="$W/ref-$1"; shift
  mkdir -p "$d/home" "$d/tmp" "$d/proj" "$d/out"
  : >"$d/roles"
  local rc=0
  lxr "$d" bootstrap --project "$d/proj" --goal-id "$GOAL" --objective "Comparison goal" \
    >"$d/out/bootstrap.json" 2>"$d/out/bootstrap.err" || rc=$?
  [ "$rc" -eq 0 ] || die "reference bootstrap failed in $d (see $d/out/bootstrap.err)"
  local a
  for a in "$@"; do
    rstep "$d" "register-$a" register-agent --goal-id "$GOAL" --agent-id "$a" --execute
  done
}

# radd DIR ROLE_LABEL ARGS... : add a todo, remember its id under ROLE_LABEL.
radd() {
  local d="$1" label="$2"; shift 2
  rstep "$d" "add-$label" todo add --goal-id "$GOAL" "$@"
  local id; id="$(field "$d/out/add-$label.json" todo_id)"
  [ -n "$id" ] || die "reference todo add printed no todo_id ($d/out/add-$label.json)"
  echo "$id $label" >>"$d/roles"
}

# rid DIR LABEL : the id of the todo added under LABEL.
rid() { awk -v l="$2" 'substr($0, index($0, " ") + 1) == l { print $1 }' "$1/roles"; }

# rdecide DIR NAME AGENT : should-run as AGENT into DIR/out/NAME.json.
rdecide() {
  rstep "$1" "$2" quota should-run --goal-id "$GOAL" --agent-id "$3" --runtime-profile generic_cli
}

iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

ref_scenarios() {
  local d id v
  # a: global gate + independent todo
  rnew a agent-a; d="$W/ref-a"
  radd "$d" "independent todo" --role agent --text "Independent work"
  radd "$d" gate --role user --task-class user_gate --global-gate --text "Which database?"
  rdecide "$d" sr-a agent-a
  # b: a gate with no scope + a todo
  rnew b agent-a; d="$W/ref-b"
  radd "$d" "todo" --role agent --text "Some work"
  radd "$d" gate --role user --task-class user_gate --text "Which database?"
  rdecide "$d" sr-b agent-a
  # c: gate for agent-a + another todo, asked as agent-a and agent-b
  rnew c agent-a agent-b; d="$W/ref-c"
  radd "$d" "other todo" --role agent --text "Other work"
  radd "$d" gate --role user --task-class user_gate --blocks-agent agent-a --text "Which database?"
  rdecide "$d" sr-c-A agent-a
  rdecide "$d" sr-c-B agent-b
  # c/U (not in the issue's list; the case LoopX calls a safe bypass): a gate
  # that unblocks one todo, and an independent todo.
  rnew cu agent-a; d="$W/ref-cu"
  radd "$d" "held todo" --role agent --text "Held work"
  radd "$d" "independent todo" --role agent --text "Independent work" --priority P2
  radd "$d" gate --role user --task-class user_gate --unblocks-todo-id "$(rid "$d" "held todo")" \
    --text "Which database?"
  rdecide "$d" sr-cu agent-a
  # d: new goal, no todos
  rnew d agent-a; d="$W/ref-d"
  rdecide "$d" sr-d agent-a
  # d2 (not in the issue's list): the goal's only todo is done, none is open.
  rnew d2 agent-a; d="$W/ref-d2"
  radd "$d" "done todo" --role agent --text "Only work"
  id="$(rid "$d" "done todo")"
  rstep "$d" claim todo claim --goal-id "$GOAL" --todo-id "$id" --claimed-by agent-a \
    --task-lease-idempotency-key lease-d2
  v="$(field "$d/out/claim.json" lease.version)"
  rstep "$d" complete todo complete --goal-id "$GOAL" --todo-id "$id" --agent-id agent-a \
    --task-lease-idempotency-key lease-d2 --task-lease-expected-version "$v" --evidence "done"
  rdecide "$d" sr-d2 agent-a
  # e: deferred successor after its predecessor is done
  rnew e agent-a; d="$W/ref-e"
  radd "$d" predecessor --role agent --text "Predecessor"
  id="$(rid "$d" predecessor)"
  radd "$d" successor --role agent --text "Successor" --status deferred --resume-when "todo_done:$id"
  rstep "$d" claim todo claim --goal-id "$GOAL" --todo-id "$id" --claimed-by agent-a \
    --task-lease-idempotency-key lease-e
  v="$(field "$d/out/claim.json" lease.version)"
  rstep "$d" complete todo complete --goal-id "$GOAL" --todo-id "$id" --agent-id agent-a \
    --task-lease-idempotency-key lease-e --task-lease-expected-version "$v" --evidence "done"
  rdecide "$d" sr-e agent-a
  # f: only blocked todos
  rnew f agent-a; d="$W/ref-f"
  radd "$d" "blocked todo" --role agent --text "Stuck work"
  rstep "$d" block todo update --goal-id "$GOAL" --todo-id "$(rid "$d" "blocked todo")" \
    --agent-id agent-a --status blocked --reason "waiting on a vendor"
  rdecide "$d" sr-f agent-a
  # g1: monitor not due; g2: monitor due (no clock override: two projects)
  rnew g1 agent-a; d="$W/ref-g1"
  radd "$d" monitor --role agent --task-class continuous_monitor --cadence 15m \
    --next-due-at "$(iso '+15 min')" --expires-at "$(iso '+30 days')" --text "Watch CI"
  rdecide "$d" sr-g1 agent-a
  rnew g2 agent-a; d="$W/ref-g2"
  radd "$d" monitor --role agent --task-class continuous_monitor --cadence 15m \
    --next-due-at "$(iso '-1 min')" --expires-at "$(iso '+30 days')" --text "Watch CI"
  rdecide "$d" sr-g2 agent-a
  # h: user_action reminder + a todo
  rnew h agent-a; d="$W/ref-h"
  radd "$d" "todo" --role agent --text "Independent work"
  radd "$d" reminder --role user --task-class user_action --text "Please rotate the deploy key"
  rdecide "$d" sr-h agent-a
}

# ---------------------------------------------------------------- git-loopx
NOW=2026-12-01T10:00:00Z

# glx DIR [NOW] -- ARGS... : one git-loopx process in DIR's repository.
glx() {
  local d="$1" now="$NOW"; shift
  if [ "$1" != -- ]; then now="$1"; shift; fi
  shift
  (cd "$d/repo" && env HOME="$d/home" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
    GIT_AUTHOR_NAME=Compare GIT_AUTHOR_EMAIL=compare@example.com \
    GIT_COMMITTER_NAME=Compare GIT_COMMITTER_EMAIL=compare@example.com \
    GIT_AUTHOR_DATE="$now" GIT_COMMITTER_DATE="$now" TZ=UTC LOOPX_NOW="$now" \
    PATH="$(dirname "$GL"):$PATH" "$GL" --json "$@")
}

# gstep DIR NAME [NOW] -- ARGS... : a git-loopx step; on failure the scenario
# is marked unsupported (DIR/unsupported names the step) and later steps skip.
gstep() {
  local d="$1" name="$2"; shift 2
  [ ! -e "$d/unsupported" ] || return 1
  local rc=0
  glx "$d" "$@" >"$d/out/$name.json" 2>"$d/out/$name.err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    { printf '%s (exit %s): ' "$name" "$rc"; cat "$d/out/$name.json" "$d/out/$name.err" \
        | tr '\n' ' ' | head -c 240; echo; } >"$d/unsupported"
    return 1
  fi
}

gnew() {
  local d="$W/gl-$1"; shift
  mkdir -p "$d/home" "$d/repo" "$d/out"
  : >"$d/roles"
  (cd "$d/repo" && git init -q -b main . \
    && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=Compare \
      -c user.email=compare@example.com commit -q --allow-empty -m "first commit") \
    || die "git init failed in $d"
  gstep "$d" init -- init --objective "Comparison goal" || return 0
  local a
  for a in "$@"; do gstep "$d" "register-$a" -- agent register "$a" || return 0; done
}

# gadd DIR LABEL KIND ARGS... : KIND is "todo" or "gate"; remembers the id.
gadd() {
  local d="$1" label="$2" kind="$3"; shift 3
  local who=(--agent agent-a)
  [ "$kind" = todo ] || who=()
  gstep "$d" "add-$label" -- "${who[@]}" "$kind" add "$@" || return 1
  local id; id="$(field "$d/out/add-$label.json" "$kind.id")"
  echo "$id $label" >>"$d/roles"
}

gdecide() { gstep "$1" "$2" "${4:-$NOW}" -- --agent "$3" should-run || true; }

gl_scenarios() {
  local d id
  gnew a agent-a; d="$W/gl-a"
  gadd "$d" "independent todo" todo "Independent work"
  gadd "$d" gate gate "Which database?" --global
  gdecide "$d" sr-a agent-a
  gnew b agent-a; d="$W/gl-b"
  gadd "$d" "todo" todo "Some work"
  gadd "$d" gate gate "Which database?"
  gdecide "$d" sr-b agent-a
  gnew c agent-a agent-b; d="$W/gl-c"
  gadd "$d" "other todo" todo "Other work"
  gadd "$d" gate gate "Which database?" --blocks-agent agent-a
  gdecide "$d" sr-c-A agent-a
  gdecide "$d" sr-c-B agent-b
  gnew cu agent-a; d="$W/gl-cu"
  gadd "$d" "held todo" todo "Held work" --priority P1
  gadd "$d" "independent todo" todo "Independent work" --priority P2
  gadd "$d" gate gate "Which database?" --unblocks "$(rid "$d" "held todo")"
  gdecide "$d" sr-cu agent-a
  gnew d agent-a; d="$W/gl-d"
  gdecide "$d" sr-d agent-a
  gnew d2 agent-a; d="$W/gl-d2"
  gadd "$d" "done todo" todo "Only work"
  gstep "$d" claim -- --agent agent-a todo claim "$(rid "$d" "done todo")"
  gstep "$d" done -- --agent agent-a todo done "$(rid "$d" "done todo")" --evidence "done"
  gdecide "$d" sr-d2 agent-a
  gnew e agent-a; d="$W/gl-e"
  gadd "$d" predecessor todo "Predecessor"
  id="$(rid "$d" predecessor)"
  gadd "$d" successor todo "Successor" --resume-when "todo_done:$id"
  gstep "$d" defer -- --agent agent-a todo update "$(rid "$d" successor)" --status deferred
  gstep "$d" claim -- --agent agent-a todo claim "$id"
  gstep "$d" done -- --agent agent-a todo done "$id" --evidence "done"
  gdecide "$d" sr-e agent-a
  gnew f agent-a; d="$W/gl-f"
  gadd "$d" "blocked todo" todo "Stuck work"
  gstep "$d" block -- --agent agent-a todo update "$(rid "$d" "blocked todo")" --status blocked
  gdecide "$d" sr-f agent-a
  # g: one repository, two clocks: polled at NOW (next due NOW+15m), asked
  # at NOW (g1, not due) and at NOW+16m (g2, due).
  gnew g agent-a; d="$W/gl-g"
  gadd "$d" monitor todo "Watch CI" --class continuous_monitor --every 15m \
    --until 2027-01-01T00:00:00Z
  gstep "$d" poll -- --agent agent-a todo poll "$(rid "$d" monitor)" --quiet
  gdecide "$d" sr-g1 agent-a
  gdecide "$d" sr-g2 agent-a 2026-12-01T10:16:00Z
  mkdir -p "$W/gl-g1" "$W/gl-g2"
  for s in g1 g2; do
    cp -r "$d/out" "$d/roles" "$W/gl-$s/"
    [ ! -e "$d/unsupported" ] || cp "$d/unsupported" "$W/gl-$s/"
  done
  gnew h agent-a; d="$W/gl-h"
  gadd "$d" "todo" todo "Independent work"
  gadd "$d" reminder todo "Please rotate the deploy key" --role user --class user_action
  gdecide "$d" sr-h agent-a
}

# ---------------------------------------------------------------- table
# summary SIDE FILE ROLES : six tab-separated values of one decision.
summary() {
  "$PY" - "$@" <<'PY'
import json, sys
side, path, roles_path = sys.argv[1:4]
d = json.load(open(path))
roles = dict(line.split(" ", 1) for line in open(roles_path).read().splitlines() if line)
def get(*keys):
    o = d
    for k in keys:
        o = o.get(k) if isinstance(o, dict) else None
    return o
sel = get("selected_todo")
if side == "ref":
    sid = sel.get("todo_id") if isinstance(sel, dict) else None
    uc = get("interaction_contract", "user_channel", "notify")
    notify = uc == "NOTIFY" or get("notify_user_on_gate") is True
else:
    sid = sel.get("id") if isinstance(sel, dict) else None
    notify = get("notify_user") is True
selected = "none" if not sid else roles.get(sid, sid).strip()
vals = [get("decision"), get("state"), get("effective_action"), selected,
        get("scheduler_hint", "action"), "true" if notify else "false"]
print("\t".join("-" if v is None else str(v) for v in vals))
PY
}

FIELDS=(decision state effective_action selected hint notify)

row() {
  local scen="$1" file="$2"
  local dir="${scen%%/*}"
  [ "$scen" != c/U ] || dir=cu
  local r="$W/ref-$dir" g="$W/gl-$dir"
  local rv gv
  rv="$(summary ref "$r/out/$file.json" "$r/roles")" || die "cannot read $r/out/$file.json"
  if [ -e "$g/unsupported" ] || [ ! -s "$g/out/$file.json" ]; then
    gv="$(printf 'unsupported\t%.0s' 1 2 3 4 5 6)"
  else
    gv="$(summary gl "$g/out/$file.json" "$g/roles" 2>/dev/null)" \
      || gv="$(printf 'unsupported\t%.0s' 1 2 3 4 5 6)"
  fi
  local i rf gf same
  for i in 0 1 2 3 4 5; do
    rf="$(printf '%s' "$rv" | cut -f$((i + 1)))"
    gf="$(printf '%s' "$gv" | cut -f$((i + 1)))"
    if [ "$gf" = unsupported ]; then same="?"
    elif [ "$rf" = "$gf" ]; then same=yes
    else same=no; fi
    printf '%-8s | %-16s | %-36s | %-36s | %s\n' "$scen" "${FIELDS[$i]}" "$rf" "$gf" "$same"
  done
}

echo "reference: $LOOPX_REF_BIN" >&2
echo "git-loopx: $GL" >&2
echo "running the reference scenarios (slow) ..." >&2
ref_scenarios
echo "running the git-loopx scenarios ..." >&2
gl_scenarios

printf '%-8s | %-16s | %-36s | %-36s | %s\n' scenario field "LoopX 2.1.1" git-loopx "same?"
printf '%s\n' "---------+------------------+--------------------------------------+--------------------------------------+------"
row a sr-a
row b sr-b
row c/A sr-c-A
row c/B sr-c-B
row c/U sr-cu
row d sr-d
row d2 sr-d2
row e sr-e
row f sr-f
row g1 sr-g1
row g2 sr-g2
row h sr-h
for d in "$W"/gl-*; do
  [ -e "$d/unsupported" ] || continue
  case "$d" in */gl-g1|*/gl-g2) continue ;; esac
  echo "unsupported in git-loopx (${d##*/gl-}): $(cat "$d/unsupported")"
done | sort -u
