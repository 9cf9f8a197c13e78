#!/usr/bin/env bash
# The OpenAPI document held to the server that serves it: schemathesis,
# every check on, against a fresh `wasmco serve` whose store holds one of
# each resource (on a virtual cluster), so the generated requests reach the
# handlers behind the paths, not only 404s. Zero failures, or it fails.
#
#   bash tests/api/schemathesis.sh            # builds wasmco, runs it all
#   WASMCO_BIN=path/to/wasmco bash tests/api/schemathesis.sh
#
# schemathesis is pinned and installed from PyPI into ~/.cache.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=4.32.5
venv="${XDG_CACHE_HOME:-$HOME/.cache}/wasmco-schemathesis/$version"
if [ ! -x "$venv/bin/schemathesis" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "schemathesis==$version" >&2
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/wasmco-target}"
if [ -z "${WASMCO_BIN:-}" ]; then
    cargo build -q --locked -p wasmco
    WASMCO_BIN="$CARGO_TARGET_DIR/debug/wasmco"
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The first line a server prints is its address.
first_line() {
    local file=$1
    for _ in $(seq 1 600); do
        if [ -s "$file" ]; then head -n1 "$file"; return; fi
        sleep 0.1
    done
    echo "no address in $file" >&2
    exit 1
}

"$WASMCO_BIN" virtual-cluster --name c1 --kubeconfig "$work/c1.kubeconfig" \
    > "$work/cluster.out" 2> "$work/cluster.log" &
pids+=($!)
first_line "$work/cluster.out" > /dev/null
"$WASMCO_BIN" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
    > "$work/serve.out" 2> "$work/serve.log" &
pids+=($!)
base=$(first_line "$work/serve.out" | sed 's/^wasmco API listening on //')
token=$(cat "$work/data/admin.token")

api() {
    local method=$1 path=$2 body=${3:-}
    local answer
    answer=$(curl -sS -o "$work/answer" -w '%{http_code}' -X "$method" \
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        ${body:+--data "$body"} "$base$path")
    case "$answer" in
        2*) ;;
        *) echo "$method $path: $answer $(cat "$work/answer")" >&2; exit 1 ;;
    esac
}
upload() {
    local path=$1 metadata=$2 file=$3
    local answer
    answer=$(curl -sS -o "$work/answer" -w '%{http_code}' \
        -H "Authorization: Bearer $token" \
        -F "metadata=$metadata" -F "file=@$file" "$base$path")
    case "$answer" in
        2*) ;;
        *) echo "POST $path: $answer $(cat "$work/answer")" >&2; exit 1 ;;
    esac
}
doc() { echo "{\"metadata\": {\"name\": \"$1\"}, \"spec\": ${2:-{\}}}"; }

# One of each resource, named as the parameters below name them.
providers=/v2/cluster-providers
api POST "$providers" "$(doc lab)"
upload "$providers/lab/clusters" "$(doc c1)" "$work/c1.kubeconfig"
cluster="$providers/lab/clusters/c1"
api POST "$cluster/labels" '{"clusterLabel": "edge"}'
api POST "$cluster/kv-pairs" "$(doc kv '{"kv": [{"cpu": "8"}]}')"
api POST "$cluster/networks" "$(doc net '{"cniType": "ovn4nfv", "ipv4Subnets": [{"name": "s", "subnet": "10.10.0.0/16"}]}')"
api POST "$cluster/provider-networks" "$(doc pnet '{"cniType": "ovn4nfv", "ipv4Subnets": [{"name": "s", "subnet": "10.20.0.0/16"}], "providerNetType": "VLAN", "vlan": {"vlanID": "100", "providerInterfaceName": "eth1", "vlanNodeSelector": "any"}}')"
api POST "$providers/lab/tenancy-policies" "$(doc tp '{"namespaces": ["default"]}')"
api POST /v2/projects "$(doc p)"
api POST /v2/projects/p/tenancy-policies "$(doc tp '{"namespaces": ["default"]}')"
api POST /v2/projects/p/composite-apps "$(doc ca '{"compositeAppVersion": "v1"}')"
ca=/v2/projects/p/composite-apps/ca/v1
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {k: v}\n' > "$work/web.yaml"
upload "$ca/apps" "$(doc web)" "$work/web.yaml"
upload "$ca/apps" "$(doc db)" "$work/web.yaml"
api POST "$ca/apps/web/dependency" "$(doc dep '{"app": "db", "opStatus": "Ready"}')"
api POST "$ca/composite-profiles" "$(doc prof)"
printf 'replicas: 1\n' > "$work/values.yaml"
upload "$ca/composite-profiles/prof/profiles" "$(doc pr '{"app": "web"}')" "$work/values.yaml"
api POST "$ca/deployment-intent-groups" "$(doc d '{"compositeProfile": "prof", "version": "r1"}')"
dig="$ca/deployment-intent-groups/d"
api POST "$dig/generic-placement-intents" "$(doc gpi)"
for app in web db; do
    api POST "$dig/generic-placement-intents/gpi/app-intents" \
        "$(doc "$app" "{\"app\": \"$app\", \"intent\": {\"allOf\": [{\"clusterProvider\": \"lab\", \"cluster\": \"c1\"}]}}")"
