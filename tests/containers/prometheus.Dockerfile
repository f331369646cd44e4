# Prometheus for the compose test, from Debian's package in the offline base (the official
# image cannot be pulled here). Runs as nobody, as the official image does.
ARG TOOLS_IMAGE=localhost/flakestorm-test/tools:bookworm
FROM ${TOOLS_IMAGE}
RUN mkdir -p /prometheus && chown 65534:65534 /prometheus
USER 65534:65534
ENTRYPOINT ["/usr/bin/prometheus"]
