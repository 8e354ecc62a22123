# shellcheck shell=bash
# Shared by tests/cluster/run and tests/cluster/testcluster (sourced, not executed).
# Makes sure kube-apiserver, etcd and the testcluster harness are built into the cache
#   ${DISPATCH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-dispatch}/bin
# as kube-apiserver-<k8s.io/kubernetes version>, etcd-<go.etcd.io/etcd/server/v3 version>
# (both read from go.mod) and testcluster-<hash of go.mod, go.sum and the harness sources,
# internal/ included>, then exports what the harness needs: TESTCLUSTER_{KUBE_APISERVER,ETCD,MODULE_DIR,GO,CACHE_DIR}.
# Kueue's own manager (--kueue-manager) is built by the harness itself, per version, from the
# Go module kueue/VERSION (its own module, like proxy/) as kueue-manager-VERSION in the same cache.
# The test proxy (`testcluster proxy`) is its own Go module, proxy/, so that its dependencies
# cannot move a version the kube-apiserver build uses; tc_ensure_proxy_built builds it alone
# as testproxy-<hash of proxy/go.mod, go.sum and *.go> and exports TESTCLUSTER_PROXY.
# The test elector (`testcluster elector`, client-go's leader election on a Lease) is one too,
# elector/, with client-go pinned to k8s.io/kubernetes's version; tc_ensure_elector_built builds
# it as testelector-<hash of elector/go.mod, go.sum and *.go> and exports TESTCLUSTER_ELECTOR.
# The metrics checker (`testcluster metricscheck`, Prometheus' own text parser and linter on
# stdin) is one too, metricscheck/; tc_ensure_metricscheck_built builds it as
# metricscheck-<hash of metricscheck/go.mod, go.sum and *.go> and exports TESTCLUSTER_METRICSCHECK.
# The hostile server (`testcluster hostile`, plain HTTP answers no kube-apiserver gives, and a log
# of the headers it received) is one too, hostile/, standard library only; tc_ensure_hostile_built
# builds it as testhostile-<hash of hostile/go.mod, go.sum and *.go> and exports TESTCLUSTER_HOSTILE.
# The printer checker (`testcluster printcheck`, kubectl's own jsonpath and custom-columns
# printers on a JSON document: the oracle of the plugin's -o jsonpath and -o custom-columns) is
# one too, printcheck/; tc_ensure_printcheck_built builds it as printcheck-<hash> and exports
# TESTCLUSTER_PRINTCHECK.
set -euo pipefail

tc_module_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

tc_die() {
	echo "tests/cluster: $*" >&2
	exit 1
}

# tc_mod_version MODULE: its version on a require line of go.mod.
tc_mod_version() {
	sed -nE "s#^(require)?[[:space:]]*$1[[:space:]]+(v[^[:space:]]+).*#\\2#p" "$tc_module_dir/go.mod" | head -n 1
}

# The flags of every Go build and check of the tests (tc_build_in says why).
tc_go_flags=(-trimpath -gcflags=all=-dwarf=false)

# tc_build DEST DESCRIPTION PACKAGE [GO BUILD FLAGS...]: go build PACKAGE into DEST unless it exists.
tc_build() {
	tc_build_in "$tc_module_dir" "$@"
}

