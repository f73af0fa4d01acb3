package verifier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/ledger"
)

// settlingTopic is a spyTopic whose broker acknowledges before a read can
// find what it acked (drivers.Settler).
type settlingTopic struct {
	spyTopic
	note string
	err  error
}

func (s *settlingTopic) Settle(context.Context, string, time.Duration, func(string)) (string, error) {
	return s.note, s.err
}

// A broker that could not make everything it acked readable (Queen's file
// buffer not replayed) gives no complete read-back: every partition is
// unread, so an acked message not found is not judged lost, and the
// verdict is incomplete rather than FAIL. One that settled reads as
// usual, and says what it waited for.
func TestReadBackWaitsForTheBrokerToSettle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		note     string
		err      error
		complete bool
	}{
		{"settled", "waited 2s for the Queen server to replay 900 buffered messages into PostgreSQL", nil, true},
		{"not settled", "", errors.New("the Queen server's file buffer still holds 500 messages"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			d := &settlingTopic{spyTopic: spyTopic{ends: map[int32]int64{0: 5, 1: 7}}, note: tc.note, err: tc.err}
			rep, err := ReadBack(context.Background(), d, l, ledger.RunInfo{StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0, 1: 0})}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Complete != tc.complete || !d.read {
				t.Fatalf("complete %v (want %v), read %v", rep.Complete, tc.complete, d.read)
			}
			if tc.complete {
				if rep.Settled != tc.note || len(rep.Unread) != 0 {
					t.Fatalf("settled %q, unread %v", rep.Settled, rep.Unread)
				}
				return
			}
			if len(rep.Unread) != 2 || !strings.Contains(rep.Error, "still holds 500") || !strings.Contains(rep.Notes[1], "may still make acked messages readable") {
				t.Fatalf("unread %v, error %q, notes %v", rep.Unread, rep.Error, rep.Notes)
			}
			res := &Result{ReadBackComplete: rep.Complete, ReadBackError: rep.Error, Sent: 10, Acked: 10, Unread: 3}
			applyVerdict(res, Options{})
			if res.Verdict != Incomplete {
				t.Fatalf("verdict %s %v: 3 acked messages not readable yet are no proven loss", res.Verdict, res.Reasons)
			}
		})
	}
}
