// Package judge is the reward model's Go face: one assistant turn in, a
// verdict (+1 helpful, −1 unhelpful, 0 unclear) with its votes out. The PRM
// client over an OpenAI-compatible endpoint and Judge sub-plugins
// (host/subplugin) implement it.
package judge

import "context"

// Request is one turn to score.
type Request struct {
	// Instruction is the user's last message, Response the assistant's
	// answer, NextState the user's follow-up when there is one.
	Instruction, Response, NextState string
	// Votes wanted; 0 = the judge's default (rl.prm_m).
	Votes     int
	SessionID string
	Turn      int64
}

// Verdict is a judge's decision.
type Verdict struct {
	// Score is −1, 0 or +1 (the majority of Votes; ties and failures are 0).
	Score float64
	// Votes: "1", "-1", "0" or "fail", one per vote.
	Votes []string
	// Text is the judge's reasoning, shown in the UI.
	Text string
}

// Judge scores turns. Implementations are safe for concurrent use.
type Judge interface {
	Name() string
	Score(ctx context.Context, req Request) (*Verdict, error)
}

// Majority is the verdict of votes: the most frequent of 1, −1 and 0 that
// strictly beats the others; a tie, or no valid vote, is 0.
func Majority(votes []string) float64 {
	n := map[string]int{}
	for _, v := range votes {
		n[v]++
	}
	pos, neg, zero := n["1"], n["-1"], n["0"]
	switch {
	case pos > neg && pos > zero:
		return 1
	case neg > pos && neg > zero:
		return -1
	}
	return 0
}
