#!/usr/bin/env bash
# Removes each defence the outsider's attacks (crates/node/tests/attacker/)
# are aimed at, one at a time, and runs those tests: each removal must make
# one fail, or the defence is untested. Restores every file it touched,
# also on Ctrl-C. ~1 minute per defence in crates/node, ~3 in crates/core
# (ci profile, 2 cores).
#
#   scripts/mutate-attacker.sh
set -euo pipefail
cd "$(dirname "$0")/.."

files="crates/node/src/link.rs crates/core/src/members/swim.rs crates/node/src/link/admission.rs crates/core/src/c2cfs/locks/protocol.rs crates/core/src/protocol/held.rs crates/core/src/protocol/reader.rs crates/core/src/protocol/roles.rs crates/core/src/c2cfs/exclusive/client.rs crates/core/src/warm/mod.rs crates/core/src/c2cfs/listings/mod.rs"
backup=$(mktemp -d)
for f in $files; do cp "$f" "$backup/$(basename "$f")"; done
restore() { for f in $files; do cp "$backup/$(basename "$f")" "$f"; done; }
trap 'restore; rm -rf "$backup"' EXIT

# name | file | sed expression (each must change the file)
mutations=(
  "hello-id|crates/node/src/link.rs|s/        if node != id \{/        if node != id \&\& false {/"
  "gossip-screen|crates/core/src/members/swim.rs|s/let fit = screened.data.as_deref\(\).unwrap_or\(data\);/let fit = data;/"
  "unauthenticated-cap|crates/node/src/link/admission.rs|s/if s.unauthenticated.len\(\) >= MAX_UNAUTHENTICATED$/if s.unauthenticated.len() >= MAX_UNAUTHENTICATED \&\& false/"
  "links-per-member|crates/node/src/link/admission.rs|s/if entry.queue.len\(\) >= LINKS_PER_MEMBER$/if entry.queue.len() >= LINKS_PER_MEMBER \&\& false/"
  "duplicate|crates/node/src/link/admission.rs|s/\&\& links.listen != listen$/\&\& links.listen != listen \&\& false/"
  "revoked|crates/node/src/link.rs|s/        match revoked.revokes\(chain\) \{/        match revoked.revokes(chain) \&\& false {/"
  "lock-grant-sender|crates/core/src/c2cfs/locks/protocol.rs|s/\.is_some_and\(\|a\| a.to == from \&\& a.phase == Phase::Waiting\);/.is_some_and(|a| a.phase == Phase::Waiting);/"
  "pushed-never-evicts|crates/core/src/protocol/held.rs|s/let refuse = .*; \/\/ rule: pushed-never-evicts$/let refuse = false; \/\/ rule: pushed-never-evicts/"
  "data-early|crates/core/src/protocol/reader.rs|s/let asked = from == source; \/\/ rule: data-early$/let asked = true; \/\/ rule: data-early/"
  "expect|crates/core/src/protocol/roles.rs|/\/\/ rule: expect$/ s/check\((.*), FROM_MANAGER\)/check(true, FROM_MANAGER)/"
  "fetch-origin|crates/core/src/protocol/roles.rs|/\/\/ rule: fetch-origin$/ s/check\((.*), FROM_MANAGER\)/check(true, FROM_MANAGER)/"
  "hash-is|crates/core/src/protocol/roles.rs|/\/\/ rule: hash-is$/ s/check\((.*), FROM_MANAGER\)/check(true, FROM_MANAGER)/"
  "record|crates/core/src/protocol/roles.rs|/\/\/ rule: record$/ s/check\((.*), RECORD\)/check(true, RECORD)/"
  "evict|crates/core/src/protocol/roles.rs|/\/\/ rule: evict$/ s/check\((.*), EVICT\)/check(true, EVICT)/"
  "commit-answer-sender|crates/core/src/c2cfs/exclusive/client.rs|s/^        if ask.to != from \{$/        if ask.to != from \&\& false {/"
  "warm-share|crates/core/src/warm/mod.rs|s/ >= MAX_SERVING_PER_PEER$/ >= usize::MAX/"
  "warm-manager|crates/core/src/warm/mod.rs|s/ else if self.place_of\(\&path\) != self.me \{/ else if false {/"
  "list-answer-sender|crates/core/src/c2cfs/listings/mod.rs|s/^        if ask.to != from \{$/        if ask.to != from \&\& false {/"
  "list-of-dir|crates/core/src/c2cfs/listings/mod.rs|s/Some\(l\) if !l.is_of\(\&dir\) \|\| /Some(l) if /"
)
survived=0
for m in "${mutations[@]}"; do
    IFS='|' read -r name file expr <<<"$m"
    restore
    sed -E -i "$expr" "$file"
    if cmp -s "$file" "$backup/$(basename "$file")"; then
        echo "defence $name: no mutation applied (code changed?)" >&2
        exit 2
    fi
    log="$backup/$name.log"
    if cargo test -q --profile ci -p coopcache-node --test all attacker:: >"$log" 2>&1; then
        echo "defence $name: SURVIVED (no attacker test failed without it)"
        survived=$((survived + 1))
    else
        failed=$(grep -o '^---- [a-z0-9_:]* stdout' "$log" | awk '{print $2}' | tr '\n' ' ' || true)
        echo "defence $name: killed by $failed"
    fi
done
restore
[ "$survived" -eq 0 ]
