#!/usr/bin/env bash
# The Helm chart (deploy/helm/coopcache), checked offline:
#
#   1. helm and kubeconform, `go install`ed at pinned versions where
#      missing (into $GOPATH/bin, as MinIO is); kubeconform's Kubernetes
#      schemas made from the k8s.io/api Go types (scripts/k8s-schemas),
#      since its default source, GitHub, is out of reach here;
#   2. `helm lint --strict` on the default values and on each file of
#      deploy/helm/coopcache/ci/ (mount, disk, anonymous gateway...);
#   3. `helm template` of each, validated by kubeconform -strict (unknown
#      fields and wrong types refused);
#   4. the coopcache.toml each renders into its ConfigMap, through
#      `coopcache node --check-config` (the pod's paths, which do not
#      exist here, swapped for temporary ones by flags, which win over the
#      file, as crates/cli/tests/deploy.rs does for the systemd example);
#   5. the default rendering run as two pods would run it (below).
#
#   scripts/check-helm.sh [BINARY]      # default: target/ci/coopcache
#   scripts/check-helm.sh --install     # step 1 alone (.ci/run, in the background)
#
# Cold (empty Go module and build caches), step 1 builds helm from source
# in 5 minutes on this machine's 2 cores at nice 19 while cargo builds
# (291 s measured), kubeconform in 7 s and the schema maker in 30-60 s;
# warm, the whole check takes 3 s.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=${HELM_VERSION:-v4.3.2}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
# The Kubernetes version whose API the schemas describe (k8s.io/api v0.37
# is Kubernetes 1.37), given to helm as the cluster's.
KUBE_VERSION=${KUBE_VERSION:-1.37.0}
BIN=${1:-target/ci/coopcache}
CHART=deploy/helm/coopcache
gobin=${GOBIN:-${GOPATH:-$HOME/go}/bin}

tool() { # NAME MODULE VERSION: the tool, installed if missing or of another version
    local name=$1 module=$2 version=$3 path=$gobin/$1 have=""
    if [ -x "$path" ]; then
        case $name in
            helm) have=$("$path" version --template '{{.Version}}' 2>/dev/null || true) ;;
            kubeconform) have=$("$path" -v 2>/dev/null || true) ;;
        esac
    fi
    if [ "$have" != "$version" ] && [ "$have" != "${version#v}" ]; then
        command -v go >/dev/null || { echo "check-helm: needs Go for go install $module" >&2; exit 1; }
        local start=$SECONDS
        GOBIN=$gobin go install -ldflags "$(ldflags "$name" "$version")" "$module@$version" >&2
        echo "check-helm: go install $module@$version: $((SECONDS - start)) s" >&2
    fi
    echo "$path"
}

# The version each tool prints, set as their release builds set it (built
# by `go install`, helm says v4.3 and kubeconform development), so that
# the check above finds them.
ldflags() {
    case $1 in
        helm) echo "-X helm.sh/helm/v4/internal/version.version=$2" ;;
        kubeconform) echo "-X main.version=$2" ;;
    esac
}

