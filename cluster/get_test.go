package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Get is a health check's GET: the answer's status and its body, read
// and closed, within the timeout.
func TestBaseGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(" not yet\n"))
	}))
	defer srv.Close()
	var b Base
	resp, body, err := b.Get(context.Background(), srv.URL+"/healthz", time.Second)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || string(body) != " not yet\n" {
		t.Fatalf("got %v %q %v", resp, body, err)
	}
	start := time.Now()
	if _, _, err := b.Get(context.Background(), srv.URL+"/slow", 100*time.Millisecond); err == nil {
		t.Fatal("a server that does not answer: no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout of 100ms took %s", d)
	}
	if _, _, err := b.Get(context.Background(), "://bad", time.Second); err == nil {
		t.Error("a bad URL: no error")
	}
}
