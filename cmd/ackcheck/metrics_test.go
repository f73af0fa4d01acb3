package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// --metrics-addr serves every listed metric while the run goes; the acks
// it counted are bounded by what the broker itself holds (its end
// offsets, an account ackcheck did not compute).
func TestMetricsScrapedDuringARun(t *testing.T) {
	c := kfakeCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := t.TempDir() + "/run"
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
			"--partitions", "4", "--rate", "400", "--duration", "3s", "--metrics-addr", addr}, &stdout, &stderr)
	}()
	// Scrape until acks show, while the load runs.
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		body = scrape(t, addr)
		if v := metricValue(body, "ackcheck_acked_total"); v > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range []string{"ackcheck_sent_total", "ackcheck_acked_total", `ackcheck_failed_total{reason="rejected"}`, `ackcheck_failed_total{reason="unknown"}`,
		"ackcheck_shed_total", "ackcheck_in_flight", "ackcheck_seconds_since_last_ack", "ackcheck_publish_latency_seconds_count",
		"ackcheck_e2e_latency_seconds_count", `ackcheck_partition_seconds_since_last_ack{partition="3"}`} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("a scrape during the run lacks %s:\n%s", name, body)
		}
	}
	if v := metricValue(body, "ackcheck_acked_total"); v <= 0 || v >= 1200 {
		t.Errorf("acked %v during a 1200-message run: not a live figure", v)
	}
	if since := metricValue(body, "ackcheck_seconds_since_last_ack"); since < 0 || since > 1 {
		t.Errorf("seconds since the last ack %v while acks flow at 400/s", since)
	}
	if code := <-done; code != exitPass {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "ackcheck")
	if err != nil {
		t.Fatal(err)
	}
	var held int64
	ends.Each(func(o kadm.ListedOffset) { held += o.Offset })
	acked, sent := metricValue(body, "ackcheck_acked_total"), metricValue(body, "ackcheck_sent_total")
	if acked > float64(held) || acked > sent {
		t.Errorf("a scrape counted %v acks (%v sent), more than the broker holds (%d records)", acked, sent, held)
	}
	if r := readResult(t, out); r.Acked != held {
		t.Errorf("result.json: %d acked, the broker holds %d records", r.Acked, held)
	}
	// The server is gone with the command.
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("the metrics server still answers after the run")
	}
}

// A busy address is refused before the run starts.
func TestMetricsAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := kfakeCluster(t)
	out := t.TempDir() + "/run"
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out, "--duration", "1s",
		"--metrics-addr", ln.Addr().String()}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "--metrics-addr "+ln.Addr().String()) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return "\n" + string(b)
}

func metricValue(body, name string) float64 {
	m := regexp.MustCompile("\n" + regexp.QuoteMeta(name) + ` (\S+)`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		panic(fmt.Sprint(name, m[1], err))
	}
	return v
}

// After a run's read-back, with --metrics-linger, the verdict and the
// lost count are served and the time since the last ack no longer rises.
func TestMetricsVerdictAfterTheRun(t *testing.T) {
	c := kfakeCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := t.TempDir() + "/run"
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
			"--partitions", "2", "--rate", "200", "--duration", "1s", "--metrics-addr", addr, "--metrics-linger", "3s"}, &stdout, &stderr)
	}()
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(body, "ackcheck_verdict") {
		time.Sleep(100 * time.Millisecond)
		body = scrape(t, addr)
	}
	if v := metricValue(body, `ackcheck_verdict{verdict="pass"}`); v != 1 {
		t.Errorf("ackcheck_verdict{verdict=\"pass\"} = %v after a passing run:\n%s", v, body)
	}
	if v := metricValue(body, "ackcheck_lost"); v != 0 {
		t.Errorf("ackcheck_lost = %v after a passing run", v)
	}
	first := metricValue(body, "ackcheck_seconds_since_last_ack")
	time.Sleep(300 * time.Millisecond)
	if again := metricValue(scrape(t, addr), "ackcheck_seconds_since_last_ack"); first < 0 || again != first {
		t.Errorf("seconds since the last ack %v, then %v 300 ms later: it must stop at the load's end", first, again)
	}
	if code := <-done; code != exitPass {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
}
