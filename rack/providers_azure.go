package rack

import (
	"context"
	"encoding/json"
	"fmt"
)

// envAzureIMDSEndpoint moves Azure IMDS (a base URL such as
// http://127.0.0.1:8080). Azure's SDKs have no such variable; tests and
// people trying a mock need one.
const envAzureIMDSEndpoint = "LOGSTORE_AZURE_IMDS_ENDPOINT"

// findAzure asks Azure IMDS for the VM's region and zone. Azure numbers zones
// per subscription ("1", "2", "3"), so the number alone names no place; the
// rack name is region-number ("eastus-1"), the form AKS writes into
// topology.kubernetes.io/zone, and the bare number is kept as the ID for
// brokers whose broker.rack came from IMDS as is.
func findAzure(ctx context.Context, _ Config) (Identity, error) {
	ep := endpointFrom(envAzureIMDSEndpoint, linkLocalMetadata)
	body, err := ep.get(ctx, "/metadata/instance/compute?api-version=2021-02-01", map[string]string{"Metadata": "true"},
		"Azure IMDS", "on Azure")
	if err != nil {
		return Identity{}, err
	}
	var compute struct {
		Location string `json:"location"`
		Zone     string `json:"zone"`
	}
	if err := json.Unmarshal(body, &compute); err != nil || compute.Location == "" {
		return Identity{}, fmt.Errorf("Azure IMDS at %s answered something other than compute metadata", ep.base)
	}
	if compute.Zone == "" {
		return Identity{}, absentf("the Azure VM in %s is in no availability zone", compute.Location)
	}
	return Identity{Name: compute.Location + "-" + compute.Zone, ID: compute.Zone}, nil
}
