package verifier

import (
	"fmt"

	"github.com/ackcheck/ackcheck/faults"
)

// networkWarnings warns, in res.Warnings, of every network fault that did
// not take effect: its probe after the rules showed a path it was meant
// to cut still answering (faults.NetworkProof), or its rules could not be
// installed, or its target was not found. A run that passes with such a
// fault did not test the partition it was asked to, and says so beside
// its verdict.
func networkWarnings(res *Result) {
	for _, f := range res.Faults {
		if !f.Action.IsNetwork() || f.Result == faults.Applied {
			continue
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s %s at %.1f s %s: %s; the run did not test the network fault it was asked to", f.Action, f.Target, f.AtS, f.Result, f.Error))
	}
}