# tc_build_in MODULE_DIR DEST DESCRIPTION PACKAGE [GO BUILD FLAGS...]: tc_build in another module.
# Every Go build and check of the tests compiles with -trimpath and without DWARF debug
# information (tc_go_flags; tools/ensure, scripts/test's vet and go test, the harness's own
# builds pass the same; tests/kueue_modules.rs holds them alike), so they share compiled packages
# in the Go build cache, which keys a package on -trimpath as well as on the compiler's flags.
# Without DWARF: about 13% less compile time
# (client-go from an empty cache: 127 against 147 CPU-s) and shorter links. Stack traces do
# not need it (they come from the symbol and line tables, which stay). The compiler runs with
# GOGC=400 unless GOGC is set, as the cluster's servers do (cmd/testcluster/processes.go,
# clusterGOGC): it collects garbage a quarter as often, for about 16% less compile time
# (client-go from an empty cache: 241 against 286 CPU-s) and a peak of about 0.5 GB a process.
tc_build_in() {
	local dir=$1 dest=$2 what=$3 pkg=$4 log mod
	shift 4
	[[ -x $dest ]] && return 0
	echo "building $what..." >&2
	log=$(mktemp)
	if ! (cd "$dir" && GOGC=${GOGC:-400} "$TESTCLUSTER_GO" build -buildvcs=false "${tc_go_flags[@]}" "$@" -o "$dest.tmp.$$" "$pkg") >"$log" 2>&1; then
		rm -f "$dest.tmp.$$"
		# Name the module that could not be fetched, if that is what went wrong.
		mod=$(grep -oE '[A-Za-z0-9.-]+\.[a-z]+/[^ :@"]+@v[^ :"]+' "$log" | head -n 1 || true)
		if [[ -n $mod ]] && grep -qiE 'proxy|dial|lookup|download|fetch|GOPROXY|GOFLAGS|missing go.sum|not found|verifying' "$log"; then
			echo "tests/cluster: cannot fetch Go module $mod (GOPROXY=$("$TESTCLUSTER_GO" env GOPROXY)):" >&2
		else
			echo "tests/cluster: go build $pkg failed:" >&2
		fi
		tail -n 15 "$log" | sed 's/^/  /' >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	mv -f "$dest.tmp.$$" "$dest"
}

tc_find_go() {
	TESTCLUSTER_GO=$(command -v go || echo /usr/local/go/bin/go)
	[[ -x $TESTCLUSTER_GO ]] || tc_die "no go toolchain (not on PATH, not /usr/local/go/bin/go)"
}

# Keeps the six newest builds of one harness binary (checkouts of different commits or branches
# on one machine share the cache, so the one just built is not the only one still in use).
tc_prune() {
	local cache=$1 prefix=$2
	find "$cache" -maxdepth 1 -name "$prefix-*" ! -name '*.tmp.*' -printf '%T@ %p\n' |
		sort -rn | tail -n +7 | cut -d' ' -f2- | xargs -r rm -f --
}

tc_cache_dir() {
	echo "${DISPATCH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-dispatch}/bin"
}

