package safety

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text a user quotes or pastes for the agent to work on ("translate this
// page: …", a fenced block, a quoted e-mail) was written by someone else:
// it may carry instructions aimed at the agent, and it never states the
// user's own preferences or facts. StripPasted removes it, so learning only
// ever reads what the user said in their own words.

// processVerb names a request to work on some text.
const processVerb = `(?:translate|summari[sz]e|give\s+me\s+(?:a|the)\s+(?:summary|translation|tl;?dr)\s+of|tl;?dr(?:\s+of)?|paraphrase|rephrase|reword|rewrite|proofread|` +
	`(?:fix|correct|check)\s+(?:the\s+)?(?:grammar|spelling|typos)(?:\s+(?:of|in))?|edit|review|analy[sz]e|explain|classify|extract\s+\w+\s+from|parse|format|convert|` +
	`reply\s+to|respond\s+to|answer|critique|simplify|shorten|condense|transcribe|polish|improve|clean\s+up|read|look\s+at|what\s+does)`

// textNoun is the kind of material a request points at.
const textNoun = `(?:page|web\s*page|site|text|article|e-?mail|mail|message|document|doc|paragraph|post|passage|` +
	`content|file|snippet|excerpt|transcript|thread|comment|review|letter|note|chat|conversation|code|log|output|tweet|reply|` +
	`essay|report|story|lyrics|poem|html|markdown|pdf|readme|draft|page\s+content)`

// politeness that may come before an imperative request.
const politeness = `^(?:\s*(?:please|pls|kindly|can\s+you|could\s+you|would\s+you|will\s+you|help\s+me|i\s+need\s+you\s+to|i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|now|ok|okay|hey|hi|also|and|then)[\s,]+){0,3}`

var (
	// A request whose material follows it, ended by a colon, a question
	// mark or a line break: "Translate this page: …", "Can you summarise the
	// following?\n…"; or, when it points forward, by a full stop: "Summarise this. …".
	leadIn    = regexp.MustCompile(`(?i)` + politeness + processVerb + `\b[^\n:?]{0,30}?\b(?:this|these|that|it|the\s+following|following|below|(?:the|this|that|these|my|a|an)\s+(?:\w+\s+){0,2}?` + textNoun + `)\b[^\n:?]{0,60}?(?::|\?|\n)`)
	leadInDot = regexp.MustCompile(`(?i)` + politeness + processVerb + `\b[^\n:?.]{0,30}?\b(?:this|these|the\s+following|following|below)\b[^\n:?.]{0,40}?\.\s`)
	// "Here is the page:", "Below is the text:", or a label line "Page content:".
	hereIs = regexp.MustCompile(`(?i)(?:^|\n)[^\n]{0,60}?\b(?:here\s+is|here's|here\s+are|below\s+is|attached\s+is|pasted\s+below\s+is)\s+(?:(?:the|a|an|my|this|some|their|his|her)\s+)?(?:\w+\s+){0,2}?` + textNoun + `s?\b[^\n:]{0,40}:|(?:^|\n)[ \t]*(?:page|web\s*page|text|article|e-?mail|document|content|message|transcript|input|source|original)(?:\s+(?:content|text|body))?[ \t]*:`)
	// A closing request that refers back to what came before: "… Summarise the above."
	trailing = regexp.MustCompile(`(?i)(?:^|[\n.!?])[^\n.!?]{0,40}?\b` + processVerb + `\b[^\n.!?]{0,20}?\b(?:this|that|it|these|those|the\s+above|above|(?:the|this|that)\s+(?:\w+\s+){0,2}?` + textNoun + `(?:\s+above)?)\b[^\n.!?]{0,60}[.!?]?\s*$`)
	// Chinese: 翻译/总结/… + 以下/下面/这段…, or 以下是…：
	zhLeadIn = regexp.MustCompile(`^[^\n]{0,40}?(?:翻译|翻譯|总结|總結|概括|摘要|润色|潤色|改写|改寫|解释|解釋|分析)[^\n]{0,20}?(?:以下|下面|这段|這段|这篇|這篇|这个|這個|如下)[^\n]{0,20}?(?:：|:|\n|$)|^[^\n]{0,20}?(?:以下是|下面是)[^\n]{0,20}?(?:：|:)`)

	fenceRe   = regexp.MustCompile("(?s)(```|~~~).*?(```|~~~|$)")
	tripleQ   = regexp.MustCompile(`(?s)"""(.*?)("""|$)|'''(.*?)('''|$)`)
	tagBlock  = regexp.MustCompile(`(?is)<(document|page|webpage|article|text|email|mail|content|input|quote|blockquote|context|source|html|body|message|pasted)(\s[^>]*)?>.*?(</(document|page|webpage|article|text|email|mail|content|input|quote|blockquote|context|source|html|body|message|pasted)\s*>|$)`)
	quoteLine = regexp.MustCompile(`(?m)^[ \t]*>.*$`)
	// A long quotation in any common quote style (short ones are names or words the user is talking about).
	longQuote = regexp.MustCompile(`"[^"\n]{40,}"|“[^”]{40,}”|«[^»]{40,}»|„[^“”]{40,}[“”]|「[^」]{20,}」|『[^』]{20,}』`)
)

// StripOption changes what StripPasted keeps.
type StripOption func(*stripConfig)

type stripConfig struct {
	keepRuleBlocks bool
}

// KeepRuleBlocks keeps a fenced block right after a line that states a rule
// and points at it ("All reports must start with the following header:"):
// that block is the user's own specification, not material pasted for
// processing, and the rule is meaningless without it. A kept block is
// treated by every later pass exactly as an opaque word of the user's: the
// quote, tag and quotation passes do not look inside it, and a lead-in
// before it ("Summarise the following:") still cuts it with the rest of the
// pasted text. Whatever keeps it must still check it (it can carry an
// instruction like any other text the user wrote).
func KeepRuleBlocks(c *stripConfig) { c.keepRuleBlocks = true }

// StripPasted returns text without the material the user quoted or pasted
// for processing: fenced and triple-quoted blocks, "> " quotes, XML-like
// document tags, long quotations, everything after a request such as
// "translate this page:" or "here is the article:", and everything before
// a closing request such as "summarise the above". What remains is the
// user's own words (possibly nothing).
func StripPasted(text string, opts ...StripOption) string {
	if text == "" {
		return text
	}
	var c stripConfig
	for _, o := range opts {
		o(&c)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var kept []string
	if c.keepRuleBlocks {
		text, kept = holdRuleBlocks(text)
	}
	out := stripPasted(text)
	for i, block := range kept {
		out = strings.Replace(out, blockOpen+strconv.Itoa(i)+blockClose, block, 1)
	}
	return out
}

func stripPasted(text string) string {
	if strings.Contains(text, "```") || strings.Contains(text, "~~~") {
		text = fenceRe.ReplaceAllString(text, "\n")
	}
	if strings.Contains(text, `"""`) || strings.Contains(text, `'''`) {
		text = tripleQ.ReplaceAllString(text, "\n")
	}
	if strings.Contains(text, "<") {
		text = tagBlock.ReplaceAllString(text, "\n")
	}
	if strings.Contains(text, ">") {
		text = quoteLine.ReplaceAllString(text, "")
	}
	if strings.ContainsAny(text, `"“«„「『`) {
		text = longQuote.ReplaceAllString(text, `""`)
	}
	// The request passes below cost ~50 µs a message in Go's regexp; most
	// messages hold none of the words they need (mayRequest).
	ascii := isASCII(text)
	verb := !ascii || mayRequest(text)
	trimmed := strings.TrimLeft(text, " \t\r\n")
	for _, re := range []*regexp.Regexp{leadIn, leadInDot, zhLeadIn} {
		if re == zhLeadIn && ascii || re != zhLeadIn && !verb {
			continue
		}
		if loc := re.FindStringIndex(trimmed); loc != nil {
			return strings.TrimSpace(trimmed[:loc[1]])
		}
	}
	if strings.IndexByte(text, ':') < 0 {
		// hereIs ends at an ASCII colon.
	} else if loc := hereIs.FindStringIndex(text); loc != nil {
		return strings.TrimSpace(text[:loc[1]])
	}
	if !verb {
		return text
	}
	if loc := trailing.FindStringIndex(text); loc != nil && substantial(text[:loc[0]]) {
		// The closing request stays; what it refers to goes.
		return strings.TrimSpace(strings.TrimLeft(text[loc[0]:], ".!?\n"))
	}
	return text
}

// Kept blocks stand in the text as placeholders made of private-use
// characters while the passes run: no rule matches them, and users do not
// type them (text that already holds one keeps no block).
const blockOpen, blockClose = "\ue000", "\ue001"

var (
	// ruleLead is a requirement or instruction about how things are done.
	ruleLead = regexp.MustCompile(`(?i)\b(?:must|should|shall|needs?|required|requires?|has to|have to|always|never|expected|use|start with|begin with|look like)\b`)
	// PointsAhead: a statement that refers to what follows it.
	PointsAhead = regexp.MustCompile(`(?i)\b(?:following|below|as follows|like this|like so|this (?:format|form|template|header|layout|structure|shape|pattern|schema|skeleton)|these (?:fields|lines|sections|headings|columns|keys))\b|以下|如下|下面`)
	// endsAtThis: "… must end with this signature block:".
	endsAtThis = regexp.MustCompile(`(?i)\b(?:this|these)(?:\s+[\w-]+){0,3}\s*[:：]$`)
)

// holdRuleBlocks replaces each fenced block attached to a rule by a
// numbered placeholder and returns the blocks.
func holdRuleBlocks(text string) (string, []string) {
	if !strings.Contains(text, "```") && !strings.Contains(text, "~~~") || strings.Contains(text, blockOpen) {
		return text, nil
	}
	var kept []string
	var b strings.Builder
	last := 0
	for _, loc := range fenceRe.FindAllStringIndex(text, -1) {
		b.WriteString(text[last:loc[0]])
		if attachedToRule(b.String()) {
			b.WriteString(blockOpen + strconv.Itoa(len(kept)) + blockClose)
			kept = append(kept, text[loc[0]:loc[1]])
		} else {
			b.WriteString(text[loc[0]:loc[1]])
		}
		last = loc[1]
	}
	b.WriteString(text[last:])
	return b.String(), kept
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
	return (PointsAhead.MatchString(lead) || endsAtThis.MatchString(lead)) && ruleLead.MatchString(lead)
}

// substantial tells pasted material (several lines, or a long passage)
// from a sentence or two of the user's own before a closing request.
func substantial(s string) bool {
	s = strings.TrimSpace(s)
	return strings.Count(s, "\n") >= 2 || utf8.RuneCountInString(s) >= 200
}

// requestWords are literals of which every processVerb alternative holds
// at least one (lower case): an ASCII text with none of them matches no
// request pattern (leadIn, leadInDot, trailing). Non-ASCII text is always
// matched in full ((?i) folds letters such as U+212A to ASCII ones).
var requestWords = []string{"translat", "summari", "give", "tldr", "tl;dr", "paraphrase", "rephrase", "reword", "rewrite", "proofread",
	"grammar", "spelling", "typos", "edit", "review", "analy", "explain", "classify", "extract", "parse", "format", "convert",
	"reply", "respond", "answer", "critique", "simplify", "shorten", "condense", "transcribe", "polish", "improve", "clean",
	"read", "look", "what"}

// mayRequest reports whether an ASCII text holds a word a request to
// process text needs.
func mayRequest(text string) bool {
	lower := strings.ToLower(text)
	for _, w := range requestWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
