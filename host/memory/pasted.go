package memory

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/safety"
)

// A fenced block right after a rule that points at it ("All reports must
// start with the following header:") is the user's own specification, not
// material pasted for processing: the rule is meaningless without it
// (issue 10). stripPasted keeps such blocks and lets safety.StripPasted
// remove everything else it would. A block kept this way still reaches no
// prompt unchecked: the unit it ends up in passes the injection guard like
// every other (admit), and a block after a request to process something
// ("Summarise the following:") is cut by StripPasted's lead-in rule with the
// rest of the pasted text.

var (
	fencedBlock = regexp.MustCompile("(?s)(```|~~~).*?(```|~~~|$)")
	// ruleLead is a requirement or instruction about how things are done.
	// endsAtThis: "… must end with this signature block:".
	endsAtThis = regexp.MustCompile(`(?i)\b(?:this|these)(?:\s+[\w-]+){0,3}\s*[:：]$`)
	ruleLead   = regexp.MustCompile(`(?i)\b(?:must|should|shall|needs?|required|requires?|has to|have to|always|never|expected|use|start with|begin with|look like)\b`)
)

// Placeholders are private-use characters: no rule of StripPasted matches
// them, and users do not type them.
const blockOpen, blockClose = "\ue000", "\ue001"

func stripPasted(text string) string {
	if !strings.Contains(text, "```") && !strings.Contains(text, "~~~") || strings.Contains(text, blockOpen) {
		return safety.StripPasted(text)
	}
	var kept []string
	var b strings.Builder
	last := 0
	for _, loc := range fencedBlock.FindAllStringIndex(text, -1) {
		before := text[last:loc[0]]
		b.WriteString(before)
		if attachedToRule(b.String()) {
			b.WriteString(blockOpen + strconv.Itoa(len(kept)) + blockClose)
			kept = append(kept, text[loc[0]:loc[1]])
		} else {
			b.WriteString(text[loc[0]:loc[1]])
		}
		last = loc[1]
	}
	b.WriteString(text[last:])
	out := safety.StripPasted(b.String())
	for i, block := range kept {
		out = strings.Replace(out, blockOpen+strconv.Itoa(i)+blockClose, block, 1)
	}
	return out
}

// attachedToRule reports whether the text before a block ends with a line
// that states a rule and points at what follows, ending in a colon.
func attachedToRule(before string) bool {
	lead := strings.TrimRight(before, " \t\r\n")
	if i := strings.LastIndexByte(lead, '\n'); i >= 0 {
		lead = lead[i+1:]
	}
	lead = strings.TrimSpace(lead)
	if !strings.HasSuffix(lead, ":") && !strings.HasSuffix(lead, "：") {
		return false
	}
	return (pointsAhead.MatchString(lead) || endsAtThis.MatchString(lead)) && ruleLead.MatchString(lead)
}
