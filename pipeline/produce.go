package pipeline

import (
	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/fetch"
)

// produceDial is how producers reach the cluster: the fetch client's
// session dial, so they carry the same TLS and SASL as the readers and
// renew SASL sessions in place (KIP-368).
func (c *Clients) produceDial() producer.DialFunc {
	if c.Dialer == nil {
		return nil
	}
	return producer.DialFunc(fetch.SessionDial(c.Dialer))
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
