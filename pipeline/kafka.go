package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/kafka/conn"
	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/internal/mskiam"
)

// Clients holds the ways this job talks to the input cluster; every one of them
// carries the same TLS and SASL settings.
type Clients struct {
	Brokers []string
	// Dialer dials the partition readers' and the group member's
	// connections, which renew their SASL sessions in place (KIP-368).
	Dialer *kafka.Dialer
	// Transport carries admin-style requests: offsets, metadata, commits,
	// producers. With SASL its connections renew their sessions too.
	Transport *kafka.Transport
	Client    *kafka.Client
}

// NewClients builds the dialer, transport and client from the `kafka` section.
// Nothing is dialled yet.
func NewClients(ctx context.Context, k InputConfig) (*Clients, error) {
	tlsCfg, err := tlsConfig(k.TLS)
	if err != nil {
		return nil, err
	}
	mech, err := saslMechanism(ctx, k.SASL)
	if err != nil {
		return nil, err
	}
	dialer := &kafka.Dialer{
		ClientID:      k.ClientID,
		Timeout:       10 * time.Second,
		DualStack:     true,
		TLS:           tlsCfg,
		SASLMechanism: mech,
	}
	transport := &kafka.Transport{
		ClientID:    k.ClientID,
		DialTimeout: 10 * time.Second,
		TLS:         tlsCfg,
		SASL:        mech,
		MetadataTTL: 30 * time.Second,
		// The input topics' metadata only: left empty, kafka-go asks for
		// every topic of the cluster every TTL, from any broker, often in
		// another zone (the zone lab saw ~20 KB cross every ~25 s with 31
		// topics; a shared cluster has thousands).
		MetadataTopics: slices.Clone(k.Topics),
	}
	if mech != nil {
		// The Transport authenticates a connection once; its pooled
		// connections would outlive a session with a lifetime (KIP-368) and
		// fail at their next request. Dial them through the session layer,
		// which does TLS and SASL and renews the session in place.
		transport.Dial = conn.SessionDial(dialer)
		transport.TLS, transport.SASL = nil, nil
	}
	return &Clients{
		Brokers:   k.Brokers,
		Dialer:    dialer,
		Transport: transport,
		Client:    &kafka.Client{Addr: kafka.TCP(k.Brokers...), Transport: transport, Timeout: 30 * time.Second},
	}, nil
}

// Close drops idle connections.
func (c *Clients) Close() { c.Transport.CloseIdleConnections() }

func tlsConfig(t TLSConfig) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // opt-in, documented
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, confkey.Errorf("kafka.tls.ca_file", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, confkey.Errorf("kafka.tls.ca_file", "%s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, confkey.Errorf("kafka.tls.cert_file", "loading the client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func saslMechanism(ctx context.Context, s SASLConfig) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "", "none":
		return nil, nil
	case "plain":
		return plain.Mechanism{Username: s.Username, Password: string(s.Password)}, nil
	case "scram-sha-256", "scram-sha-512":
		algo := scram.SHA256
		if s.Mechanism == "scram-sha-512" {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, s.Username, string(s.Password))
		if err != nil {
			return nil, confkey.Errorf("kafka.sasl", "%v", err)
		}
		return m, nil
	case "aws-msk-iam":
		m, err := mskiam.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("kafka.sasl: %w", err)
		}
		return m, nil
	}
	return nil, confkey.Errorf("kafka.sasl.mechanism", "unknown mechanism %q", s.Mechanism)
}

// produceDial is how producers reach the cluster: the session dial of
// package conn, so they carry the same TLS and SASL as the readers and
// renew SASL sessions in place (KIP-368).
func (c *Clients) produceDial() producer.DialFunc {
	if c.Dialer == nil {
		return nil
	}
	return producer.DialFunc(conn.SessionDial(c.Dialer))
}

// newProducer makes a producer to the input cluster; cfg gives the rest.
func newProducer(conn *Clients, cfg producer.Config) (*producer.Producer, error) {
	cfg.Brokers = conn.Brokers
	cfg.Dial = conn.produceDial()
	if conn.Dialer != nil {
		cfg.ClientID = conn.Dialer.ClientID
	}
	return producer.New(cfg)
}
