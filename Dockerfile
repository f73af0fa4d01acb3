# ackcheck as a container image: a static binary (no cgo), run as a
# non-root user on a distroless base that holds nothing else.
#
#   docker build -t ackcheck .
#   docker run --rm ackcheck run --help
#
# deploy/kubernetes/ runs it as an Indexed Job of shards (docs/scale-out.md).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary that runs on a base without libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ackcheck ./cmd/ackcheck

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ackcheck /usr/local/bin/ackcheck
# 65532 is distroless's "nonroot"; the manifests run as it too.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ackcheck"]
