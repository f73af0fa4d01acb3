package runner

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/verifier"
)

// The command that finishes an incomplete verdict is one a shell runs as
// printed, and it replaces the generic hint in the reasons; a finished
// read-back gets none.
func TestSettle(t *testing.T) {
	tests := []struct {
		out, want string
	}{
		{"runs/first", "ackcheck verify --out runs/first"},
		{"/tmp/my runs/it's", `ackcheck verify --out '/tmp/my runs/it'\''s'`},
	}
	for _, tc := range tests {
		res := &verifier.Result{ReadBackComplete: false, Reasons: []string{"stopped; " + verifier.ResumeHint},
			Failures: []verifier.Failure{{Check: verifier.CheckReadBack, Message: "stopped; " + verifier.ResumeHint}}}
		settle(tc.out, res, func(string, ...any) {})
		if res.Resume != tc.want || !strings.Contains(res.Reasons[0], "`"+tc.want+"`") || res.Failures[0].Message != res.Reasons[0] {
			t.Errorf("%q: resume %q, reason %q", tc.out, res.Resume, res.Reasons[0])
		}
	}
	done := &verifier.Result{ReadBackComplete: true}
	settle("x", done, func(string, ...any) {})
	if done.Resume != "" {
		t.Errorf("a complete read-back got %q", done.Resume)
	}
}
