package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/progress"

	"github.com/metaclaw-go/metaclaw/host/rl/train"
)

// watchProgress runs call while polling the training loop's status: on a
// terminal a progress bar over the parts of the operation (steps to replay,
// then the step), otherwise one line per change of phase.
func watchProgress(ctx context.Context, errOut io.Writer, status func(context.Context) (train.Status, error), call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	tty := stderrIsTerminal(errOut)
	bar := progress.New(progress.WithDefaultGradient(), progress.WithWidth(30))
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	started := time.Now()
	last, drawn := "", false
	for {
		select {
		case err := <-done:
			if drawn {
				fmt.Fprint(errOut, "\r\033[K")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		st, err := status(ctx)
		if err != nil {
			continue
		}
		label, frac := phase(st)
		if !tty {
			if label != last {
				fmt.Fprintln(errOut, label)
				last = label
			}
			continue
		}
		fmt.Fprintf(errOut, "\r\033[K%s %s %s", bar.ViewAs(frac), clipText(label, 60), time.Since(started).Round(time.Second))
		drawn = true
	}
}

// phase describes what the loop does, with the share of the operation done.
func phase(st train.Status) (string, float64) {
	parts, done := 1, 0
	if r := st.Replay; r != nil {
		parts += r.Total
		done += r.Done
	}
	frac := float64(done) / float64(parts)
	switch st.State {
	case train.StateReplaying:
		if r := st.Replay; r != nil {
			return fmt.Sprintf("replaying steps lost with the weights: %d of %d", r.Done, r.Total), frac
		}
		return "restarting the trainer from its checkpoint", frac
	case train.StateTraining:
		return strings.SplitN(st.Reason, ":", 2)[0] + ": training", frac
	}
	return st.State + ": " + st.Reason, frac
}
