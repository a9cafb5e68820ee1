#!/usr/bin/env bash
# Build a LoopX 2.1.1 state with the installed reference, for `git loopx import loopx`:
# 2 goals, 10 todos, a user gate, a live claim and 3 quota spends.
#
# Usage (after: eval "$(scripts/install-reference.sh REFDIR)"; export LOOPX_REF_BIN LOOPX_REF_PATH):
#   scripts/reference-import-state.sh DIR
#
# DIR/proj is the LoopX project (with .loopx/), DIR/home/.loopx its runtime root.
# Three governed turns (scripts/reference-turn.sh) make the 3 done todos and the
# 3 spends of goal bench-goal; then more todos, a gate and a claim are added.
# Finally the reference's `quota should-run` decision is kept in DIR/out/decision.json,
# and the ids of the todos in DIR/todos/<name>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd -P)"
DIR="$1"
"$here/reference-turn.sh" setup "$DIR" >/dev/null
for n in 1 2 3; do "$here/reference-turn.sh" turn "$DIR" "$n" >/dev/null; done

DIR="$(cd "$DIR" && pwd -P)"
export PATH="$LOOPX_REF_PATH:$PATH" HOME="$DIR/home" LOOPX_RUNTIME_ROOT="$DIR/home/.loopx"
export LOOPX_USAGE_PING=0 DO_NOT_TRACK=1 TMPDIR="$DIR/tmp"
unset LOOPX_REGISTRY LOOPX_GOAL_ID LOOPX_AGENT_ID LOOPX_PROJECT LOOPX_TURN
REGISTRY="$LOOPX_RUNTIME_ROOT/registry.global.json"
PROJECT="$DIR/proj"
OUT="$DIR/out/import"; mkdir -p "$OUT"
lx() { (cd "$PROJECT" && "$LOOPX_REF_BIN" --format json --registry "$REGISTRY" "$@"); }
id_of() { grep -o '"todo_id":"[^"]*"' "$1" | head -n1 | sed 's/.*:"\(.*\)"/\1/'; }
# add NAME ARGS... : add a todo, keep its id in DIR/todos/NAME.
add() {
  local name="$1"; shift
  lx todo add "$@" >"$OUT/add-$name.json"
  local id; id="$(id_of "$OUT/add-$name.json")"
  [ -n "$id" ] || { echo "todo add $name printed no todo_id" >&2; exit 1; }
  echo "$id" >"$DIR/todos/$name"
}

G=bench-goal
add next     --goal-id $G --role agent --priority P1 --text "Write the import guide"
add later    --goal-id $G --role agent --priority P2 --text "Polish the import report"
add claimed  --goal-id $G --role agent --priority P0 --text "Port the fixture"
add gate     --goal-id $G --role user --task-class user_gate --priority P1 \
  --text "Approve the release" --unblocks-todo-id "$(cat "$DIR/todos/later")"
lx todo claim --goal-id $G --todo-id "$(cat "$DIR/todos/claimed")" --claimed-by bench-agent \
  --task-lease-idempotency-key lease-import >"$OUT/claim.json"

lx0() { (cd "$PROJECT" && "$LOOPX_REF_BIN" --format json "$@"); }
lx0 bootstrap --project "$PROJECT" --goal-id side-goal --objective "Side goal" >"$OUT/bootstrap-side.json"
add side1 --goal-id side-goal --role agent --priority P1 --text "Side task one"
add side2 --goal-id side-goal --role agent --priority P2 --text "Side task two"
add side3 --goal-id side-goal --role user --task-class user_action --priority P3 --text "Check the side results"

lx quota should-run --goal-id $G --agent-id bench-agent --runtime-profile generic_cli \
  >"$DIR/out/decision.json" || true
