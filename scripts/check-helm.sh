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
#      file, as crates/cli/tests/deploy.rs does for the systemd example).
#
#   scripts/check-helm.sh [BINARY]      # default: target/ci/coopcache
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=${HELM_VERSION:-v4.3.2}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
# The Kubernetes version whose API the schemas describe (k8s.io/api v0.37
# is Kubernetes 1.37), given to helm as the cluster's.
KUBE_VERSION=${KUBE_VERSION:-1.37.0}
BIN=${1:-target/ci/coopcache}
CHART=deploy/helm/coopcache

[ -x "$BIN" ] || { echo "check-helm: no coopcache binary at $BIN (build it: cargo build --profile ci -p coopcache)" >&2; exit 1; }
BIN=$(realpath "$BIN")
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

# The version each tool prints, set as their release builds set it (a
# `go install` leaves it empty), so that the check above finds them.
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

tmp=$(mktemp -d)
[ -z "${CHECK_HELM_KEEP:-}" ] || echo "check-helm: keeping $tmp"
[ -n "${CHECK_HELM_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
schemas=$tmp/schemas
(cd scripts/k8s-schemas && go run . "$schemas")
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
    COOPCACHE_NAME=k8s-node-a COOPCACHE_ADVERTISE=10.0.0.1:7170 RUST_LOG= \
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
