# Ferrite as a job: one headless turn (`ferrite run`) on the repository mounted at /work.
#
#   docker build -t ferrite .
#   docker run --rm -e ANTHROPIC_API_KEY -v "$PWD:/work" ferrite --json "fix the failing test"
#
# Arguments after the image name go to `ferrite run` (the prompt, `--json`, `-m`, `--mode`);
# `docker run --rm --entrypoint ferrite IMAGE doctor` runs other commands.
# The entrypoint (docker/entrypoint.sh) runs as the owner of the mounted /work, so edits land with
# the host user's uid and git trusts the checkout; `--user UID:GID` works too. `ferrite run`'s
# default mode is `auto`: it edits /work and runs commands in the sandbox, network off.
# Sessions are kept in /home/ferrite/.ferrite: mount a volume there to keep their logs.

# Build stage: the release binary, with cargo's registry and target dir cached between builds.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
# tree-sitter and aws-lc compile C; cmake is not needed (aws-lc-sys builds with cc).
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p ferrite \
    && cp target/release/ferrite /usr/local/bin/ferrite

# Runtime stage: the binary, bash (every command runs with it), git and TLS roots; no toolchain.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends bash ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 --shell /bin/bash ferrite \
    && chmod 1777 /home/ferrite \
    && mkdir /work && chown ferrite:ferrite /work
COPY --from=build /usr/local/bin/ferrite /usr/local/bin/ferrite
COPY docker/entrypoint.sh /usr/local/bin/ferrite-entrypoint
# No USER: the entrypoint starts as root only to drop to the owner of /work (a bind-mounted
# checkout belongs to the host user); Kubernetes sets `runAsUser` and the entrypoint keeps it.
# HOME is shared by whichever uid runs (1777): a uid without a passwd entry still gets one.
ENV HOME=/home/ferrite FERRITE_HOME=/home/ferrite/.ferrite
WORKDIR /work
ENTRYPOINT ["sh", "/usr/local/bin/ferrite-entrypoint", "run"]
CMD ["--help"]
