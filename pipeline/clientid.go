package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/rack"
)

// Kafka-compatible services that keep a client's traffic in its zone read
// the zone from client.id: WarpStream `ws_az=<zone>`, Bufstream
// `zone=<zone>`, Aiven's diskless topics `diskless_az=<zone>`. A
// kafka.client_id with {zone} gets the zone this process runs in, so one
// config serves every pod of a job.
const zonePlaceholder = "{zone}"

var clientIDPlaceholder = regexp.MustCompile(`\{[^{}]*\}`)

// validateClientID refuses a placeholder other than {zone}.
func validateClientID(id string) error {
	for _, p := range clientIDPlaceholder.FindAllString(id, -1) {
		if p != zonePlaceholder {
			return confkey.Errorf("kafka.client_id", "%q has %s; the one placeholder is {zone} (e.g. ws_az={zone} for WarpStream, zone={zone} for Bufstream, diskless_az={zone} for Aiven)", id, p)
		}
	}
	return nil
}

// ClientIDZone is the zone {zone} stands for: the AZ ID where the provider
// gives one (apne2-az1 is the same place in every account; the name
// ap-northeast-2a is not), else the zone's name.
func ClientIDZone(z rack.Identity) string {
	if z.ID != "" {
		return z.ID
	}
	return z.Name
}

// ExpandClientID puts zone in the template's {zone}.
func ExpandClientID(template, zone string) string {
	return strings.ReplaceAll(template, zonePlaceholder, zone)
}

// ZoneClientID fills kafka.client_id's {zone} with the detected zone,
// before anything dials (the services route metadata by it too). A
// template without {zone} is left alone and detects nothing.
func ZoneClientID(ctx context.Context, cfg *Config, log *slog.Logger) error {
	k := &cfg.Kafka
	if !strings.Contains(k.ClientID, zonePlaceholder) {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	res, err := rack.Detect(ctx, cfg.Rack, log)
	if err != nil {
		return fmt.Errorf("kafka.client_id %q: %w", k.ClientID, err)
	}
	zone := ClientIDZone(res.Zone)
	if zone == "" {
		return confkey.Errorf("kafka.client_id", "%q needs the zone and none was detected; set rack.static (or LOGSTORE_RACK) to the zone, or drop {zone}", k.ClientID)
	}
	k.ClientID = ExpandClientID(k.ClientID, zone)
	log.Info("client id", "client_id", k.ClientID, "zone", zone, "source", res.Source)
	return nil
}
