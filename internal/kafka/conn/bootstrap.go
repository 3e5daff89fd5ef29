package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/metadata"
)

// Node is a broker as metadata names it (a coordinator's answer has no
// rack).
type Node struct {
	ID   int32
	Addr string
	Rack string
}

// Nodes is the brokers of a metadata answer, by id.
func Nodes(res *metadata.Response) map[int32]Node {
	nodes := make(map[int32]Node, len(res.Brokers))
	for _, b := range res.Brokers {
		nodes[b.NodeID] = Node{ID: b.NodeID, Addr: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), Rack: b.Rack}
	}
	return nodes
}

// errNoBrokers is a client given no broker to start from.
var errNoBrokers = errors.New("no brokers to ask (kafka.brokers is empty)")

// FirstAnswer asks addrs in turn, in order, until one answers: the one
// bootstrap path of every client here. Callers list the brokers the last
// metadata named first and the seeds last; a seed is dialled by its name
// each time, so a cluster that came back at other addresses behind the
// same name is found again (rebootstrap, KIP-899) instead of its old
// addresses being tried for ever. The error names every address's.
func FirstAnswer[T any](ctx context.Context, addrs []string, ask func(ctx context.Context, addr string) (T, error)) (T, error) {
	var zero T
	if len(addrs) == 0 {
		return zero, errNoBrokers
	}
	var errs []error
	for _, addr := range addrs {
		v, err := ask(ctx, addr)
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return zero, fmt.Errorf("no broker answered: %w", errors.Join(errs...))
}

// Seeds reaches the cluster through its bootstrap addresses alone, a
// connection of its own for each request, closed after the answer: for
// what a client asks before (or without) keeping connections, such as
// which broker coordinates a group.
type Seeds struct {
	Dialer *kafka.Dialer
	Addrs  []string
	// Dialled, if set, is called for every connection opened (the fetch
	// client counts them).
	Dialled func()
}

// Request sends req to the seeds in turn until one answers, and says the
// version it went at.
func (s Seeds) Request(ctx context.Context, req protocol.Message) (protocol.Message, int16, error) {
	type answer struct {
		msg     protocol.Message
		version int16
	}
	a, err := FirstAnswer(ctx, s.Addrs, func(ctx context.Context, addr string) (answer, error) {
		if s.Dialled != nil {
			s.Dialled()
		}
		c, err := Dial(ctx, s.Dialer, addr)
		if err != nil {
			return answer{}, err
		}
		defer c.Close()
		msg, err := c.Request(ctx, req)
		return answer{msg, c.Version(req.ApiKey())}, err
	})
	return a.msg, a.version, err
}

// Call is Request as a Call.
func (s Seeds) Call(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	msg, _, err := s.Request(ctx, req)
	return msg, err
}
