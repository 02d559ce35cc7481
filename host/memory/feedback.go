package memory

import (
	"strings"
	"time"
)

// Corrective feedback is a first-class source of rules. The user says what
// was wrong with an answer ("The output is missing the top-level
// last_updated field", "the file name does not start with the date", "You
// forgot last_updated again: it goes at the top level of every JSON we
// publish"); the rule inside is kept as a general rule ("Every output must
// include the top-level last_updated field"), not as a statement about one
// answer. What is only true of the task at hand ("v1.2 should be
// 2026-03-03T11:00:00+08:00") becomes a short-lived episode, and fragments
// and reminders that say nothing by themselves are dropped.

// feedbackCue marks a message that corrects an answer.
var feedbackCue = mustGuard(`(?i)\b(?:wrong|incorrect|not quite|not right|not correct|still (?:wrong|missing|not)|(?:has|have|with) (?:some |several |a few |two |three )?(?:issues|problems|errors|mistakes)|is missing|are missing|you forgot|you missed|you left out|(?:doesn't|does not|didn't|did not) follow|that's not|that is not|mistake)\b|不对|错了|漏了|忘了`)

// np is a short noun phrase (identifiers and file names included).
const np = `((?:[\p{L}\p{N}_\-./'’]+\s+){0,4}?[\p{L}\p{N}_\-./'’]+)`

var (
	defMissing = mustGuard(`(?i)^(?:(?:and|but|also|plus)\s+)?(?:the|this|your|its|their)\s+` + np +
		`\s+(?:is|are)\s+(?:still\s+|also\s+)?(?:missing|lacking|without)\s+(.+)`)
	defLacks = mustGuard(`(?i)^(?:(?:and|but|also|plus)\s+)?(?:the|this|your|its|their)\s+` + np +
		`\s+(?:still\s+|also\s+)?(?:lacks|lack|has no|have no|doesn't have|does not have|don't have|do not have|doesn't include|does not include|don't include|do not include|omits|omit|leaves out|leave out)\s+(.+)`)
	defVerb = mustGuard(`(?i)^(?:(?:and|but|also|plus)\s+)?(?:the|this|your|its|their)\s+` + np +
		`\s+(?:still\s+)?(?:doesn't|does not|don't|do not|didn't|did not)\s+(start|begin|end|follow|use|match|carry|keep|list|show|mention|quote|cite|sort|use)\s+(.+)`)
	defForgot      = mustGuard(`(?i)^(?:you\s+)?(?:forgot|missed|left out|omitted|dropped)\s+(?:to\s+(?:add|include|set|put|use|mention)\s+)?(.+?)(?:\s+again)?(?:\s*[:;—–]\s*|\s+-\s+)(.+)$|^(?:you\s+)?(?:forgot|missed|left out|omitted|dropped)\s+(?:to\s+(?:add|include|set|put|use|mention)\s+)?(.+?)(?:\s+again)?$`)
	leadingPronoun = mustGuard(`(?i)^(?:it|they|this|that|these|those)\s+`)
)

// defectRule rewrites a statement of what an answer lacks as the rule it
// implies. strict (an item of a list of issues, or a message that corrects
// an answer) also reads "X does not <verb> Y" as "X must <verb> Y".
func defectRule(body string, strict bool) (string, bool) {
	b := strings.TrimRight(strings.TrimSpace(body), ".!;。")
	if m := defMissing.FindStringSubmatch(b); m != nil && len(Terms(m[2])) > 0 {
		return generalNP(m[1]) + " must include " + m[2], true
	}
	if m := defLacks.FindStringSubmatch(b); m != nil && len(Terms(m[2])) > 0 {
		return generalNP(m[1]) + " must include " + m[2], true
	}
	if strict {
		if m := defVerb.FindStringSubmatch(b); m != nil && len(Terms(m[3])) > 0 {
			return generalNP(m[1]) + " must " + strings.ToLower(m[2]) + " " + m[3], true
		}
	}
	if m := defForgot.FindStringSubmatch(b); m != nil {
		what, rest := m[1], m[2]
		if what == "" {
			what = m[3]
		}
		what = strings.TrimSpace(what)
		if len(Terms(what)) == 0 || pronouns[strings.ToLower(what)] {
			return "", false
		}
		if rest = strings.TrimSpace(rest); rest != "" && leadingPronoun.MatchString(rest) {
			// "You forgot X again: it goes …" → "X goes …"
			return what + " " + leadingPronoun.ReplaceAllString(rest, ""), true
		}
		return "Do not forget " + what, true
	}
	return "", false
}

// singularOnly are things one has one of: "the spec requires …" stays "the spec".
var singularOnly = setOf(`spec specification standard policy guide styleguide contract client customer team company project repo repository codebase api server database cluster user boss manager`)

