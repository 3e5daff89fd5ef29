# logstore as a container job (EKS, EMR on EKS, ECS). Static binary on a
# distroless base: no shell, runs as nonroot.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/logstore ./cmd/logstore

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logstore /usr/local/bin/logstore
COPY configs/ /etc/logstore/
# Parquet batches are spooled here before upload; mount an emptyDir.
VOLUME /var/spool/logstore
ENTRYPOINT ["/usr/local/bin/logstore"]
CMD ["run", "-c", "/etc/logstore/emr-eks.yaml"]
