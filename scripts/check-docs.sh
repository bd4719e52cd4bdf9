#!/usr/bin/env bash
# Checks that every document the repository cites is in the repository:
#
# - every `docs/NAME.md` (optionally `#anchor`) named in source, SQL, TOML, HTML,
#   shell and Markdown files exists, and so does its anchor;
# - every relative Markdown link inside docs/ (`(quotas.md#reservations)`) resolves;
# - nothing cites the team's old out-of-tree documents (`SPEC §…`, `platform-apis.md`).
#
# Anchors are GitHub's: a heading lowercased, everything but letters, digits, spaces,
# `-` and `_` dropped, spaces turned into `-`.
#
# Usage: scripts/check-docs.sh   (from anywhere in the repository; exit 1 on a problem)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

problems=0
fail() {
    echo "check-docs: $*" >&2
    problems=$((problems + 1))
}

# The anchors of a Markdown file, one per line (duplicates get -1, -2, ... as on GitHub).
anchors() {
    awk '
        /^```/ { fence = !fence; next }
        fence { next }
        /^#+ / {
            h = $0
            sub(/^#+ /, "", h)
            h = tolower(h)
            gsub(/[^a-z0-9 _-]/, "", h)
            gsub(/ /, "-", h)
            if (h in seen) { seen[h]++; print h "-" seen[h] } else { seen[h] = 0; print h }
        }
    ' "$1"
}

check_target() {
    local from=$1 path=$2 anchor=$3
    if [[ ! -f $path ]]; then
        fail "$from cites $path, which does not exist"
        return
    fi
    if [[ -n $anchor ]] && ! anchors "$path" | grep -qxF -- "$anchor"; then
        fail "$from cites $path#$anchor, which has no such heading"
    fi
}

files=$(git ls-files -- '*.rs' '*.md' '*.sql' '*.toml' '*.html' '*.sh' '*.yml' '*.service' ':!scripts/check-docs.sh')

# 1. `docs/NAME.md[#anchor]` anywhere.
while IFS= read -r hit; do
    [[ -z $hit ]] && continue
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    ref=${rest#*:}
    anchor=""
    [[ $ref == *#* ]] && anchor=${ref#*#}
    check_target "$file:$line" "${ref%%#*}" "$anchor"
done < <(grep -noE 'docs/[A-Za-z0-9_-]+\.md(#[a-z0-9_-]+)?' $files || true)

# 2. Relative links between documents in docs/.
for doc in docs/*.md; do
    while IFS= read -r hit; do
        [[ -z $hit ]] && continue
        line=${hit%%:*}
        ref=${hit#*:}
        ref=${ref#(}
        ref=${ref%)}
        # Only links to documents (`name.md`, `name.md#anchor`, `#anchor`); `[x](URL)`
        # inside code examples is not a link.
        [[ $ref =~ ^([A-Za-z0-9_-]+\.md)?(#[a-z0-9_-]+)?$ && -n $ref ]] || continue
        target=${ref%%#*}
        anchor=""
        [[ $ref == *#* ]] && anchor=${ref#*#}
        if [[ -z $target ]]; then
            target=${doc#docs/}
        fi
        check_target "$doc:$line" "docs/$target" "$anchor"
    done < <(grep -noE '\]\([^)]+\)' "$doc" | sed -E 's/^([0-9]+):\]/\1:/' || true)
done

# 3. No citation of documents outside the repository. (The first migrations keep their
# wording: a landed migration is never edited, its checksum is in every ledger.)
while IFS= read -r hit; do
    [[ -z $hit ]] && continue
    fail "cites a document outside the repository: $hit"
done < <(grep -nE 'SPEC §|SPEC section|SPEC table|platform-apis' $files \
    | grep -vE '^crates/store-(sqlite|postgres)/migrations/0001_ledger\.sql:' || true)

if ((problems > 0)); then
    echo "check-docs: $problems problem(s)" >&2
    exit 1
fi
echo "check-docs: every cited document and anchor exists"
