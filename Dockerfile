# Build stage: release binary.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
# Present so CARGO_MANIFEST_DIR/data/sample exists at build time; the runtime image copies it again.
COPY data/sample ./data/sample
RUN cargo build --release --locked

# Runtime stage: the binary, the embedded dataset, nothing else.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home /srv/mlenergy mlenergy
COPY --from=build /src/target/release/mlenergy-server /usr/local/bin/mlenergy-server
COPY data/sample /srv/mlenergy/data/sample
ENV MLENERGY_BIND=0.0.0.0:8080 \
    MLENERGY_DATA=/srv/mlenergy/data/sample \
    MLENERGY_LOG_FORMAT=json
USER mlenergy
WORKDIR /srv/mlenergy
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s CMD ["/usr/local/bin/mlenergy-server", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mlenergy-server"]
