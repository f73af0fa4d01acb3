package main

import (
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
)

// One reader of fault schedules for every command: run (and its shards,
// and run -f's scenario files), faults, and matrix's check of its cells
// before the first run. Each reads a schedule with the same words (ackcheck's
// and every broker's own, drivers.TargetWords) against the same load, so a
// schedule one accepts, all accept, with the same errors.

// readSchedule parses text with the brokers' words for targets and
// refuses a step that fires after a load of length load ends.
func (l brokerList) readSchedule(text string, load time.Duration) ([]faults.Step, error) {
	words, err := l.targetWords()
	if err != nil {
		return nil, err
	}
	steps, err := words.ParseSchedule(text)
	if err != nil {
		return nil, err
	}
	if err := faults.CheckSchedule(steps, load); err != nil {
		return nil, err
	}
	return steps, nil
}

// faultUsage is --fault's help, made from the fault actions' table with
// the brokers' words for targets.
func (l brokerList) faultUsage() string {
	words, _ := l.targetWords() // two brokers at odds are refused when a schedule is read
	return faults.ScheduleHelp(words)
}

// targetWords are the words for fault targets that the brokers declare
// (drivers.TargetWords), for every schedule.
func (l brokerList) targetWords() (faults.Aliases, error) {
	a := faults.Aliases{}
	owner := map[string]string{}
	for _, p := range l {
		tw, ok := p.(drivers.TargetWords)
		if !ok {
			continue
		}
		for w, kind := range tw.TargetWords() {
			if k, ok := a[w]; ok && string(k) != kind {
				return nil, fmt.Errorf("brokers %s and %s give the fault target %q two meanings", owner[w], p.Name(), w)
			}
			if err := a.Add(w, faults.TargetKind(kind)); err != nil {
				return nil, fmt.Errorf("broker %s: %w", p.Name(), err)
			}
			owner[w] = p.Name()
		}
	}
	return a, nil
}
