# logstore as a container job (EKS, EMR on EKS, ECS). Static binary on a
# distroless base: no shell, no package manager, runs as the nonroot user
# (UID/GID 65532, numeric so Kubernetes' runAsNonRoot can verify it).
#
# Read-only root filesystem: logstore writes only its spool, the Parquet
# files waiting for upload (sinks.files.spool_dir, /var/spool/logstore in
# configs/emr-eks.yaml; TMPDIR points there too, so the default spool and
# any temporary file land on it). Mount a writable volume there and run
# with the root read-only:
#   docker run --read-only -v logstore-spool:/var/spool/logstore IMAGE run -c /etc/logstore/emr-eks.yaml
#   Kubernetes: readOnlyRootFilesystem: true and an emptyDir at
#   /var/spool/logstore (configs/k8s/base/deployment.yaml).
# The folder is created owned by 65532 in the image, so a fresh Docker
# volume mounted there starts writable by the nonroot user.
#
# Multi-arch (EKS nodes on Graviton and x86): the build stage runs on the
# builder's own platform and cross-compiles (no emulation):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --always --dirty) \
#     -t $ACCOUNT.dkr.ecr.$REGION.amazonaws.com/logstore:$TAG --push .
# (docs/eks.md: the ECR repository and the login before the push).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
# go.mod's toolchain line names the patched Go release to build with; the
# golang image pins GOTOOLCHAIN=local, which would ignore it.
ENV GOTOOLCHAIN=auto
WORKDIR /src
# third_party/iceberg-go and third_party/parquet-go stand in for those
# modules (go.mod's replaces): go mod download reads their go.mod.
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
# Build tags (the Makefile's TAGS): nodemo leaves `logstore demo` and its
# embedded Kafka out of the image; add notable for a job without
# sinks.iceberg (--build-arg TAGS=nodemo,notable): no iceberg-go, Arrow or
# catalog SDKs, a 31 MB binary instead of 98 MB (stripped; 2026-12-07).
ARG TAGS=nodemo
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -tags "${TAGS}" -ldflags "-s -w -X main.version=${VERSION}" -o /out/logstore ./cmd/logstore \
	&& mkdir -p /out/spool

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logstore /usr/local/bin/logstore
COPY configs/ /etc/logstore/
COPY --from=build --chown=65532:65532 /out/spool /var/spool/logstore
ENV TMPDIR=/var/spool/logstore
USER 65532:65532
VOLUME /var/spool/logstore
ENTRYPOINT ["/usr/local/bin/logstore"]
CMD ["run", "-c", "/etc/logstore/emr-eks.yaml"]