# tc_ensure_built [harness]: all three, or with `harness` the harness alone (its build-apiserver
# and build-kueue-manager need neither the default kube-apiserver nor etcd, so scripts/test can
# build older kube-apiservers and Kueue's managers in the background while the default one builds).
tc_ensure_built() {
	local cache k8s_v etcd_v hash lockfd only=${1-}
	tc_find_go
	cache=$(tc_cache_dir)
	k8s_v=$(tc_mod_version k8s.io/kubernetes)
	etcd_v=$(tc_mod_version go.etcd.io/etcd/server/v3)
	[[ -n $k8s_v && -n $etcd_v ]] || tc_die "cannot read the k8s.io/kubernetes / go.etcd.io/etcd/server/v3 versions from $tc_module_dir/go.mod"
	hash=$(cd "$tc_module_dir" && cat go.mod go.sum cmd/testcluster/*.go internal/*/*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_KUBE_APISERVER=$cache/kube-apiserver-$k8s_v
	TESTCLUSTER_ETCD=$cache/etcd-$etcd_v
	TESTCLUSTER_BIN=$cache/testcluster-$hash
	TESTCLUSTER_MODULE_DIR=$tc_module_dir
	TESTCLUSTER_CACHE_DIR=$cache
	export TESTCLUSTER_GO TESTCLUSTER_KUBE_APISERVER TESTCLUSTER_ETCD TESTCLUSTER_MODULE_DIR TESTCLUSTER_CACHE_DIR
	if [[ $only == harness ]]; then
		tc_build_harness "$cache"
		return 0
	fi
	if [[ ! -x $TESTCLUSTER_KUBE_APISERVER || ! -x $TESTCLUSTER_ETCD || ! -x $TESTCLUSTER_BIN ]]; then
		mkdir -p "$cache"
		# One builder at a time; the others wait here, then find the binaries built.
		exec {lockfd}>"$cache/.build.lock"
		flock "$lockfd"
		# Stamp the version as a release build does: /version and kubectl version need a
		# parseable gitVersion (the module build reports v0.0.0-master+$Format:%H$).
		local v=k8s.io/component-base/version minor=${k8s_v#v*.}
		minor=${minor%%.*}
		tc_build "$TESTCLUSTER_KUBE_APISERVER" "kube-apiserver $k8s_v (cold build takes about 7 minutes on 2 cores)" \
			k8s.io/kubernetes/cmd/kube-apiserver -ldflags "-X $v.gitVersion=$k8s_v -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
		tc_build "$TESTCLUSTER_ETCD" "etcd $etcd_v (cold build takes about a minute)" ./cmd/etcd
		tc_build_harness "$cache"
		exec {lockfd}>&-
	fi
}

# tc_build_harness CACHE: the harness binary, $TESTCLUSTER_BIN, under a lock of its own (the
# background's build-apiserver may build it while the default kube-apiserver builds).
tc_build_harness() {
	local cache=$1 lockfd
	[[ -x $TESTCLUSTER_BIN ]] && return 0
	mkdir -p "$cache"
	exec {lockfd}>"$cache/.build-harness.lock"
	flock "$lockfd"
	if [[ ! -x $TESTCLUSTER_BIN ]]; then
		tc_build "$TESTCLUSTER_BIN" "testcluster harness" ./cmd/testcluster
		tc_prune "$cache" testcluster
	fi
	exec {lockfd}>&-
}

# The proxy alone: it needs neither kube-apiserver nor etcd, and has a lock of its own so it
# does not wait behind a cold kube-apiserver build.
tc_ensure_proxy_built() {
	local cache hash lockfd dir=$tc_module_dir/proxy
	tc_find_go
	cache=$(tc_cache_dir)
	hash=$(cd "$dir" && cat go.mod go.sum ./*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_PROXY=$cache/testproxy-$hash
	export TESTCLUSTER_GO TESTCLUSTER_PROXY
	if [[ ! -x $TESTCLUSTER_PROXY ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-proxy.lock"
		flock "$lockfd"
		if [[ ! -x $TESTCLUSTER_PROXY ]]; then
			tc_build_in "$dir" "$TESTCLUSTER_PROXY" "test proxy (goproxy, go-socks5)" .
			tc_prune "$cache" testproxy
		fi
		exec {lockfd}>&-
	fi
}

# The elector alone, like the proxy: no kube-apiserver or etcd needed, a lock of its own. Its
# dependencies are those of the kube-apiserver build at the same versions, so a warm Go build
# cache makes this a link step (cold: client-go, about a minute on 2 cores).
tc_ensure_elector_built() {
	local cache hash lockfd dir=$tc_module_dir/elector
	tc_find_go
	cache=$(tc_cache_dir)
	hash=$(cd "$dir" && cat go.mod go.sum ./*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_ELECTOR=$cache/testelector-$hash
	export TESTCLUSTER_GO TESTCLUSTER_ELECTOR
	if [[ ! -x $TESTCLUSTER_ELECTOR ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-elector.lock"
		flock "$lockfd"
		if [[ ! -x $TESTCLUSTER_ELECTOR ]]; then
			tc_build_in "$dir" "$TESTCLUSTER_ELECTOR" "test elector (client-go leader election)" .
			tc_prune "$cache" testelector
		fi
		exec {lockfd}>&-
	fi
}

# The metrics checker alone, like the proxy: Prometheus' expfmt and promlint, no kube-apiserver
# or etcd needed, a lock of its own.
tc_ensure_metricscheck_built() {
	local cache hash lockfd dir=$tc_module_dir/metricscheck
	tc_find_go
	cache=$(tc_cache_dir)
	hash=$(cd "$dir" && cat go.mod go.sum ./*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_METRICSCHECK=$cache/metricscheck-$hash
	export TESTCLUSTER_GO TESTCLUSTER_METRICSCHECK
	if [[ ! -x $TESTCLUSTER_METRICSCHECK ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-metricscheck.lock"
		flock "$lockfd"
		if [[ ! -x $TESTCLUSTER_METRICSCHECK ]]; then
			tc_build_in "$dir" "$TESTCLUSTER_METRICSCHECK" "metrics checker (prometheus/common expfmt, promlint)" .
			tc_prune "$cache" metricscheck
		fi
		exec {lockfd}>&-
	fi
}

# The hostile server alone, like the proxy: the standard library only, a lock of its own.
tc_ensure_hostile_built() {
	local cache hash lockfd dir=$tc_module_dir/hostile
	tc_find_go
	cache=$(tc_cache_dir)
	hash=$(cd "$dir" && cat go.mod go.sum ./*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_HOSTILE=$cache/testhostile-$hash
	export TESTCLUSTER_GO TESTCLUSTER_HOSTILE
	if [[ ! -x $TESTCLUSTER_HOSTILE ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-hostile.lock"
		flock "$lockfd"
		if [[ ! -x $TESTCLUSTER_HOSTILE ]]; then
			tc_build_in "$dir" "$TESTCLUSTER_HOSTILE" "hostile test server (standard library)" .
			tc_prune "$cache" testhostile
		fi
		exec {lockfd}>&-
	fi
}

# The printer checker alone, like the metrics checker: client-go's util/jsonpath and kubectl's
# custom-columns printer, no kube-apiserver or etcd needed, a lock of its own.
tc_ensure_printcheck_built() {
	local cache hash lockfd dir=$tc_module_dir/printcheck
	tc_find_go
	cache=$(tc_cache_dir)
	hash=$(cd "$dir" && cat go.mod go.sum ./*.go | sha256sum | cut -c 1-12)
	TESTCLUSTER_PRINTCHECK=$cache/printcheck-$hash
	export TESTCLUSTER_GO TESTCLUSTER_PRINTCHECK
	if [[ ! -x $TESTCLUSTER_PRINTCHECK ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-printcheck.lock"
		flock "$lockfd"
		if [[ ! -x $TESTCLUSTER_PRINTCHECK ]]; then
			tc_build_in "$dir" "$TESTCLUSTER_PRINTCHECK" "printer checker (client-go util/jsonpath, kubectl custom-columns)" .
			tc_prune "$cache" printcheck
		fi
		exec {lockfd}>&-
	fi
}

# kubectl at the default cluster's version (k8s.io/kubernetes/cmd/kubectl from this module's
# go.mod, stamped like kube-apiserver), for the tests that run once per kubectl: the machine's
# and this one (tests/support/mod.rs, each_kubectl). Built as kubectl-<version>, a lock of its own.
tc_ensure_kubectl_built() {
	local cache k8s_v lockfd minor v=k8s.io/component-base/version
	tc_find_go
	cache=$(tc_cache_dir)
	k8s_v=$(tc_mod_version k8s.io/kubernetes)
	[[ -n $k8s_v ]] || tc_die "cannot read the k8s.io/kubernetes version from $tc_module_dir/go.mod"
	TESTCLUSTER_KUBECTL=$cache/kubectl-$k8s_v
	export TESTCLUSTER_GO TESTCLUSTER_KUBECTL
	if [[ ! -x $TESTCLUSTER_KUBECTL ]]; then
		mkdir -p "$cache"
		exec {lockfd}>"$cache/.build-kubectl.lock"
		flock "$lockfd"
		minor=${k8s_v#v*.}
		minor=${minor%%.*}
		tc_build "$TESTCLUSTER_KUBECTL" "kubectl $k8s_v (cold build takes about 2 minutes after kube-apiserver's)" \
			k8s.io/kubernetes/cmd/kubectl -ldflags "-X $v.gitVersion=$k8s_v -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
		exec {lockfd}>&-
	fi
}
