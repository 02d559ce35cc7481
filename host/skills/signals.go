package skills

import (
	"regexp"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// Signals worth learning from in an exchange.
const (
	SignalCorrection = "correction" // the user says the previous answer was wrong or not what they wanted
	SignalFailure    = "failure"    // something failed (an error, an apology, "still broken")
	SignalRepeated   = "repeated"   // the user repeats an instruction given earlier in the session
)

var (
	correctionRe  = regexp.MustCompile(`(?i)^\s*(no\b|nope\b|wrong\b|not (quite|really|that)\b|that'?s (not|wrong|incorrect)|that is (not|wrong|incorrect)|actually\b|instead\b|i (said|told you|asked)|stop\b|don'?t\b|do not\b|please don'?t\b|why did you\b|you (forgot|missed|ignored|didn'?t)\b|again\b)|(?i)\b(not what i (asked|wanted|meant)|i already (said|told you)|as i said|like i said|try again|that'?s not right|you misunderstood)\b`)
	failureUserRe = regexp.MustCompile(`(?i)\b(still (fails|failing|broken|crashes|crashing|wrong|doesn'?t work|not working)|(doesn'?t|didn'?t|does not|did not) work|not working|error|exception|traceback|failed|crash(ed|es)?|broke)\b`)
	failureBotRe  = regexp.MustCompile(`(?i)\b(i apologi[sz]e|sorry,? (i|that|my)|my mistake|i was wrong|i made an error|unable to|i can'?t|failed to|did not work|that didn'?t work)\b`)
)

// annotated is an exchange with the signals found in it.
type annotated struct {
	transcript.Exchange
	Signals []string
}

// annotate marks corrections, failures and repeated instructions.
func annotate(xs []transcript.Exchange) []annotated {
	out := make([]annotated, len(xs))
	var earlier []map[string]int
	for i, x := range xs {
		out[i].Exchange = x
		var sig []string
		if x.User != "" && i > 0 && correctionRe.MatchString(x.User) {
			sig = append(sig, SignalCorrection)
		}
		if (x.User != "" && failureUserRe.MatchString(x.User) && i > 0) || failureBotRe.MatchString(x.Assistant) {
			sig = append(sig, SignalFailure)
		}
		if x.User != "" {
			tc := termCounts(x.User)
			if len(tc) >= 3 {
				for _, e := range earlier {
					if jaccard(tc, e) >= 0.6 {
						sig = append(sig, SignalRepeated)
						break
					}
				}
				earlier = append(earlier, tc)
			}
		}
		out[i].Signals = sig
	}
	return out
}

func hasSignals(xs []annotated) bool {
	for _, x := range xs {
		if len(x.Signals) > 0 {
			return true
		}
	}
	return false
}

func signalList(s []string) string { return strings.Join(s, ", ") }
