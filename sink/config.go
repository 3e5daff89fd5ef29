package sink

import "fmt"

// Config is the `sinks` section. At least one sink must be set.
// (Skeleton: the sink work fills in the sub-sections.)
type Config struct {
	// Files writes Parquet to an object store or a folder, by URL.
	Files *FilesConfig `yaml:"files"`
	// Kafka produces each output row to a topic.
	Kafka *KafkaConfig `yaml:"kafka"`
}

// FilesConfig is `sinks.files`.
type FilesConfig struct {
	// URL is s3://bucket/prefix or file:///path.
	URL string `yaml:"url"`
}

// KafkaConfig is `sinks.kafka`.
type KafkaConfig struct {
	Topic string `yaml:"topic"`
}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {}

// Validate checks the section; errors name the key below `sinks`.
func (c *Config) Validate() error {
	if c.Files == nil && c.Kafka == nil {
		return keyErr("files", "no sink configured; set sinks.files.url and/or sinks.kafka.topic")
	}
	return nil
}

// KeyError is a config error tied to a key of the section; the loader turns
// Key into a file:line.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string     { return e.Key + ": " + e.Msg }
func (e *KeyError) ConfigKey() string { return e.Key }

func keyErr(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}