// generalNP turns "the report" / "this output" into "Every report" / "Every
// output", and "the timestamps" into "All timestamps".
func generalNP(phrase string) string {
	phrase = strings.TrimSpace(phrase)
	words := strings.Fields(phrase)
	if len(words) == 0 {
		return phrase
	}
	last := strings.ToLower(words[len(words)-1])
	switch {
	case singularOnly[last]:
		return "The " + phrase
	case plural(last):
		return "All " + phrase
	}
	return "Every " + phrase
}

func plural(w string) bool {
	w = strings.ToLower(w)
	return len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is")
}

var (
	quantified   = mustGuard(`(?i)^(?:please\s+)?(?:always|never|don't|do not|make sure|every|all|each|any|no|from now on|going forward|in future|in the future)\b|\b(?:every|all|each|any)\s+(?:of\s+)?(?:our\s+|the\s+)?[\p{L}_\-]+`)
	subjectVerb  = mustGuard(`(?i)^(?:(?:and|but|also)\s+)?(?:(the|our|your|this|that|my)\s+)?((?:[\p{L}\p{N}_\-./'’]+\s+){0,4}?[\p{L}\p{N}_\-./'’]+)\s+(?:must|should|shall|need|needs|require|requires|has to|have to|are|is|can|cannot|may|will|go|goes)\b`)
	alwaysNever  = mustGuard(`(?i)\b(?:always|never|everything|every one|in every|in all)\b`)
	notRuleQuant = mustGuard(`(?i)\b(?:every|each|any)\s+(?:time|day|morning|week|now and then)\b|\ball\s+(?:the\s+)?(?:time|day|week)\b`)
)

// isGeneral reports whether a statement is about a kind of thing (all
// timestamps, reports, "every JSON we publish") or is an imperative, as
// opposed to one thing of the task at hand (the file name, v1.2).
func isGeneral(body string) bool {
	b := strings.TrimSpace(body)
	if (quantified.MatchString(b) || alwaysNever.MatchString(b)) && !notRuleQuant.MatchString(b) {
		return true
	}
	if m := subjectVerb.FindStringSubmatch(b); m != nil {
		words := strings.Fields(m[2])
		return plural(words[len(words)-1]) && !strings.EqualFold(m[1], "this") && !strings.EqualFold(m[1], "that")
	}
	return false
}

// instanceValue: a value of one task (a date, a timestamp, a version, a
// ticket id, a dated file name), not of a rule.
var instanceValue = mustGuard(`\b(?:19|20)\d{2}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?|(?:^|\D)(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:\D|$)|\bv\d+(?:\.\d+)+\b|\b[A-Z][A-Z0-9]+-\d+\b|#\d{3,}\b`)

// instanceTTL is how long a task-instance statement lives.
const instanceTTL = 7 * 24 * time.Hour

// asInstance makes a statement about one task's values (not a general rule,
// not a personal or project fact) a short-lived episode that never outranks
// a standing rule.
func asInstance(c Candidate, body string) Candidate {
	if c.Type != Semantic && c.Type != Preference || strings.HasPrefix(c.Subject, "fact:my ") || c.Subject == "fact:name" {
		return c
	}
	if !instanceValue.MatchString(body) || isGeneral(body) {
		return c
	}
	c.Type, c.Subject, c.Value = Episodic, "", ""
	c.TTL = instanceTTL
	c.Importance = min(c.Importance, 0.35)
	c.Correction = false
	c.Tags = appendTag(removeTag(c.Tags, "rule"), "instance")
	return c
}

