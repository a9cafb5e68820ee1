#!/usr/bin/env bash
# Drive the Python reference CLI (loopx 2.1.1) through governed agent turns,
# one CLI process per step, with all state kept under DIR.
#
# Usage (after: eval "$(scripts/install-reference.sh REFDIR)"; export LOOPX_REF_BIN LOOPX_REF_PATH):
#   scripts/reference-turn.sh setup DIR     fresh goal + registered agent + the todo for turn 1
#   scripts/reference-turn.sh turn DIR N    run turn N (N = 1, 2, 3 ... each used once)
#
# A turn is five processes, in this order:
#   should-run  loopx quota should-run --turn-instance-id turn-N --todo-id T   (decision must be "run")
#   claim       loopx todo claim --claimed-by AGENT --task-lease-idempotency-key lease-N
#   complete    loopx todo complete --turn-instance-id turn-N + lease proof    (validation receipt)
#   writeback   loopx refresh-state --turn-instance-id turn-N --todo-id T --agent-vision-json F
#               (durable writeback receipt; the vision packet satisfies the checkpoint)
#   spend       loopx quota spend-slot --source heartbeat --turn-instance-id turn-N --execute
# loopx 2.1.1 refuses to spend a turn-bound slot without the writeback receipt,
# so "complete" in the turn is complete + refresh-state.
# If turn N has no todo yet, one is added first (step "add", not part of the turn).
#
# Periodic review: after 6 settled turns (the maximum cadence loopx allows) the
# guard defers the explicit selection (should-run exits 1, error_code
# quota_action_selection_deferred, reason autonomous_replan). The turn then
# re-enters the guard as loopx prescribes: "replan-guard" (should-run without
# --todo-id, binds the replan obligation) and "replan-select" (should-run with
# --todo-id, binds the todo), and its writeback adds --autonomous-replan-recorded.
# So every 7th turn has two extra should-run processes.
#
# stdout: one line per step: "step=NAME rc=RC seconds=S.SSSSSS"; full JSON of
# each step is kept in DIR/out/turn-N/NAME.json (stderr in NAME.err).
# Exit status is non-zero if any step fails.
#
# Note: loopx starts a background Node "effect runtime" server (idle timeout
# 5 min, LOOPX_EFFECT_RUNTIME_IDLE_MS) under $TMPDIR; TMPDIR is DIR/tmp here, so
# the first command after setup or after 5 idle minutes pays its start-up.
set -euo pipefail

usage() { echo "usage: $0 setup DIR | $0 turn DIR N" >&2; exit 2; }
die() { echo "reference-turn: error: $*" >&2; exit 1; }

[ "$#" -ge 2 ] || usage
MODE="$1"; DIR="$2"
: "${LOOPX_REF_BIN:?set LOOPX_REF_BIN (see scripts/install-reference.sh)}"
: "${LOOPX_REF_PATH:?set LOOPX_REF_PATH (see scripts/install-reference.sh)}"
[ -x "$LOOPX_REF_BIN" ] || die "LOOPX_REF_BIN is not executable: $LOOPX_REF_BIN"

GOAL=bench-goal
AGENT=bench-agent
MARKER=.loopx-reference-turn

# Hermetic environment: no machine-wide loopx state, no telemetry, temp in DIR.
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd -P)"
unset LOOPX_REGISTRY LOOPX_GOAL_ID LOOPX_AGENT_ID LOOPX_PROJECT LOOPX_TURN
export PATH="$LOOPX_REF_PATH:$PATH"
export HOME="$DIR/home"
export LOOPX_RUNTIME_ROOT="$DIR/home/.loopx"
export LOOPX_USAGE_PING=0 DO_NOT_TRACK=1
export TMPDIR="$DIR/tmp"
REGISTRY="$LOOPX_RUNTIME_ROOT/registry.global.json"
PROJECT="$DIR/proj"

# run NAME OUTDIR CMD... : run one CLI process, time it, keep its output.
run() {
  local name="$1" out="$2"; shift 2
  local t0 t1 rc=0
  t0=$EPOCHREALTIME
  "$@" >"$out/$name.json" 2>"$out/$name.err" || rc=$?
  t1=$EPOCHREALTIME
  awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$t1" \
    'BEGIN { printf "step=%s rc=%d seconds=%.6f\n", n, rc, b - a }'
  if [ "$rc" -ne 0 ] && [ "${ALLOW_FAIL:-0}" != 1 ]; then
    echo "reference-turn: step $name failed (rc=$rc); see $out/$name.json and $out/$name.err" >&2
    head -c 600 "$out/$name.json" >&2; echo >&2
    exit 1
  fi
  return "$rc"
}

# json_field FILE KEY : first string value of "KEY":"..." in a compact JSON file.
json_field() { grep -o "\"$2\":\"[^\"]*\"" "$1" | head -n1 | sed 's/.*:"\(.*\)"/\1/'; }

# All commands run inside the project dir. bootstrap takes no --registry (there
# it would name the *project* registry); it writes .loopx/registry.json in the
# project and syncs the global one, which every later command is pointed at.
lx0() { (cd "$PROJECT" && "$LOOPX_REF_BIN" --format json "$@"); }
lx() { lx0 --registry "$REGISTRY" "$@"; }

