#!/usr/bin/env bash
# A tour of git-loopx in a scratch repository: init, add todos, look at the
# state as a reviewer would. Needs `git-loopx` on PATH.
set -euo pipefail
# A scratch repository, deleted at the end: not one for your list of
# repositories (`git loopx repos`).
export LOOPX_NO_REPOS_LIST=1
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
cd "$repo"
git init -q -b main
git -c user.name=demo -c user.email=demo@example.com commit -q --allow-empty -m "first commit"

git loopx init --objective "Ship the YAML parser"
git loopx --agent agent-a todo add "Write the tokenizer" --priority P1
git loopx --agent agent-a todo add "Decide the license" --role user --class user_gate
git loopx status
git loopx log
# The state is an ordinary branch: reviewers read it with plain git.
git log --oneline loopx-state
git ls-tree -r --name-only loopx-state
git status --short   # the working tree was never touched
