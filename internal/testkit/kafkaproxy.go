package testkit

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaProxy stands in for the cluster at other addresses, as a cluster
// does that comes back elsewhere (MSK replacing brokers, a DNS name moved):
// one listener per broker, each passing bytes to its broker, with the
// answers that name brokers (Metadata, FindCoordinator) rewritten to name
// the proxy's listeners, so a client that bootstraps through it never
// learns the real addresses. Close takes the whole "cluster" away from
// these addresses. Plaintext listeners only.
type KafkaProxy struct {
	// Addrs maps each broker's real address to the proxy's for it.
	Addrs map[string]string

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	closed    bool
}

// StartKafkaProxy listens on a new loopback port for each of brokers
// until Close or the end of the test.
func StartKafkaProxy(t testing.TB, brokers []string) *KafkaProxy {
	t.Helper()
	p := &KafkaProxy{Addrs: map[string]string{}, conns: map[net.Conn]struct{}{}}
	for _, b := range brokers {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.listeners = append(p.listeners, l)
		p.Addrs[b] = l.Addr().String()
		go p.serve(l, b)
	}
	t.Cleanup(p.Close)
	return p
}

// Close stops every listener and cuts every connection.
func (p *KafkaProxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, l := range p.listeners {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
}

func (p *KafkaProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *KafkaProxy) serve(l net.Listener, broker string) {
	for {
		client, err := l.Accept()
		if err != nil {
			return
		}
		go p.pass(client, broker)
	}
}

// pass relays one connection; requests are read to learn each answer's
// API key and version by correlation id.
func (p *KafkaProxy) pass(client net.Conn, broker string) {
	server, err := net.Dial("tcp", broker)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client) || !p.track(server) {
		client.Close()
		server.Close()
		return
	}
	var mu sync.Mutex
	asked := map[int32][2]int16{} // correlation id → key, version
	go func() {
		defer server.Close()
		for {
			frame, err := readFrame(client)
			if err != nil || len(frame) < 12 {
				return
			}
			key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
			mu.Lock()
			asked[int32(binary.BigEndian.Uint32(frame[8:]))] = [2]int16{key, version}
			mu.Unlock()
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	defer client.Close()
	for {
		frame, err := readFrame(server)
		if err != nil || len(frame) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		kv := asked[corr]
		delete(asked, corr)
		mu.Unlock()
		if kv[0] == int16(kmsg.Metadata) || kv[0] == int16(kmsg.FindCoordinator) {
			frame = p.rewrite(frame, kv[0], kv[1])
		}
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

// rewrite names the proxy's listeners in an answer that names brokers; an
// answer it cannot read passes as it came.
func (p *KafkaProxy) rewrite(frame []byte, key, version int16) []byte {
	res := kmsg.ResponseForKey(key)
	res.SetVersion(version)
	header := 8 // size, correlation id
	if res.IsFlexible() {
		header++ // empty tagged fields
	}
	if err := res.ReadFrom(frame[header:]); err != nil {
		return frame
	}
	swap := func(host *string, port *int32) {
		if to, ok := p.Addrs[net.JoinHostPort(*host, strconv.Itoa(int(*port)))]; ok {
			h, ps, _ := net.SplitHostPort(to)
			n, _ := strconv.Atoi(ps)
			*host, *port = h, int32(n)
		}
	}
	switch r := res.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			swap(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		swap(&r.Host, &r.Port)
		for i := range r.Coordinators {
			swap(&r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	}
	body := res.AppendTo(append([]byte(nil), frame[4:header]...))
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// readFrame reads one size-prefixed Kafka frame, size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return nil, errors.New("frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}
