#!/usr/bin/env bash
# packaging/spack/check.sh SPACK_CHECKOUT — `make spack-check SPACK=…` calls it.
#
# Installs mpiopt from this source tree with the Spack at SPACK_CHECKOUT, offline, once against
# the system's Open MPI and once against its MPICH (Debian's, as externals), then for each
# install: `spack load` it, and from a directory outside the tree run a plain MPI allreduce
# program at np 2 by the installed `mpiopt run --report`, which must preload the installed
# libmpiopt.so, compute the right sums and report that mpiopt ran the calls.
#
# Everything Spack writes goes to one temporary directory: the user configuration and cache
# (SPACK_USER_CONFIG_PATH, SPACK_USER_CACHE_PATH; SPACK_SYSTEM_CONFIG_PATH an empty directory, so
# /etc/spack is not read; the checkout's own etc/spack is), the install tree, the stages, a package repository that
# links packaging/spack/mpiopt, a Spack environment, and a copy of the tree's files (tracked and
# untracked, not ignored) that `spack develop` builds. Removed at the end unless
# MPIOPT_SPACK_KEEP=1. Nothing is fetched by Spack: the MPIs, GCC, CMake, GNU Make, pkgconf,
# elfutils, OTF2 and Python are externals; bootstrapping is off.
#
# Spack's own interpreter needs the clingo module, and the installed `mpiopt` command needs
# rich, matplotlib, networkx and libclang, and the recipe's +python build needs pip and
# scikit-build-core (python/pyproject.toml's backend): all come from one venv made with pip
# (MPIOPT_SPACK_VENV, default ~/.cache/mpiopt/spack-venv; made once, then reused), which is also
# the external Python the specs depend on, and the external py-pip and py-scikit-build-core.
#
# Environment: MPIOPT_SPACK_MPIS (default "openmpi mpich"), MPIOPT_SPACK_VENV, MPIOPT_SPACK_KEEP,
# MPIOPT_SPACK_JOBS (build jobs, default 2), TMPDIR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(cd "$here/../.." && pwd)
spack_root=${1:-${SPACK:-}}
mpis=${MPIOPT_SPACK_MPIS:-openmpi mpich}
jobs=${MPIOPT_SPACK_JOBS:-2}
venv=${MPIOPT_SPACK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiopt/spack-venv}