# add_todo N OUTDIR : add the agent todo for turn N, remember its id.
add_todo() {
  run add "$2" lx todo add --goal-id "$GOAL" --role agent --priority P1 --text "Reference turn $1"
  local id; id="$(json_field "$2/add.json" todo_id)"
  [ -n "$id" ] || die "todo add printed no todo_id"
  echo "$id" >"$DIR/todos/$1"
}

case "$MODE" in
setup)
  [ "$#" -eq 2 ] || usage
  if [ -n "$(ls -A "$DIR")" ] && [ ! -e "$DIR/$MARKER" ]; then
    die "$DIR is not empty and was not made by this script; refusing to wipe it"
  fi
  rm -rf "$DIR/home" "$DIR/proj" "$DIR/tmp" "$DIR/out" "$DIR/todos"
  mkdir -p "$HOME" "$PROJECT" "$TMPDIR" "$DIR/out/setup" "$DIR/todos"
  touch "$DIR/$MARKER"
  # Agent vision packet for every writeback (schema goal_vision_replan_contract_v0).
  cat >"$DIR/vision.json" <<'JSON'
{"schema_version":"goal_vision_replan_contract_v0","state":"vision_patch_proposed",
 "vision_patch":{"acceptance_summary":"Reference turns complete and settle; benchmark work remains."},
 "path_delta":{"outcome":"continue","prior_assumption":"One todo per turn is the route.",
  "observed_reality":"Recent turns settled with writeback and spend receipts.",
  "retained":["One todo per turn"],"evidence_refs":["evidence:reference-turn-settled"]}}
JSON
  out="$DIR/out/setup"
  run bootstrap "$out" lx0 bootstrap --project "$PROJECT" --goal-id "$GOAL" \
    --objective "Reference benchmark goal"
  run register-agent "$out" lx register-agent --goal-id "$GOAL" --agent-id "$AGENT" --execute
  add_todo 1 "$out"
  ;;
turn)
  [ "$#" -eq 3 ] || usage
  N="$3"
  [[ "$N" =~ ^[1-9][0-9]*$ ]] || die "turn number must be a positive integer"
  [ -e "$DIR/$MARKER" ] || die "$DIR was not set up; run: $0 setup $DIR"
  out="$DIR/out/turn-$N"
  [ ! -e "$out/spend.json" ] || die "turn $N already ran in $DIR; use a new N"
  mkdir -p "$out"
  [ -s "$DIR/todos/$N" ] || add_todo "$N" "$out"
  TODO="$(cat "$DIR/todos/$N")"
  TURN="turn-$N"

  SR=(quota should-run --goal-id "$GOAL" --agent-id "$AGENT" --runtime-profile generic_cli
      --turn-instance-id "$TURN")
  REPLAN=()
  if ! ALLOW_FAIL=1 run should-run "$out" lx "${SR[@]}" --todo-id "$TODO"; then
    if grep -q '"error_code":"quota_action_selection_deferred"' "$out/should-run.json" \
       && grep -q '"reason":"autonomous_replan"' "$out/should-run.json"; then
      run replan-guard "$out" lx "${SR[@]}"
      run replan-select "$out" lx "${SR[@]}" --todo-id "$TODO"
      REPLAN=(--autonomous-replan-recorded)
    else
      die "should-run failed: $(json_field "$out/should-run.json" reason)"
    fi
  fi
  last="$out/should-run.json"; [ "${#REPLAN[@]}" -eq 0 ] || last="$out/replan-select.json"
  grep -q '"should_run":true' "$last" \
    || die "should-run did not decide to run: $(json_field "$last" reason)"

  run claim "$out" lx todo claim --goal-id "$GOAL" --todo-id "$TODO" \
    --claimed-by "$AGENT" --task-lease-idempotency-key "lease-$N"
  # The completion must present the lease version the claim produced.
  LEASE_VERSION="$(grep -o '"lease":{[^}]*}' "$out/claim.json" | head -n1 \
    | grep -o '"version":[0-9]*' | cut -d: -f2)"
  [ -n "$LEASE_VERSION" ] || die "claim printed no lease version"

  run complete "$out" lx todo complete --goal-id "$GOAL" --todo-id "$TODO" \
    --agent-id "$AGENT" --turn-instance-id "$TURN" \
    --task-lease-idempotency-key "lease-$N" --task-lease-expected-version "$LEASE_VERSION" \
    --evidence "reference turn $N validated"

  run writeback "$out" lx refresh-state --goal-id "$GOAL" --agent-id "$AGENT" \
    --classification validated_progress --delivery-batch-scale implementation \
    --delivery-outcome outcome_progress --todo-id "$TODO" --turn-instance-id "$TURN" \
    --agent-vision-json "$DIR/vision.json" "${REPLAN[@]}"

  run spend "$out" lx quota spend-slot --goal-id "$GOAL" --agent-id "$AGENT" \
    --slots 1 --source heartbeat --execute --todo-id "$TODO" --turn-instance-id "$TURN"
  grep -q '"appended":true' "$out/spend.json" || die "spend-slot appended no spend event"
  ;;
*) usage ;;
esac
