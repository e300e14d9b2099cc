# syntax=docker/dockerfile:1
# denormd container image: `docker build -t denormd .` (or `docker compose up`, which builds it).
#
# Two stages on Debian bookworm, the distribution CI builds and tests on:
#   build    compiles denormd with the same Debian -dev packages as scripts/install-deps.sh
#            (tests/deploy/dockerfile_check.py fails CI when the two lists drift apart);
#   runtime  bookworm-slim plus the binary and the packages that own its shared libraries.
#
# Runtime libraries: installed as Debian packages, not copied as loose .so files. The list is
# derived in the build stage from the binary itself (`ldd` -> `dpkg-query -S`, see
# deploy/docker/runtime-packages.sh), so it is exact and follows link changes by itself, while
# apt still pulls each library's own dependencies, including the ones loaded with dlopen that
# ldd cannot see (OpenSSL providers, SASL mechanisms), and the image stays patchable by a
# rebuild that picks up Debian security updates. Copying ldd's files would miss those and
# leave dpkg unaware of what is installed, which hides the image from vulnerability scanners.
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config \
      libmongoc-dev libbson-dev libboost-dev libboost-system-dev libboost-program-options-dev \
      prometheus-cpp-dev \
      libyaml-dev libssl-dev libcrypt-dev \
      nlohmann-json3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG BUILD_JOBS=
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDENORMD_BUILD_TESTS=OFF \
 && cmake --build build --target denormd ${BUILD_JOBS:+-j ${BUILD_JOBS}}
# The stripped binary and the runtime package list, in one folder for the next stage.
RUN mkdir /out \
 && strip --strip-unneeded -o /out/denormd build/bin/denormd \
 && deploy/docker/runtime-packages.sh /out/denormd > /out/runtime-packages \
 && cat /out/runtime-packages

FROM ${DEBIAN_IMAGE} AS runtime
# ca-certificates: the CA bundle libmongoc's OpenSSL verifies TLS servers against
# (mongodb+srv and Atlas URIs use TLS); it is data, not a program.
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages \
      apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
           /tmp/runtime-packages
COPY --from=build /out/denormd /usr/local/bin/denormd
# Fail the image build, not the first start, if a library did not make it.
RUN ! ldd /usr/local/bin/denormd | grep 'not found'

# An unprivileged user with a fixed numeric id (runAsNonRoot-friendly) and no home or shell.
# (Not --system: system ids end at 999, and a fixed id above the host's users is the point.)
RUN groupadd --gid 10001 denormd \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin denormd
USER 10001:10001

# Mount the mapping files at /etc/denormd/mappings (read-only), or COPY them there in an
# image built FROM this one. Give the URI as DENORMD_URI, never on the command line, so a
# password stays out of `ps` and of the container's recorded command.
EXPOSE 9464
ENV DENORMD_HEALTHCHECK_PORT=9464

# Liveness: GET /healthz on the metrics port must answer 200 within 3 seconds.
# There is no curl or wget in this image, and adding one (libcurl with its TLS, LDAP, SSH and
# HTTP/2 libraries) only for this would grow the attack surface; denormd has no self-probe
# subcommand. bash is already part of every Debian image (Essential: yes) and its /dev/tcp
# redirection is enough for a one-request HTTP/1.1 probe. `read -t` bounds a stalled answer,
# and Docker's --timeout bounds a stalled connect. Set DENORMD_HEALTHCHECK_PORT when you
# change the port of --metrics-addr. With basic auth (--web-config-file, basic_auth_users) set
# DENORMD_HEALTHCHECK_AUTHORIZATION to "Basic <base64 of user:password>": it is sent as the
# Authorization header. It speaks no TLS: with tls_server_config, run the container with
# --no-healthcheck and let the orchestrator probe (docs/operations.md, "Securing the HTTP
# port"). tests/deploy/healthcheck_test.py runs this exact command
# against stub servers (200, 503, no reason phrase, silent, closed port, basic auth).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${DENORMD_HEALTHCHECK_PORT:-9464} && a=${DENORMD_HEALTHCHECK_AUTHORIZATION:+Authorization: $DENORMD_HEALTHCHECK_AUTHORIZATION} && printf \"GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\n${a:+%s\\r\\n}Connection: close\\r\\n\\r\\n\" \"$a\" >&3 && IFS=$' \\r' read -r -t 2 proto code _ <&3 && [[ $proto == HTTP/1.? && $code == 200 ]]"]

STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/denormd"]
CMD ["run", "--mappings", "/etc/denormd/mappings", "--metrics-addr", "0.0.0.0:9464", "--log-format", "json"]

LABEL org.opencontainers.image.title="denormd" \
      org.opencontainers.image.description="Keeps denormalized MongoDB copies true by following change streams, as declarative mapping files say." \
      org.opencontainers.image.base.name="debian:bookworm-slim"
