package main

import (
	"fmt"
	"io"

	"github.com/metaclaw-go/metaclaw/host/daemon"
)

// printRL adds RL's details to `metaclaw status`: backend and model, the
// sampler in use, samples by state and the mean reward.
func printRL(w io.Writer, rl daemon.RLState) {
	if rl.Backend != "" && rl.Model != "" {
		fmt.Fprintf(w, "            backend %s, model %s\n", rl.Backend, rl.Model)
	}
	if s := rl.Sampler; s != nil {
		where := s.ID
		if s.Path != "" {
			where = s.Path
		}
		fmt.Fprintf(w, "            sampler %s (step %d, since %s)\n", where, s.Step, s.Since.Local().Format("2006-01-02 15:04:05"))
	}
	if v := rl.Serving; v != nil && (v.Served > 0 || v.Fallbacks > 0 || v.Failures > 0) {
		fmt.Fprintf(w, "            main turns: %d answered by the policy, %d sent to llm.*, %d failed\n", v.Served, v.Fallbacks, v.Failures)
	}
	if c := rl.Samples; c != nil {
		mean := "no verdicts yet"
		if c.MeanReward != nil {
			mean = fmt.Sprintf("mean reward %+.2f over %d judged", *c.MeanReward, c.Judged)
			if c.MeanRewardRecent != nil {
				mean += fmt.Sprintf(" (%+.2f recent)", *c.MeanRewardRecent)
			}
		}
		fmt.Fprintf(w, "            samples %d pending (%d awaiting the next turn), %d scored, %d in training, %d trained, %d dropped; %s\n",
			c.Pending, c.AwaitingNextTurn, c.Scored, c.Claimed, c.Trained, c.Dropped, mean)
		if c.Retrying > 0 {
			fmt.Fprintf(w, "            scoring delayed for %d samples: %s\n", c.Retrying, c.LastError)
		}
	}
	if rl.Judge != "" {
		fmt.Fprintf(w, "            judge %s\n", rl.Judge)
	}
	if rl.Teacher != "" {
		fmt.Fprintf(w, "            teacher %s\n", rl.Teacher)
	}
}
