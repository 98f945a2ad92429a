# boxcar worker image: Debian 12 (bookworm), two stages.
#
#   docker build -t boxcar .
#   docker run --rm boxcar boxcar version
#
# The build stage compiles build/boxcar and build/boxcar-sandbox with the
# same -dev packages scripts/deps.sh installs (BUILD_PKGS); the runtime stage
# has only their shared libraries, the job runtimes (python3, nodejs) and the
# two executables.  The SQL (migrations/, sql/) is compiled into boxcar, so
# `boxcar migrate` needs nothing else from the source tree.
#
# What the sandbox needs from the container runtime (seccomp, AppArmor,
# /proc, cgroups) is not something an image can grant itself: it is spelled
# out, with the reasons, in docker-compose.yml next to the worker service.

ARG DEBIAN_IMAGE=debian:bookworm-slim

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
# Only what the two executables are built from: no build/, .dev/ (a local
# PostgreSQL cluster), node_modules/ or .git/ end up in a layer.
COPY Makefile VERSION ./
COPY scripts/embed-sql.sh scripts/
COPY common/ common/
COPY storage/ storage/
COPY sandbox/ sandbox/
COPY worker/ worker/
COPY migrations/ migrations/
COPY sql/ sql/
RUN make -j"$(nproc)" build/boxcar build/boxcar-guard build/boxcar-sandbox \
 && strip --strip-unneeded build/boxcar build/boxcar-guard build/boxcar-sandbox \
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

# Runs as an unprivileged user.  boxcar-sandbox then isolates each job with
# an unprivileged user namespace (CLONE_NEWUSER, mapping the job's uid to
# this one), so the worker needs no capabilities at all: no setuid helper,
# no CAP_SYS_ADMIN.  The uid is fixed so volume ownership and the
# compose/Kubernetes securityContext can name it.
ARG BOXCAR_UID=10001
RUN groupadd --system --gid "${BOXCAR_UID}" boxcar \
 && useradd --system --uid "${BOXCAR_UID}" --gid boxcar --home-dir /var/lib/boxcar \
      --create-home --shell /usr/sbin/nologin boxcar \
 && install -d -o boxcar -g boxcar -m 0750 /var/tmp/boxcar

COPY --from=build /src/build/boxcar /src/build/boxcar-guard /src/build/boxcar-sandbox /usr/local/bin/

# Per-job workspaces and the volume cache.  A volume here keeps them off the
# image's overlay filesystem (faster, and the sandbox bind-mounts them).
ENV BOXCAR_WORK_DIR=/var/tmp/boxcar
VOLUME ["/var/tmp/boxcar"]

USER boxcar:boxcar
WORKDIR /var/lib/boxcar
# --metrics-addr serves /healthz, /readyz and /metrics here.
EXPOSE 9464
# The worker drains on SIGTERM (the default STOPSIGNAL); give the container
# runtime a stop timeout longer than --drain-timeout.  There is no
# ENTRYPOINT: `docker run boxcar boxcar migrate` and `… boxcar worker` both
# read naturally.  Run it under an init (compose `init: true`, `docker run
# --init`) so orphans of jobs are reaped and signals are forwarded.
CMD ["boxcar", "worker"]
