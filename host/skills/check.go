package skills

import "github.com/metaclaw-go/metaclaw/host/safety"

// Limits on what the evolver may write into a skill.
const (
	MaxProposalBodyChars   = 6000
	MinProposalBodyChars   = 80
	MaxProposalBodyTokens  = 1200
	MinDescriptionChars    = 20
	MaxProposalTags        = 12
	MaxProposalTagChars    = 40
	MaxProposalRationale   = 600
	MaxProposalCategoryLen = 32
)

// Finding is one reason a proposal was rejected.
type Finding = safety.Finding

// CheckText scans text that would be injected into prompts and returns why
// it must not be (nil when it is clean): host/safety's skill rules, shared
// with the memory layer's.
func CheckText(text string) []Finding { return safety.CheckSkill(text) }

// Check runs CheckText over everything of a skill that reaches a prompt.
func Check(s *Skill) []Finding {
	return CheckText(skillText(s.Name, s.Description, s.Tags, s.Body))
}
