package memory

import "github.com/metaclaw-go/metaclaw/host/safety"

// stripPasted removes what the user pasted for processing before extraction
// and keeps a fenced block right after a rule that points at it ("All
// reports must start with the following header:"): that block is the
// user's own specification, and the rule is meaningless without it (issue
// 10; safety.KeepRuleBlocks). A block kept this way still reaches no prompt
// unchecked: the unit it ends up in passes the injection guard like every
// other (admit).
func stripPasted(text string) string {
	return safety.StripPasted(text, safety.KeepRuleBlocks)
}
