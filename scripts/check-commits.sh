#!/usr/bin/env bash
# Checks that commit subjects are at most 72 characters, the detail in the body, so that
# `git log --oneline` reads as a history.
#
# The history up to BASELINE keeps its long subjects: only the commits BASELINE does not
# contain are checked (those on top of it, and any merged in later). Merge commits are
# not: git and CI write their subjects (a pull request's checkout is a merge named
# `Merge <sha> into <sha>`, which a shallow clone shows without its parents).
#
# A shallow clone may not have BASELINE. Then every commit it has is newer than
# BASELINE (it would have BASELINE otherwise), so those are checked, and a note says how
# many; `git fetch --unshallow` (or `fetch-depth: 0` in CI) checks the whole range. In a
# full clone a missing BASELINE is an error: the history was rewritten.
#
# Usage:
#   scripts/check-commits.sh                  every commit after BASELINE up to HEAD
#   scripts/check-commits.sh REV              ... up to REV
#   scripts/check-commits.sh --message FILE   one commit message (the commit-msg hook)
#
# To check each commit as it is made: git config core.hooksPath scripts/hooks
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
# Characters, not bytes, whatever the caller's locale.
export LC_ALL=C.UTF-8

MAX=72
# The last commit with a long subject (209fcce, "store-sqlite: a value that does not
# decode is Corrupt on SQLite's write paths too ..."); everything after it is checked.
BASELINE=209fcce7dce7cee4b7c993d4755d16e0cd1fe7ca

too_long() {
    local subject=$1
    ((${#subject} > MAX))
}

if [[ ${1:-} == --message ]]; then
    file=${2:?usage: scripts/check-commits.sh --message FILE}
    # Git's subject: the first paragraph, comment lines left out, lines joined by spaces.
    subject=$(awk '/^#/ { next } NF == 0 { if (seen) exit; next } { printf "%s%s", (seen ? " " : ""), $0; seen = 1 }' "$file")
    if too_long "$subject"; then
        echo "check-commits: the subject is ${#subject} characters, at most $MAX: say what changed in a short line, the detail in the body (after a blank line)" >&2
        echo "  $subject" >&2
        exit 1
    fi
    exit 0
fi

head=${1:-HEAD}
if git cat-file -e "$BASELINE^{commit}" 2>/dev/null; then
    range=("$BASELINE..$head")
    scope="after ${BASELINE:0:7}"
elif [[ $(git rev-parse --is-shallow-repository) == true ]]; then
    range=("$head")
    scope="in this shallow clone"
    echo "check-commits: this shallow clone lacks the baseline ${BASELINE:0:7}, so every commit it has is newer: checking those (git fetch --unshallow checks all)"
else
    echo "check-commits: the baseline $BASELINE is not in this repository's history: was it rewritten? Name the new baseline in $0" >&2
    exit 1
fi

problems=0
count=0
while IFS= read -r -d '' entry; do
    commit=${entry%%$'\t'*}
    subject=${entry#*$'\t'}
    if [[ $subject =~ ^Merge\ [0-9a-f]{40}\ into\ [0-9a-f]{40}$ ]]; then
        continue
    fi
    count=$((count + 1))
    if too_long "$subject"; then
        echo "check-commits: ${commit:0:12} has a subject of ${#subject} characters, at most $MAX: $subject" >&2
        problems=$((problems + 1))
    fi
done < <(git log -z --no-merges --format='%H%x09%s' "${range[@]}")

if ((problems > 0)); then
    echo "check-commits: $problems commit subject(s) over $MAX characters; reword them (git rebase -i) before they land" >&2
    exit 1
fi
echo "check-commits: $count commit subject(s) $scope are at most $MAX characters"
