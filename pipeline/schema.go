package pipeline

// SchemaConfig is the `schema` section: how a record becomes a row.
// (Skeleton: the decoding work fills it in.)
type SchemaConfig struct {
	Format string `yaml:"format"`
}

// SetDefaults fills the zero fields.
func (c *SchemaConfig) SetDefaults() {
	if c.Format == "" {
		c.Format = "json"
	}
}

// Validate checks the section; errors name the key below `schema`.
func (c *SchemaConfig) Validate() error { return nil }
