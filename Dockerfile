# boxcar worker image: Debian 12 (bookworm), two stages.
#
#   docker build -t boxcar .
#   docker run --rm boxcar boxcar version
#
# Built and run by the tests with podman on a base made by mmdebstrap, no
# registry involved: scripts/image.sh (--build-arg DEBIAN_IMAGE=
# localhost/debian:12-boxcar-base) and tests/ops/t_compose.sh.
#
# The build stage compiles build/boxcar and build/boxcar-sandbox with the
# same -dev packages scripts/deps.sh installs (BUILD_PKGS); the runtime stage
# has only their shared libraries, the job runtimes (python3, nodejs) and the
# two executables.  The SQL (migrations/, sql/) is compiled into boxcar, so
# `boxcar migrate` needs nothing else from the source tree.
#
# What the sandbox needs from the container runtime (capabilities, loop
# devices, seccomp, AppArmor, cgroups) is not something an image can grant
# itself: it is spelled out, with the reasons, in docker-compose.yml next to
# the worker service.
#
# Pinned to a Debian point release (not a moving tag); the packages come
# from bookworm's archive at build time.

ARG DEBIAN_IMAGE=debian:12.7-slim

# ---- build -------------------------------------------------------------
FROM ${DEBIAN_IMAGE} AS build

# Keep in step with BUILD_PKGS in scripts/deps.sh (libcmocka-dev is only for
# the unit tests, which this stage does not build).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev libpq-dev libcurl4-openssl-dev libcjson-dev \
      libarchive-dev libseccomp-dev libssl-dev libmicrohttpd-dev zlib1g-dev libsystemd-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Only what the executables are built from: no build/, .dev/ (a local
# PostgreSQL cluster), node_modules/ or .git/ end up in a layer.
COPY Makefile VERSION ./
COPY scripts/embed-sql.sh scripts/embed-text.sh scripts/check-libs.sh scripts/
COPY common/ common/
COPY agent/ agent/
COPY storage/ storage/
COPY sandbox/ sandbox/
COPY worker/ worker/
COPY migrations/ migrations/
COPY sql/ sql/
RUN make -j"$(nproc)" build/boxcar build/boxcar-guard build/boxcar-sandbox build/boxcar-session-agent \
 && strip --strip-unneeded build/boxcar build/boxcar-guard build/boxcar-sandbox build/boxcar-session-agent \
 && ./build/boxcar version

# ---- runtime -----------------------------------------------------------
FROM ${DEBIAN_IMAGE} AS runtime

# Shared libraries of the two executables (libcrypto comes with libssl3),
# CA certificates for HTTPS (S3, webhooks), and the runtimes jobs use
# (`code` mode runs python3 / node; `script` runs /bin/sh).  The sandbox
# binds the image's /usr, /bin, /lib… read-only into each job's root, so
# what is installed here is exactly what jobs can run.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libpq5 libcurl4 libcjson1 libarchive13 libseccomp2 libssl3 libmicrohttpd12 zlib1g libsystemd0 \
      e2fsprogs \
      ca-certificates python3 nodejs \
 && rm -rf /var/lib/apt/lists/*

# The worker runs as root in the container: each job's workspace is an
# ext4 image on a loop device, mounted idmapped, which only root with
# CAP_SYS_ADMIN can do.  The container still gets only the capabilities
# docker-compose.yml lists (cap_drop ALL), and each job runs as uid 65534
# with no capabilities, no_new_privs and boxcar's own seccomp filter.
RUN install -d -m 0700 /var/tmp/boxcar /var/lib/boxcar

COPY --from=build /src/build/boxcar /src/build/boxcar-session-agent /src/build/boxcar-guard /src/build/boxcar-sandbox /usr/local/bin/
COPY deploy/docker-entrypoint.sh /usr/local/bin/boxcar-entrypoint

# Per-job workspaces and the volume cache.  A volume here keeps them off the
# image's overlay filesystem (faster, and the sandbox bind-mounts them).
ENV BOXCAR_WORK_DIR=/var/tmp/boxcar
VOLUME ["/var/tmp/boxcar"]

USER root
WORKDIR /var/lib/boxcar
# --metrics-addr serves /healthz, /readyz and /metrics here.
EXPOSE 9464
# The worker drains on SIGTERM (the default STOPSIGNAL); give the container
# runtime a stop timeout longer than --drain-timeout.  The ENTRYPOINT runs
# its arguments (`docker run boxcar boxcar migrate`, `… boxcar worker`),
# making the container's cgroup writable first for the worker.  Run it
# under an init (compose `init: true`, `docker run --init`) so orphans of
# jobs are reaped and signals are forwarded.
ENTRYPOINT ["/usr/local/bin/boxcar-entrypoint"]
CMD ["boxcar", "worker"]
