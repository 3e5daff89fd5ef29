package sink

import (
	"errors"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/confkey"
)

// TestTableUpkeepValidateNamesTheKey: an upkeep that could not work, or
// could delete a commit's files under way, stops the start at its key.
func TestTableUpkeepValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*TableUpkeep)
	}{
		{"iceberg.upkeep.interval", func(u *TableUpkeep) { u.Interval = new(10 * time.Second) }},
		{"iceberg.upkeep.interval", func(u *TableUpkeep) { u.Interval = new(-time.Second) }},
		{"iceberg.upkeep.retain_last", func(u *TableUpkeep) { u.RetainLast = -1 }},
		{"iceberg.upkeep.snapshot_max_age", func(u *TableUpkeep) { u.SnapshotMaxAge = -time.Hour }},
		{"iceberg.upkeep.orphan_min_age", func(u *TableUpkeep) { u.OrphanMinAge = new(10 * time.Minute) }},
	} {
		c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"}}}
		c.SetDefaults()
		tc.set(&c.Iceberg.Upkeep)
		err := c.Validate()
		var ke *confkey.Error
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%s: Validate() = %v", tc.key, err)
		}
	}
	// Off is allowed: a CronJob runs `logstore table upkeep`.
	c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"}, Upkeep: TableUpkeep{Interval: new(time.Duration(0))}}}
	c.SetDefaults()
	if err := c.Validate(); err != nil || *c.Iceberg.Upkeep.Interval != 0 || *c.Iceberg.Upkeep.OrphanMinAge != 24*time.Hour {
		t.Errorf("interval 0s: %v, %+v", err, c.Iceberg.Upkeep)
	}
}
