package report

import (
	"encoding/xml"
	"strings"

	"github.com/ackcheck/ackcheck/verifier"
)

// junitSuite is the JUnit XML format CI systems read.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// Check is one JUnit test case: a name and why it failed ("" passes).
type Check struct {
	Name, Failure string
}

// Checks lists the verdict's checks, one JUnit case each, failing where
// the verdict failed (from Result.Failures, never from the wording of a
// reason). The eight standing checks are always there; each deadline
// missed and each unexpected death is a case of its own.
func Checks(r *verifier.Result) []Check {
	standing := []struct{ name, check string }{
		{"no acked message lost", verifier.CheckLost},
		{"no corruption", verifier.CheckCorrupt},
		{"no phantom", verifier.CheckPhantom},
		{"read-back complete", verifier.CheckReadBack},
		{"something sent", verifier.CheckSent},
		{"something acked", verifier.CheckAcked},
		{"no duplicates (--no-duplicates)", verifier.CheckDuplicates},
		{"in order (--ordered)", verifier.CheckReordered},
	}
	msgs := map[string][]string{}
	for _, f := range r.Failures {
		msgs[f.Check] = append(msgs[f.Check], f.Message)
	}
	var cs []Check
	for _, c := range standing {
		cs = append(cs, Check{c.name, strings.Join(msgs[c.check], "; ")})
		delete(msgs, c.check)
	}
	for _, f := range r.Failures { // deadlines, unexpected deaths
		if _, ok := msgs[f.Check]; ok {
			cs = append(cs, Check{f.Message, f.Message})
		}
	}
	return cs
}

// JUnit renders the checks as JUnit XML.
func JUnit(r *verifier.Result) ([]byte, error) {
	s := junitSuite{Name: "ackcheck " + r.RunID}
	for _, c := range Checks(r) {
		jc := junitCase{Name: c.Name, Classname: "ackcheck." + r.Driver}
		if c.Failure != "" {
			jc.Failure = &junitFailure{Message: c.Failure, Text: c.Failure}
			s.Failures++
		}
		s.Cases = append(s.Cases, jc)
	}
	s.Tests = len(s.Cases)
	out, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}