start=$SECONDS
helm=$(tool helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION")
kubeconform=$(tool kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION")
echo "helm $("$helm" version --template '{{.Version}}'), kubeconform $("$kubeconform" -v)"
# The schema maker, built (from Go's build cache once it has been).
mkdir -p target
(cd scripts/k8s-schemas && go build -buildvcs=false -o ../../target/k8s-schemas .)
if [ "$BIN" = --install ]; then
    echo "check-helm: tools ready in $((SECONDS - start)) s"
    exit 0
fi

[ -x "$BIN" ] || { echo "check-helm: no coopcache binary at $BIN (build it: cargo build --profile ci -p coopcache)" >&2; exit 1; }
BIN=$(realpath "$BIN")
tmp=$(mktemp -d)
[ -z "${CHECK_HELM_KEEP:-}" ] || echo "check-helm: keeping $tmp"
[ -n "${CHECK_HELM_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
schemas=$tmp/schemas
target/k8s-schemas "$schemas"
echo "tools and schemas ready in $((SECONDS - start)) s"

# A node's keys as the Secret holds them, for a Kubernetes node named
# k8s-node-a, and a gateway token file.
"$BIN" cluster init --dir "$tmp/keys" --nodes k8s-node-a >/dev/null
rm "$tmp/keys/ca.key"
mkdir "$tmp/origin"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"

# The ConfigMap's coopcache.toml, from `helm template` output on stdin.
extract_toml() {
    awk '
        /^kind: ConfigMap/ { cm = 1 }
        /^---/ { cm = 0; inside = 0 }
        cm && /^  coopcache.toml: \|/ { inside = 1; next }
        inside && /^    / { print substr($0, 5); next }
        inside && /^$/ { print ""; next }
        inside { inside = 0 }
    '
}

check() { # NAME [VALUES FILE]
    local name=$1 values=() out=$tmp/$1
    [ $# -gt 1 ] && values=(--values "$2")
    mkdir -p "$out"
    echo "== $name"
    "$helm" lint --strict "$CHART" "${values[@]}" --kube-version "$KUBE_VERSION"
    "$helm" template coopcache "$CHART" "${values[@]}" --namespace cache \
        --kube-version "$KUBE_VERSION" >"$out/rendered.yaml"
    "$kubeconform" -strict -summary -schema-location "$schemas/{{.ResourceKind}}{{.KindSuffix}}.json" \
        "$out/rendered.yaml"
    extract_toml <"$out/rendered.yaml" >"$out/coopcache.toml"
    grep -q '^data_dir = ' "$out/coopcache.toml" || { echo "no coopcache.toml in the ConfigMap" >&2; exit 1; }
    # The pod's paths, swapped for this machine's: flags win over the file.
    local flags=(--origin "$tmp/origin" --data-dir "$tmp/keys")
    grep -q '^http_token_file = ' "$out/coopcache.toml" && flags+=(--http-token-file "$tmp/token")
    grep -q '^mount = ' "$out/coopcache.toml" && mkdir -p "$out/mnt" && flags+=(--mount "$out/mnt")
    grep -q '^disk = ' "$out/coopcache.toml" && flags+=(--disk "$out/disk")
    # The pod's environment: its node's name and its own address.
    env -u RUST_LOG COOPCACHE_NAME=k8s-node-a COOPCACHE_ADVERTISE=10.0.0.1:7170 \
        "$BIN" node --config "$out/coopcache.toml" --check-config "${flags[@]}" >"$out/check.txt" || {
        cat "$out/coopcache.toml" "$out/check.txt" >&2
        exit 1
    }
    grep -q "configuration ok" "$out/check.txt" || { cat "$out/check.txt" >&2; exit 1; }
    echo "coopcache node --check-config: ok ($(grep -c ' = ' "$out/coopcache.toml") keys)"
}

check default
for values in "$CHART"/ci/*.yaml; do
    check "$(basename "$values" .yaml)" "$values"
done

# 5. The default rendering run as its pods run it: two nodes, each as the
# unprivileged runAsUser (when this runs as root), reading its keys from a
# directory laid out as a Secret volume is (files behind a ..data symlink,
# mode 0440, group fsGroup, nothing writable), its name and address from
# the environment, joining through a host name (the headless Service's
# stands for every pod; here `localhost` names the first node, which thus
# also dials itself, as a pod does when its Service name resolves to its
# own address first). The probes' command passes on both, the first lists
# both members, and SIGTERM stops each with exit 0 within the pod's grace
# period.
echo "== the default rendering, run as its pods"
uid=65532
secret=$tmp/secret
mkdir -p "$secret/..2026_01_01_00_00_00.0"
"$BIN" cluster init --dir "$tmp/pair" --nodes k8s-node-a,k8s-node-b >/dev/null
for f in ca.pem k8s-node-a.pem k8s-node-a.key k8s-node-b.pem k8s-node-b.key; do
    cp "$tmp/pair/$f" "$secret/..2026_01_01_00_00_00.0/$f"
    ln -s "..data/$f" "$secret/$f"
done
ln -s ..2026_01_01_00_00_00.0 "$secret/..data"
chmod 0440 "$secret"/..2026*/*
chmod 0555 "$secret"/..2026* "$secret"
chmod 0755 "$tmp"
chmod 0440 "$tmp/token"
as_pod=()
if [ "$(id -u)" = 0 ]; then
    chgrp -R "$uid" "$secret"/..2026* "$tmp/token"
    as_pod=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --)
fi
port() { echo $((20000 + RANDOM % 20000)); }
pa=$(port) ha=$(port) pb=$(port) hb=$(port)
pids=()
run_pod() { # NAME PEERS HTTP: a node in the background, its log in $tmp/NAME.log
    env -u RUST_LOG COOPCACHE_NAME=$1 COOPCACHE_ADVERTISE=127.0.0.1:$2 "${as_pod[@]}" "$BIN" node \
        --config "$tmp/default/coopcache.toml" --origin "$tmp/origin" --data-dir "$secret" \
        --http-token-file "$tmp/token" --memory 64MiB \
        --listen "127.0.0.1:$2" --http "127.0.0.1:$3" --join "localhost:$pa" >"$tmp/$1.log" 2>&1 &
    pids+=($!)
}
stop_pods() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
}
trap 'stop_pods; [ -n "${CHECK_HELM_KEEP:-}" ] || rm -rf "$tmp"' EXIT
run_pod k8s-node-a "$pa" "$ha"
run_pod k8s-node-b "$pb" "$hb"
probe() { "$BIN" status --node "127.0.0.1:$1" --token-file "$tmp/token" "${@:2}"; }
for _ in $(seq 100); do
    probe "$ha" --json 2>/dev/null | grep -q '"name": "k8s-node-b"' && break
    sleep 0.2
done
probe "$ha" >"$tmp/status-a.txt" || { cat "$tmp"/k8s-node-*.log >&2; exit 1; }
probe "$hb" >/dev/null || { cat "$tmp"/k8s-node-*.log >&2; exit 1; }
grep -q '^members (2)' "$tmp/status-a.txt" || { cat "$tmp/status-a.txt" "$tmp"/k8s-node-*.log >&2; exit 1; }
grace=$(awk '/^terminationGracePeriodSeconds:/ { print $2 }' "$CHART/values.yaml")
for pid in "${pids[@]}"; do
    kill -TERM "$pid"
    for _ in $(seq $((grace * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "check-helm: a node still runs $grace s after SIGTERM" >&2
        exit 1
    fi
    wait "$pid" || { echo "check-helm: a node exited $? on SIGTERM" >&2; cat "$tmp"/k8s-node-*.log >&2; exit 1; }
done
pids=()
echo "two pods joined through a host name, probes passed, SIGTERM stopped both"

# The memory limit is derived as coopcache.service's MemoryMax is: the
# same figure for the example's budget.
unit_max=$(sed -n 's/^MemoryMax=\([0-9]*\)M$/\1/p' deploy/coopcache.service)
chart_max=$("$helm" template coopcache "$CHART" --set config.memory=2GiB |
    sed -n 's/^ *memory: \([0-9]*\)Mi$/\1/p' | head -n 1)
if [ -z "$unit_max" ] || [ "$unit_max" != "$chart_max" ]; then
    echo "check-helm: a 2GiB budget gives a limit of ${chart_max}Mi, coopcache.service MemoryMax=${unit_max}M" >&2
    exit 1
fi

# The schema refuses what the daemon would (a budget it cannot read), and
# the validator sees a misspelt field: neither passes on anything.
if "$helm" template coopcache "$CHART" --set config.memory=lots >/dev/null 2>&1; then
    echo "check-helm: config.memory=lots rendered" >&2
    exit 1
fi
sed 's/^      containers:/      containrs:/' "$tmp/default/rendered.yaml" >"$tmp/misspelt.yaml"
if "$kubeconform" -strict -schema-location "$schemas/{{.ResourceKind}}{{.KindSuffix}}.json" "$tmp/misspelt.yaml" >/dev/null; then
    echo "check-helm: kubeconform passed a misspelt field" >&2
    exit 1
fi
echo "check-helm: ok in $((SECONDS - start)) s"
