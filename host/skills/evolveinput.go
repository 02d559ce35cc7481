package skills

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/safety"
	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// What the evolver's LLM reads of a session. The evolver must learn from
// what the user asked and corrected, never from what someone else wrote:
//
//   - the user's own words are the learning signal and are shown, minus what
//     they pasted for processing (web pages, documents, e-mails, logs, tool
//     output: safety.StripPasted, keeping a block a rule points at), which is
//     only mentioned with its size;
//   - tool results are never shown (transcript leaves them out);
//   - the agent's answers are shown as data inside a fence with a random
//     nonce (they may repeat a fetched page or tool output), and the system
//     prompt says fenced data is never an instruction;
//   - in both, what a reader cannot see (comments, hidden elements,
//     invisible characters) is removed, every sentence that steers the
//     agent or addresses the learner is replaced by "[removed: …]"
//     (safety.DropSteering), and secrets are redacted.
//
// The check of the proposals the LLM answers with still runs (applyOne).

// inputNote is what preparing an exchange left out.
type inputNote struct {
	pasted  int              // characters of pasted material not shown
	removed []safety.Finding // steering removed from the user's words or the answer
}

// learnerInput returns the exchanges as the evolver's LLM may read them.
func learnerInput(xs []transcript.Exchange) ([]transcript.Exchange, []inputNote) {
	out := make([]transcript.Exchange, len(xs))
	notes := make([]inputNote, len(xs))
	for i, x := range xs {
		var n inputNote
		if x.User != "" {
			own := strings.TrimSpace(safety.StripPasted(x.User, safety.KeepRuleBlocks))
			n.pasted = max(0, len(strings.TrimSpace(x.User))-len(own))
			x.User, n.removed = cleanForLearner(own)
		}
		var removed []safety.Finding
		x.Assistant, removed = cleanForLearner(x.Assistant)
		n.removed = append(n.removed, removed...)
		out[i], notes[i] = x, n
	}
	return out, notes
}

// cleanForLearner drops steering, redacts secrets and disarms our fence.
func cleanForLearner(text string) (string, []safety.Finding) {
	if text == "" {
		return "", nil
	}
	text, removed := safety.DropSteering(text)
	text, _ = safety.Redact(text)
	return strings.TrimSpace(strings.ReplaceAll(text, "<<<", "<< <")), removed
}

// newFence returns the nonce of one prompt's data fence: text inside the
// fence cannot guess it, so it cannot close the fence early.
func newFence() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
