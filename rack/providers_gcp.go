package rack

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// envGCEMetadataHost moves the GCE metadata server, as Google's client
// libraries allow (host:port).
const envGCEMetadataHost = "GCE_METADATA_HOST"

// findGCE asks the GCE metadata server (also behind GKE) for the instance's
// zone. Without GCE_METADATA_HOST it asks 169.254.169.254, the address
// metadata.google.internal resolves to, as Google's own client does: off GCE
// the name may take a slow DNS failure, the address fails at connect.
// GCE zone names are the same in every project, so there is no zone ID.
func findGCE(ctx context.Context, _ Config) (Identity, error) {
	ep := endpointFrom(envGCEMetadataHost, linkLocalMetadata)
	body, err := ep.get(ctx, "/computeMetadata/v1/instance/zone", map[string]string{"Metadata-Flavor": "Google"},
		"GCE metadata", "on GCE")
	if err != nil {
		return Identity{}, err
	}
	// The answer is projects/PROJECT_NUMBER/zones/ZONE.
	answer := strings.TrimSpace(string(body))
	if !strings.Contains(answer, "/zones/") {
		return Identity{}, fmt.Errorf("GCE metadata at %s answered %q, not projects/N/zones/ZONE", ep.base, answer)
	}
	return Identity{Name: path.Base(answer)}, nil
}
