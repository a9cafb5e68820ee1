#!/usr/bin/env bash
# One agent's full turn with nothing but `git loopx` calls, in a scratch
# repository: register, ask should-run, claim, do bounded work, write back
# the evidence, complete it (its validate command runs first) with a
# successor, spend the turn's quota, and show the resulting state. Needs `git-loopx` on PATH.
set -euo pipefail
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
cd "$repo"
git init -q -b main
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.com
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.com
git commit -q --allow-empty -m "first commit"
export LOOPX_AGENT=agent-a

git loopx init --objective "Ship the YAML parser"
git loopx agent register agent-a --runtime generic
git loopx todo add "Write the tokenizer" --priority P1 --validate "test -f tokenizer.txt"

turn=turn-1
# 1. Should this turn run, and on what? (records a turn receipt for the key)
git loopx should-run --turn "$turn"
todo=$(git loopx --json should-run --turn "$turn" | sed -n 's/.*"selected_todo":{"id":"\(todo_[0-9a-f]*\)".*/\1/p')
echo "turn works on $todo"
git loopx todo claim "$todo"

# 2. Bounded work, committed to the code branch as usual.
echo "tokens" > tokenizer.txt
git add tokenizer.txt
git commit -q -m "Add the tokenizer"
sha=$(git rev-parse HEAD)

# 3. Write back what was delivered, with the code commit as the artifact.
git loopx writeback --todo "$todo" --turn "$turn" --outcome outcome_progress \
  --summary "tokenizer committed" --artifact "$sha" --next-action "write the parser"

# 4. Complete it: `validate` runs without a shell and must pass.
git loopx todo done "$todo" --evidence "commit $sha" --next "Write the parser"

# 5. Spend one slot of the quota for the turn's accountable writeback.
git loopx quota spend --turn "$turn"

git loopx status
git loopx log
