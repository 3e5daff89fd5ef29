package iceberg

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/glue" // registers type glue
	_ "github.com/apache/iceberg-go/catalog/rest" // registers type rest
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the sql catalog's SQLite, pure Go

	"github.com/logstore/logstore/sink"
)

// sqliteBusyTimeout is how long a commit waits for another process's
// write to the same SQLite file (two members on one machine, `logstore
// table expire` beside a running job) before it fails.
const sqliteBusyTimeout = "busy_timeout(10000)"

// OpenCatalog connects to the catalog sinks.iceberg.catalog names. The
// table's metadata files are written with the S3 endpoint and credentials
// of sinks.iceberg.s3, as its data files are. cfg must have had
// SetDefaults.
func OpenCatalog(ctx context.Context, cfg *sink.IcebergConfig) (catalog.Catalog, error) {
	c := cfg.Catalog
	props := iceberg.Properties{}
	maps.Copy(props, c.Properties)
	props["type"] = c.Type
	if c.Warehouse != "" {
		props["warehouse"] = c.Warehouse
	}
	s3 := cfg.S3
	endpoint := s3.Endpoint
	if endpoint == "" {
		endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	region := cmp.Or(s3.Region, os.Getenv("AWS_REGION"))
	if region == "" && endpoint != "" {
		region = "us-east-1" // what S3-compatible servers take, as the files sink does
	}
	setIf(props, icebergio.S3EndpointURL, endpoint)
	setIf(props, icebergio.S3Region, region)
	setIf(props, icebergio.S3AccessKeyID, s3.AccessKeyID)
	setIf(props, icebergio.S3SecretAccessKey, s3.SecretAccessKey.Reveal())
	if s3.PathStyle != nil {
		props[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!*s3.PathStyle)
	}
	switch c.Type {
	case "sql":
		props[sqlcat.DriverKey], props[sqlcat.DialectKey] = "sqlite", string(sqlcat.SQLite)
		uri := c.URI
		if !strings.Contains(uri, "?") {
			uri = "file:" + uri + "?_pragma=" + sqliteBusyTimeout
		}
		props["uri"] = uri
	case "rest":
		props["uri"] = c.URI
		setIf(props, "credential", c.Credential.Reveal())
		setIf(props, "token", c.Token.Reveal())
	}
	cat, err := catalog.Load(ctx, c.Name, props)
	if err != nil {
		return nil, fmt.Errorf("iceberg: opening the %s catalog %s: %w", c.Type, c.URI, err)
	}
	return cat, nil
}

// Ident is the table's identifier from namespace.name.
func Ident(name string) table.Identifier { return strings.Split(name, ".") }

func setIf(p iceberg.Properties, k, v string) {
	if v != "" {
		p[k] = v
	}
}