done
api POST "$dig/controller-intents" "$(doc ci '{"anything": "goes"}')"
api POST "$dig/intents" "$(doc i '{"intent": {"genericPlacementIntent": "gpi"}}')"
api POST /v2/projects/p/logical-clouds "$(doc lc '{"namespace": "lc-ns", "user": {"userName": "lc-user"}}')"
lc=/v2/projects/p/logical-clouds/lc
api POST "$lc/cluster-references" "$(doc c1 '{"clusterProvider": "lab", "cluster": "c1"}')"
api POST "$lc/user-permissions" "$(doc up '{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}')"
api POST "$lc/cluster-quotas" "$(doc q '{"pods": "10"}')"
api POST "$lc/kv-pairs" "$(doc kv '{"kv": [{"team": "a"}]}')"
cert='{"issuerRef": {"name": "mesh", "group": "cert-manager.io"}, "issuingCluster": {"cluster": "c1", "clusterProvider": "lab"}}'
group='{"scope": "name", "cluster": "c1", "clusterProvider": "lab"}'
api POST "$providers/lab/ca-certs" "$(doc cert "$cert")"
api POST "$providers/lab/ca-certs/cert/clusters" "$(doc group "$group")"
api POST /v2/projects/p/ca-certs "$(doc cert "$cert")"
api POST /v2/projects/p/ca-certs/cert/logical-clouds "$(doc lc '{"logicalCloud": "lc"}')"
api POST /v2/projects/p/ca-certs/cert/logical-clouds/lc/clusters "$(doc group "$group")"
api POST /v2/tokens '{"metadata": {"name": "t"}, "spec": {"projects": ["p"], "role": "viewer", "expires": "1h"}}'

parameters=(
    clusterProvider=lab cluster=c1 clusterLabel=edge kvPair=kv network=net
    providerNetwork=pnet tenancyPolicy=tp project=p compositeApp=ca
    compositeAppVersion=v1 app=web dependency=dep compositeProfile=prof profile=pr
    deploymentIntentGroup=d genericPlacementIntent=gpi appIntent=web
    controllerIntent=ci intent=i logicalCloud=lc clusterReference=c1
    userPermission=up clusterQuota=q logicalCloudKv=kv token=t
    caCert=cert caCertClusterGroup=group caCertLogicalCloud=lc
)
config="$work/schemathesis.toml"
{
    cat tests/api/schemathesis.toml
    echo
    echo "[parameters]"
    for pair in "${parameters[@]}"; do
        echo "\"path.${pair%%=*}\" = \"${pair#*=}\""
    done
} > "$config"

# One worker: schemathesis's coverage phase is not safe across several.
"$venv/bin/schemathesis" --config-file "$config" run "$base/v2/openapi.json" \
    -H "Authorization: Bearer $token" --checks all --max-examples 25 --workers 1 \
    --report junit --report-dir "$work/report"