func removeTag(tags []string, t string) []string {
	out := tags[:0:0]
	for _, x := range tags {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

var (
	// danglingEnd: a statement cut short ("The top-level last_updated field to.").
	danglingEnd = mustGuard(`(?i)(?:^|\s)(?:the|a|an|and|or|but|than|as|is|are|be|should|must|was|were|its|their|our|your|my)[.!:]?$`)
	// danglingPrep: a short statement ending on a preposition ("… field to.");
	// a long one may end so naturally ("the tools we rely on").
	danglingPrep = mustGuard(`(?i)(?:^|\s)(?:to|for|of|with|from|by|in|on|at|into|onto)[.!:]?$`)
	// orphanPossessive: a possessive with no noun ("The assistant's should be the 4th.").
	orphanPossessive = mustGuard(`(?i)['’]s\s+(?:should|must|is|are|was|were|be|to|of|will|can|has|have|and|or)\b`)
	// pronounObject: a rule about "this"/"that"/"it" that names nothing
	// ("Keep this in mind as you continue with the next task.").
	pronounObject = mustGuard(`(?i)^(?:please\s+)?(?:the assistant should\s+)?(?:keep|bear|remember|note|do|don't|do not|never|always|fix|change|repeat|redo|avoid|make sure to|make sure you|stop)\s+(?:doing\s+|do\s+)?(?:this|that|it|these|those)(?:\s+(?:in mind|again|anymore|any more|for (?:later|the future|next time)|from now on|going forward))?(?:[\s,.!]*$|[\s,]+(?:as|when|while|for|before|after|from now on|going forward|next time|in the future)\b)`)
)

// unresolvedObject: a rule about "those"/"it" in the user's own words
// ("we do not answer those ourselves").
var unresolvedObject = mustGuard(`(?i)\b(?:do not|don't|never|always|not|must)\s+[a-z]+\s+(?:those|these|them|that|this|it)(?:\s+(?:ourselves|myself|yourself|ourself|again|anymore|here|now|either|too))?[\s.!]*$`)

// unresolved reports a statement, in the user's words, about something it
// does not name ("keep this in mind", "we do not answer those ourselves").
func unresolved(body string) bool {
	b := strings.TrimSpace(body)
	return pronounObject.MatchString(b) || unresolvedObject.MatchString(b)
}

// fragment reports content that cannot stand alone as a memory.
func fragment(content string) bool {
	line, _ := splitContent(content)
	line = strings.TrimSpace(line)
	return danglingEnd.MatchString(line) || orphanPossessive.MatchString(line) || pronounObject.MatchString(line) || unresolvedObject.MatchString(line) ||
		danglingPrep.MatchString(line) && len(strings.Fields(line)) < 8
}

// ruleGeneral keeps, from feedback, a declarative statement about every
// thing of a kind ("last_updated goes at the top level of every JSON we
// publish") as a rule.
func ruleGeneral(s string) (Candidate, bool) {
	body := strings.TrimRight(strings.TrimSpace(s), ".!;。")
	if len(body) < 8 || strings.HasSuffix(body, "?") || !quantified.MatchString(body) || notRuleQuant.MatchString(body) || len(Terms(body)) < 3 {
		return Candidate{}, false
	}
	c := Candidate{Type: Preference, Content: capitalize(rewrite(body)), Importance: 0.8, Confidence: 0.7, Tags: []string{"rule", "feedback"}}
	if k := normKey(body); k != "" {
		c.Subject, c.Value = "rule:"+k, "+"
	}
	return c, true
}

// ruleAttached keeps an instruction that points at its attached block
// ("Use this format:", "Reports should look like this:").
func ruleAttached(s string) (Candidate, bool) {
	body := strings.TrimRight(strings.TrimSpace(s), ":：")
	if !pointsAhead.MatchString(body) || strings.HasSuffix(body, "?") || len(Terms(body)) < 2 {
		return Candidate{}, false
	}
	c := Candidate{Type: Preference, Content: capitalize(rewrite(body)), Importance: 0.8, Confidence: 0.7, Tags: []string{"rule"}}
	if k := normKey(body); k != "" {
		c.Subject, c.Value = "rule:"+k, "+"
	}
	return c, true
}

var blockKey = mustGuard(`(?m)^\s*(?:[-*#]+\s*)?([A-Za-z][A-Za-z0-9_\-]{1,40})\s*:`)

// blockKeys are the key names of an attached block ("Owner:", "Data-Sources:").
func blockKeys(block string) []string {
	var out []string
	for _, m := range blockKey.FindAllStringSubmatch(block, 12) {
		out = append(out, m[1])
	}
	return out
}

// attachBlock appends the block to a statement's content.
func attachBlock(content, block string) string {
	line := strings.TrimRight(strings.TrimSpace(content), ".:：。")
	return line + ":\n" + block
}

var (
	// imperativeVerbs: instructions about how things are done ("use …",
	// "say …"), not requests for work ("write …", "add …").
	imperativeVerbs = setOf(`use say put link include keep name mark set start end open close sign address call format number avoid
escalate route assign cite quote spell capitalise capitalize bold attach mention refer reply respond answer follow tag label sort round
lead begin finish cap limit mask redact prefer stick`)
	// forThisOne: an instruction for the answer at hand only.
	forThisOne = mustGuard(`(?i)\b(?:just|only) for (?:this|that|these|those)\b|\bfor this one\b|\bthis time\b|\bfor now\b|\bin this (?:one|case|draft|version|reply|answer)\b|\bhere\b`)
)

// ruleImperative keeps, from feedback, an instruction in the imperative
// ("Use the {{ticket.id}} placeholder.") as a rule, unless it is about the
// answer at hand ("add that just for this one").
func ruleImperative(s string) (Candidate, bool) {
	body := strings.TrimRight(strings.TrimSpace(s), ".!;。")
	body = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(body, "Please "), "please "))
	w := strings.Fields(body)
	if len(w) < 3 || !imperativeVerbs[strings.ToLower(w[0])] || pronouns[strings.ToLower(w[1])] || strings.HasSuffix(body, "?") ||
		forThisOne.MatchString(body) || len(Terms(body)) < 2 {
		return Candidate{}, false
	}
	c := Candidate{Type: Preference, Content: capitalize(rewrite(body)), Importance: 0.75, Confidence: 0.65, Tags: []string{"rule", "feedback"}}
	if k := normKey(body); k != "" {
		c.Subject, c.Value = "rule:"+k, "+"
	}
	return c, true
}
