package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/train"
)

func TestProgressPhase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		st    train.Status
		label string
		frac  float64
	}{
		{"replaying", train.Status{State: train.StateReplaying, Replay: &train.Progress{Done: 1, Total: 3}},
			"replaying steps lost with the weights: 1 of 3", 0.25},
		{"restarting", train.Status{State: train.StateReplaying}, "restarting the trainer from its checkpoint", 0},
		{"training", train.Status{State: train.StateTraining, Reason: "step 4: forward_backward on 16 samples"}, "step 4: training", 0},
		{"after a replay", train.Status{State: train.StateTraining, Reason: "step 4", Replay: &train.Progress{Done: 2, Total: 2}}, "step 4: training", 2.0 / 3},
		{"other", train.Status{State: train.StateWaitingBatch, Reason: "1 of 4 scored"}, "waiting_batch: 1 of 4 scored", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, frac := phase(tc.st)
			if label != tc.label || frac != tc.frac {
				t.Fatalf("phase = %q %.3f, want %q %.3f", label, frac, tc.label, tc.frac)
			}
		})
	}
}

// TestWatchProgressPlainLines: off a terminal each change of phase is one
// line, repeated statuses print nothing, and the call's error is returned.
func TestWatchProgressPlainLines(t *testing.T) {
	seq := []train.Status{
		{State: train.StateReplaying, Replay: &train.Progress{Done: 0, Total: 2}},
		{State: train.StateReplaying, Replay: &train.Progress{Done: 0, Total: 2}},
		{State: train.StateReplaying, Replay: &train.Progress{Done: 1, Total: 2}},
		{State: train.StateTraining, Reason: "step 3"},
	}
	var mu sync.Mutex
	n := 0
	finish := make(chan struct{})
	status := func(context.Context) (train.Status, error) {
		mu.Lock()
		defer mu.Unlock()
		if n >= len(seq) {
			select {
			case <-finish:
			default:
				close(finish)
			}
			return seq[len(seq)-1], nil
		}
		n++
		return seq[n-1], nil
	}
	var out bytes.Buffer
	want := errors.New("the host went away")
	err := watchProgress(context.Background(), &out, status, func() error { <-finish; return want })
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want the call's", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != "replaying steps lost with the weights: 0 of 2" || lines[2] != "step 3: training" || strings.Contains(out.String(), "\033") {
		t.Fatalf("plain progress:\n%q", out.String())
	}
}
