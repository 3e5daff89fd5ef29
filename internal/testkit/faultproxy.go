package testkit

import (
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// FaultProxy stands between a job and the test S3 server and answers a
// share of the requests with 503 SlowDown instead of passing them on, as S3
// does when it throttles a prefix or is having an outage.
type FaultProxy struct {
	URL    string       // the proxy's endpoint, for AWS_ENDPOINT_URL_S3
	Failed atomic.Int64 // requests answered with 503
	rate   atomic.Uint64
}

// StartFaultProxy proxies to target (an http:// endpoint) until the test
// ends; it passes every request until SetFailRate says otherwise.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{}
	forward := httputil.NewSingleHostReverseProxy(u)
	forward.ErrorLog = log.New(io.Discard, "", 0) // a member killed mid-upload is no news
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rate := p.FailRate(); rate > 0 && rand.Float64() < rate {
			p.Failed.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetFailRate makes the proxy answer that share of requests (0: none, 1:
// all, an outage) with 503.
func (p *FaultProxy) SetFailRate(rate float64) { p.rate.Store(uint64(rate * 1e6)) }

// FailRate is the share of requests answered with 503.
func (p *FaultProxy) FailRate() float64 { return float64(p.rate.Load()) / 1e6 }
