# Build stage: release binary.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
# The catalog schema is embedded in the binary at compile time.
COPY migrations ./migrations
# Present so CARGO_MANIFEST_DIR/data/sample exists at build time; the runtime image copies it again.
COPY data/sample ./data/sample
RUN cargo build --release --locked

# Runtime stage: the binary, the embedded dataset, nothing else.
FROM debian:bookworm-slim
# CA roots for the hub and object stores (rustls reads the system store).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /srv/mlenergy mlenergy \
    && mkdir -p /var/cache/mlenergy && chown mlenergy /var/cache/mlenergy
COPY --from=build /src/target/release/mlenergy-server /usr/local/bin/mlenergy-server
COPY data/sample /srv/mlenergy/data/sample
ENV MLENERGY_BIND=0.0.0.0:8080 \
    MLENERGY_DATA=/srv/mlenergy/data/sample \
    MLENERGY_LOG_FORMAT=json \
    MLENERGY_CACHE=/var/cache/mlenergy/raw \
    MLENERGY_CATALOG=sqlite:///var/cache/mlenergy/catalog.db \
    HF_HOME=/var/cache/mlenergy/hf
# Raw cache, catalog and hub cache: keep them across container restarts.
VOLUME /var/cache/mlenergy
USER mlenergy
WORKDIR /srv/mlenergy
EXPOSE 8080 5432 50051
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s CMD ["/usr/local/bin/mlenergy-server", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mlenergy-server"]
