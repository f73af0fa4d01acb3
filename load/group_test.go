package load

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// idleGroupDriver has consumer groups whose members are never given a
// record: a group that never catches up.
type idleGroupDriver struct{ drivers.Driver }

func (idleGroupDriver) Name() string { return "idle" }

func (idleGroupDriver) JoinGroup(context.Context, drivers.GroupSpec) (drivers.GroupMember, error) {
	return idleMember{}, nil
}

func (idleGroupDriver) CommitPromise(context.Context, string) (drivers.CommitPromise, error) {
	return drivers.CommitPromise{}, nil
}

type idleMember struct{}

func (idleMember) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (idleMember) Commit(context.Context, map[int32]int64) ([]drivers.CommitAnswer, error) {
	return nil, nil
}

func (idleMember) Close(context.Context) error { return nil }

// Stop with the partitions' ends not known (the driver could not tell
// them) cannot tell whether the group caught up: it says so in the
// group's info instead of stopping at once with no word, as if caught up.
// With the ends known and not reached, it names the partitions behind.
func TestGroupStopSaysWhenItCouldNotWaitForTheCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  map[int32]int64
		want string
	}{
		{"ends not known", map[int32]int64{}, "ends were not known"},
		{"ends nil", nil, "ends were not known"},
		{"ends known, not reached", map[int32]int64{0: 5}, "0:0<5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGroup(GroupConfig{Name: "g", CatchUp: 200 * time.Millisecond}, Config{RunID: 1, Topic: "t", Partitions: []int32{0}}, idleGroupDriver{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			info := g.Stop(context.Background(), tc.end)
			if !strings.Contains(info.Err, tc.want) {
				t.Fatalf("group info error %q, want it to say %q", info.Err, tc.want)
			}
		})
	}
}