say() { printf 'spack-check: %s\n' "$*"; }
die() { printf 'spack-check: error: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$((SECONDS - $1))s"; }

[ -n "$spack_root" ] || die "no Spack: make spack-check SPACK=<a Spack checkout>"
[ -x "$spack_root/bin/spack" ] || die "$spack_root/bin/spack not found: SPACK must be a Spack checkout"
spack_root=$(cd "$spack_root" && pwd)
start=$SECONDS

# ---- the Python for Spack (clingo) and for the installed `mpiopt` command ----
venv_packages="clingo rich matplotlib networkx libclang setuptools wheel scikit-build-core"
if [ ! -f "$venv/.mpiopt-spack-venv" ] || [ "$(cat "$venv/.mpiopt-spack-venv")" != "$venv_packages" ]; then
  say "making $venv with pip: $venv_packages"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $venv_packages
  echo "$venv_packages" > "$venv/.mpiopt-spack-venv"
fi
export SPACK_PYTHON=$venv/bin/python
python_version=$("$SPACK_PYTHON" -c 'import platform; print(platform.python_version())')
pip_version=$("$SPACK_PYTHON" -c 'import importlib.metadata as m; print(m.version("pip"))')
skbuild_version=$("$SPACK_PYTHON" -c 'import importlib.metadata as m; print(m.version("scikit-build-core"))')

# ---- a fresh Spack: user config, cache, install tree, stages, all under one temporary dir ----
work=$(mktemp -d "${TMPDIR:-/tmp}/mpiopt-spack-check.XXXXXX")
cleanup() {
  if [ "${MPIOPT_SPACK_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
export SPACK_USER_CONFIG_PATH=$work/config
export SPACK_USER_CACHE_PATH=$work/cache
export SPACK_SYSTEM_CONFIG_PATH=$work/system     # not /etc/spack: an empty scope
unset SPACK_DISABLE_LOCAL_CONFIG                # it would drop the user scope too
unset SPACK_ENV
mkdir -p "$work/config" "$work/repo/packages" "$work/run" "$work/src" "$work/env"
spack() { "$spack_root/bin/spack" "$@"; }

say "Spack $(spack --version) at $spack_root, Python $python_version ($SPACK_PYTHON)"
say "work directory $work"

cat > "$work/config/config.yaml" <<EOF
config:
  install_tree:
    root: $work/opt
  build_stage: [$work/stage]
  test_stage: $work/test-stage
  source_cache: $work/cache/source
  misc_cache: $work/cache/misc
  build_jobs: $jobs
EOF
# bootstrapping stays on (an environment's concretizer enters its configuration) but with no
# source to download from: clingo is imported from SPACK_PYTHON
cat > "$work/config/bootstrap.yaml" <<EOF
bootstrap:
  root: $work/bootstrap
  trusted:
    github-actions-v0.5: false
    github-actions-v0.4: false
    spack-install: false
EOF
cat > "$work/config/mirrors.yaml" <<EOF
mirrors: {}
EOF

# the recipe, as a package repository of its own
cat > "$work/repo/repo.yaml" <<EOF
repo:
  namespace: mpiopt_check
EOF
ln -s "$here/mpiopt" "$work/repo/packages/mpiopt"
spack repo add --scope user "$work/repo" >/dev/null

# ---- externals: compiler, build tools, the MPIs, the profiler's libraries, Python ----
spack compiler find --scope user >/dev/null
spack external find --scope user --not-buildable cmake gmake pkgconf openmpi mpich >/dev/null
dpkg_version() {   # the upstream part of a Debian package's version: 1:0.188-2.1 → 0.188
  dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//' -e 's/[+~].*//'
}
elfutils_version=$(dpkg_version libdw-dev || true)
otf2_version=$(dpkg_version libotf2-trace-dev || true)
{
  echo "packages:"
  echo "  python:"
  echo "    buildable: false"
  echo "    externals:"
  echo "    - spec: python@$python_version"
  echo "      prefix: $venv"
  # the recipe's +python build dependencies: the venv's own (Spack would build them from source)
  for p in "py-pip:$pip_version" "py-scikit-build-core:$skbuild_version"; do
    echo "  ${p%%:*}:"
    echo "    buildable: false"
    echo "    externals:"
    echo "    - spec: ${p%%:*}@${p#*:}"
    echo "      prefix: $venv"
  done
  for p in "elfutils:$elfutils_version" "otf2:$otf2_version"; do
    [ -n "${p#*:}" ] || continue
    echo "  ${p%%:*}:"
    echo "    buildable: false"
    echo "    externals:"
    echo "    - spec: ${p%%:*}@${p#*:}"
    echo "      prefix: /usr"
  done
  if [ -z "$elfutils_version" ] || [ -z "$otf2_version" ]; then
    echo "  mpiopt:"
    echo "    variants: ~profiler"
  fi
} > "$work/config/packages-extra.yaml"
# merge into the packages.yaml that `spack external find` wrote
spack config --scope user add -f "$work/config/packages-extra.yaml"
rm "$work/config/packages-extra.yaml"
say "externals: $(spack config get packages | grep -o 'spec: [^ ]*' | sed 's/spec: //' | tr '\n' ' ')"
say "compilers: $(spack compilers 2>/dev/null | grep -o '[a-z]*@[0-9.]*' | tr '\n' ' ')"

# ---- this tree's files, built by `spack develop` in a Spack environment ----
if git -C "$tree" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$tree" ls-files -z --cached --others --exclude-standard \
    | (cd "$tree" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$work/src"
  source_note="$(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet HEAD -- 2>/dev/null || echo '+changes')"
else
  (cd "$tree" && tar --exclude=./build --exclude=./.venv -cf - .) | tar -xf - -C "$work/src"
  source_note="not a git tree"
fi
{
  echo "spack:"
  echo "  specs:"
  for m in $mpis; do echo "  - mpiopt@=main ^$m"; done
  echo "  concretizer:"
  echo "    unify: false"
  echo "  view: false"
  echo "  develop:"
  echo "    mpiopt:"
  echo "      spec: mpiopt@=main"
  echo "      path: $work/src"
} > "$work/env/spack.yaml"
senv() { spack -e "$work/env" "$@"; }

say "concretizing (source: $tree at $source_note)"
t=$SECONDS
senv concretize -f > "$work/concretize.log" 2>&1 || { cat "$work/concretize.log"; die "concretize failed"; }
say "concretized in $(elapsed $t)"
# the two trees ([e]: an external), less Spack's warnings
grep -E '^( - |\[e\]|\[\+\])' "$work/concretize.log" | sed -e 's/^/  /' -e 's/ dev_path=[^ ]*//' || true

say "installing (log: spack's build logs under $work/stage)"
t=$SECONDS
if ! senv install --fail-fast > "$work/install.log" 2>&1; then
  tail -60 "$work/install.log"
  for f in "$work"/src/spack-build-out.txt "$work"/stage/*/spack-build-out.txt; do
    [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }
  done
  die "spack install failed"
fi
say "installed in $(elapsed $t)"
# Spack's own per-package times: "Stage: …  Cmake: …  Build: …  Install: …  Total: …"
grep -E 'Successfully installed|Total:' "$work/install.log" | sed 's/^ */  /' || true

# ---- each install: load it, run the drop-in check from outside the tree ----
cp "$here/allreduce_check.c" "$work/run/"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
failed=0
for m in $mpis; do
  hash=$(senv find --format '{hash}' "mpiopt ^$m" 2>/dev/null | head -1)
  [ -n "$hash" ] || die "no installed mpiopt ^$m in the environment"
  spec=$(senv find --format '{name}@{version}{variants} {/hash:7} ^{^mpi.name}@{^mpi.version}' "/$hash" \
         | head -1 | sed -e 's/ dev_path=[^ ]*//' -e 's/ build_system=[^ ]*//' -e 's/ generator=[^ ]*//')
  mpi_prefix=$(senv find --format '{^mpi.prefix}' "/$hash" | head -1)
  say "---- $spec"
  if ! (
    set -e
    eval "$(spack load --sh "/$hash")"
    cd "$work/run"
    mpiopt_cmd=$(command -v mpiopt) || { echo "spack load gave no mpiopt command" >&2; exit 1; }
    [ -f "$MPIOPT_PREFIX/lib/libmpiopt.so" ] || { echo "no $MPIOPT_PREFIX/lib/libmpiopt.so" >&2; exit 1; }
    case "$mpiopt_cmd" in "$MPIOPT_PREFIX"/*) ;; *) echo "mpiopt is $mpiopt_cmd, not the install's" >&2; exit 1;; esac
    echo "  mpiopt command: $mpiopt_cmd (package $(python3 -c 'import mpiopt, os; print(os.path.dirname(mpiopt.__file__))' 2>/dev/null || echo '?'))"
    echo "  MPIOPT_PREFIX=$MPIOPT_PREFIX"
    cc=$mpi_prefix/bin/mpicc.$m
    [ -x "$cc" ] || cc=$mpi_prefix/bin/mpicc
    "$cc" -O2 -o "allreduce-$m" allreduce_check.c
    echo "  $ cd $work/run && mpiopt run --report --json -np 2 -- ./allreduce-$m"
    mpiopt run --report --json -np 2 -- "./allreduce-$m" > "out-$m.txt" 2>&1 || { cat "out-$m.txt"; exit 1; }
    sed 's/^/  | /' "out-$m.txt"
    grep -q '^allreduce check: ok' "out-$m.txt" || { echo "wrong results" >&2; exit 1; }
    grep -q "\"ld_preload\": \"$MPIOPT_PREFIX/lib/libmpiopt.so\"" "out-$m.txt" \
      || { echo "mpiopt run did not preload $MPIOPT_PREFIX/lib/libmpiopt.so" >&2; exit 1; }
    taken=$(sed -n "s/^mpiopt: \([0-9]*\) of \([0-9]*\) reduction calls ran mpiopt's algorithms$/\1/p" "out-$m.txt")
    [ -n "$taken" ] && [ "$taken" -gt 0 ] || { echo "MPIOPT_REPORT shows no call taken by mpiopt" >&2; exit 1; }
  ); then
    say "FAILED: $spec"
    failed=1
  else
    say "ok: $spec"
  fi
done
say "took $(elapsed $start) in all"
[ "$failed" = 0 ] || die "the check failed"
say "passed: mpiopt installed with Spack and its drop-in took the allreduce calls for: $mpis"
