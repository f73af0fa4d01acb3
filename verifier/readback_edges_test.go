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

// failingRead is a spyTopic whose read stops with an error.
type failingRead struct {
	spyTopic
	readErr error
}

func (f *failingRead) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep, _ := f.spyTopic.Read(ctx, spec, fn)
	return rep, f.readErr
}

// A read-back whose broker fails it is a result, not an error: it is
// incomplete and says why. Only when the caller's context ended (or
// settling failed because of it) is it an error, with no result to judge.
func TestReadBackFailuresAndCancel(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		d        drivers.Driver
		errHas   string // ReadBack's error; "" none
		repError string // the report's Error when there is no error
	}{
		{"a fetch fails", context.Background(), &failingRead{spyTopic{ends: map[int32]int64{0: 5}}, errors.New("fetch refused")}, "", "reading t back: fetch refused"},
		{"a fetch fails after the context ended", cancelled, &failingRead{spyTopic{ends: map[int32]int64{0: 5}}, errors.New("context canceled")}, "read-back: context canceled", ""},
		{"settling fails after the context ended", cancelled, &settlingTopic{spyTopic: spyTopic{ends: map[int32]int64{0: 5}}, err: errors.New("settle: context canceled")}, "read-back: settle: context canceled", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rep, err := ReadBack(tc.ctx, tc.d, l, ledger.RunInfo{RunID: 7, Topic: "t", StartOffsets: map[int32]int64{0: 0}}, time.Second)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Complete || rep.Error != tc.repError {
				t.Fatalf("complete %v, error %q; want incomplete, %q", rep.Complete, rep.Error, tc.repError)
			}
		})
	}
}
