package queen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/jackc/pgx/v5"
)

// The buffer dir Settle reads is an account of the server's file buffer
// that agrees with the server's own: pushes answered "buffered" during
// maintenance mode are bytes in a file there, and once maintenance mode
// ends Settle returns only when PostgreSQL holds every one of them (the
// table, not ackcheck, counts them) and no file holds a byte.
//
// What it does not show: the server reporting 0 with files an earlier
// process left, the case the dir is read for (file_buffer.cpp does not
// count those); a restarted server replays them before it listens unless
// PostgreSQL fails during that replay, which this test does not arrange.
func TestRealQueenSettleFollowsTheBufferDir(t *testing.T) {
	q := lazyQueen.Get(t)
	d, err := queen.New(q.DriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := d.Settle(ctx, "", 10*time.Second, nil); err != nil {
		t.Fatalf("the buffer before the test: %v", err)
	}
	if err := d.SetSwitch(ctx, "maintenance", true); err != nil {
		t.Fatal(err)
	}
	defer d.SetSwitch(context.Background(), "maintenance", false)
	// The server's background replay reads maintenance mode from a cache
	// refreshed each second: seen replaying 0.6 s after it was turned on.
	time.Sleep(1500 * time.Millisecond)

	queue := fmt.Sprintf("settle-%d", time.Now().UnixNano())
	const pushes, items = 30, 10
	for i := range pushes {
		var body struct {
			Items []map[string]any `json:"items"`
		}
		for j := range items {
			n := i*items + j
			body.Items = append(body.Items, map[string]any{"queue": queue, "partition": "p0", "transactionId": "tx-" + strconv.Itoa(n), "payload": map[string]int{"n": n}})
		}
		pushBuffered(t, ctx, q.URL(), body, items)
	}

	_, err = d.Settle(ctx, "", time.Second, nil)
	m := regexp.MustCompile(`maintenance mode with (\d+) messages counted by the server, (\d+) bytes in (\d+) files`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("Settle in maintenance mode with %d pushes buffered: %v", pushes*items, err)
	}
	if counted, _ := strconv.Atoi(m[1]); counted != pushes*items || m[2] == "0" {
		t.Fatalf("the server counts %s buffered and its dir holds %s bytes; %d were answered buffered", m[1], m[2], pushes*items)
	}
	t.Logf("maintenance mode: %s counted by the server, %s bytes in %s files of %s", m[1], m[2], m[3], q.DataDir(queen.ServerNode))

	if err := d.SetSwitch(ctx, "maintenance", false); err != nil {
		t.Fatal(err)
	}
	note, err := d.Settle(ctx, "", 30*time.Second, nil)
	if err != nil {
		t.Fatalf("Settle after maintenance mode: %v", err)
	}
	conn, err := pgx.Connect(ctx, q.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
		JOIN queen.queues qu ON qu.id = p.queue_id WHERE qu.name = $1`, queue).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != pushes*items {
		t.Fatalf("Settle returned (%q) with %d of %d buffered pushes in queen.messages", note, rows, pushes*items)
	}
	entries, err := os.ReadDir(q.DataDir(queen.ServerNode))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() > 0 {
			t.Errorf("Settle returned with %s holding %d bytes", e.Name(), info.Size())
		}
	}
	t.Logf("after maintenance mode: %q; queen.messages holds %d of %d", note, rows, pushes*items)
}

// pushBuffered pushes body to the server and fails the test unless each
// of its n items is answered buffered.
func pushBuffered(t *testing.T, ctx context.Context, url string, body any, n int) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/push", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answers []struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answers); err != nil {
		t.Fatalf("push during maintenance mode: %v", err)
	}
	buffered := 0
	for _, a := range answers {
		if a.Status == "buffered" {
			buffered++
		}
	}
	if buffered != n {
		t.Fatalf("push during maintenance mode: %d of %d items answered buffered: %+v", buffered, n, answers)
	}
}
