#!/usr/bin/env bash
# Build the e2e tier's control plane binaries from the pinned Go modules beside this script.
#
#   e2e/cluster/build.sh [component ...]     (default: all of them)
#
# Binaries go to ${JOBSYNC_E2E_BIN:-$HOME/.cache/jobsync-e2e/bin}, outside the repository. Each gets a stamp
# (hash of its module's go.mod and go.sum, the Go version and the build flags) in .stamps/; a binary whose stamp
# matches is not built again, so a warm run takes a second. GOMODCACHE and GOCACHE are Go's defaults unless set.
#
# Kueue, JobSet and Trainer v2 also need their CRDs and webhook configurations: kustomize (built here too) renders
# them from each module's own kustomizations in the module cache into $bin/manifests/<name>.yaml, stamped the same
# way; e2e/controllers.py points their webhooks at the processes the tests start.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${JOBSYNC_E2E_BIN:-$HOME/.cache/jobsync-e2e/bin}"
mkdir -p "$bin/.stamps"

export CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

command -v go >/dev/null || { echo "build.sh: needs Go (1.26 or newer: helm's and Kueue's modules ask for it) on PATH" >&2; exit 1; }

# version MODULE_DIR MODULE: the version the module at MODULE_DIR pins MODULE at.
version() { (cd "$here/$1" && go list -m -f '{{.Version}}' "$2"); }

# build NAME MODULE_DIR PACKAGE LDFLAGS
build() {
  local name="$1" dir="$2" pkg="$3" ldflags="$4" stamp started partial lock
  stamp="$(cat "$here/$dir/go.mod" "$here/$dir/go.sum" <(go version) <(echo "$pkg $ldflags -trimpath") | sha256sum | cut -c1-16)"
  # Two checkouts on one machine may build at once: one builds each binary while the other waits on its lock,
  # then finds it up to date. The lock is released when its file descriptor closes, with this function.
  exec {lock}>"$bin/.stamps/$name.lock"
  flock "$lock"
  if [[ -x "$bin/$name" && "$(cat "$bin/.stamps/$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "$name: up to date ($bin/$name)"
    exec {lock}>&-
    return
  fi
  started=$(date +%s)
  partial="$(mktemp "$bin/.$name.XXXXXX")"  # never another process's file, even without flock
  (cd "$here/$dir" && go build -trimpath -ldflags "$ldflags" -o "$partial" "$pkg") || { rm -f "$partial"; exit 1; }
  mv -f "$partial" "$bin/$name"  # a rename: a reader sees the old binary or the new one, never half of one
  echo "$stamp" > "$bin/.stamps/$name.new" && mv -f "$bin/.stamps/$name.new" "$bin/.stamps/$name"
  echo "$name: built in $(( $(date +%s) - started ))s ($bin/$name)"
  exec {lock}>&-
}

# render NAME MODULE_DIR MODULE KUSTOMIZATION...: kustomize build of each folder of MODULE (as MODULE_DIR pins it)
render() {
  local name="$1" dir="$2" module="$3" stamp lock root partial path
  shift 3
  stamp="$(cat "$here/$dir/go.mod" "$here/$dir/go.sum" "$bin/.stamps/kustomize" <(echo "$module $*") | sha256sum | cut -c1-16)"
  mkdir -p "$bin/manifests"
  exec {lock}>"$bin/.stamps/manifests-$name.lock"
  flock "$lock"
  if [[ -s "$bin/manifests/$name.yaml" && "$(cat "$bin/.stamps/manifests-$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "manifests/$name.yaml: up to date"
    exec {lock}>&-
    return
  fi
  root="$(cd "$here/$dir" && go mod download -json "$module" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$root" ]] || { echo "build.sh: no module folder for $module" >&2; exit 1; }
  partial="$(mktemp "$bin/manifests/.$name.XXXXXX")"
  for path in "$@"; do
    { echo "# kustomize build $module/$path"; "$bin/kustomize" build "$root/$path"; echo "---"; } >> "$partial" \
      || { rm -f "$partial"; exit 1; }
  done
  mv -f "$partial" "$bin/manifests/$name.yaml"
  echo "$stamp" > "$bin/.stamps/manifests-$name.new" && mv -f "$bin/.stamps/manifests-$name.new" "$bin/.stamps/manifests-$name"
  echo "manifests/$name.yaml: rendered"
  exec {lock}>&-
}

# version_ldflags MODULE_DIR MODULE VERSION_PACKAGE: -X its GitVersion (and GitCommit, unknown from the proxy)
version_ldflags() {
  local v
  v="$(version "$1" "$2")"
  echo "-s -w -X $3.GitVersion=$v -X $3.GitCommit=$v"
}

build_kustomize() {
  build kustomize kustomize sigs.k8s.io/kustomize/kustomize/v5 \
    "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=$(version kustomize sigs.k8s.io/kustomize/kustomize/v5)"
}

kube_ldflags() {
  local v minor
  v="$(version kubernetes k8s.io/kubernetes)"   # v1.34.4
  minor="${v#v1.}"; minor="${minor%%.*}"
  local flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "$flags"
}

# What helm's own Makefile sets: its version, and the Kubernetes version `helm template` and `helm lint` assume
# (from the client-go it is built with; without it, v1.20).
helm_ldflags() {
  local v client minor flags="-s -w"
  v="$(version helm helm.sh/helm/v3)"
  client="$(version helm k8s.io/client-go)"   # v0.37.0
  minor="${client#v0.}"; minor="${minor%%.*}"
  flags+=" -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  echo "$flags"
}

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok training-operator helm
  kustomize kueue jobset-controller trainer-controller-manager)

for component in "${want[@]}"; do
  case "$component" in
    etcd) build etcd etcd go.etcd.io/etcd/server/v3 "-s -w" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler)
      build "$component" kubernetes "k8s.io/kubernetes/cmd/$component" "$(kube_ldflags)" ;;
    kwok) build kwok kwok sigs.k8s.io/kwok/cmd/kwok "-s -w" ;;
    training-operator)
      build training-operator training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 "-s -w" ;;
    helm) build helm helm helm.sh/helm/v3/cmd/helm "$(helm_ldflags)" ;;
    kustomize) build_kustomize ;;
    kueue)
      build kueue kueue sigs.k8s.io/kueue/cmd/kueue "$(version_ldflags kueue sigs.k8s.io/kueue sigs.k8s.io/kueue/pkg/version)"
      build_kustomize
      render kueue kueue sigs.k8s.io/kueue config/default ;;
    jobset-controller)
      # JobSet's main package is its module's root; go install of it fails on the proxy's version list, this
      # module (which requires it, pinned) builds it as it does kubernetes.
      build jobset-controller jobset sigs.k8s.io/jobset \
        "$(version_ldflags jobset sigs.k8s.io/jobset sigs.k8s.io/jobset/pkg/version)"
      build_kustomize
      render jobset jobset sigs.k8s.io/jobset config/default ;;
    trainer-controller-manager)
      # Trainer v2 keeps no version string in its binary: the pinned module is its version.
      build trainer-controller-manager trainer github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "-s -w"
      build_kustomize
      # Not overlays/manager: it fetches JobSet's release manifests from the internet.
      render trainer trainer github.com/kubeflow/trainer/v2 manifests/base/crds manifests/base/webhook \
        manifests/overlays/runtimes ;;
    *) echo "build.sh: unknown component $component" >&2; exit 2 ;;
  esac
done
